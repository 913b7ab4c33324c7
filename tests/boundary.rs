//! The boundary's Rust modules import one way: from `runtime.rs`, the root of an
//! instance's life, downwards, with no cycle, as docs/ARCHITECTURE.md draws them.
//!
//! Read from the sources: every `super::<module>` a module of `src/interop/` names
//! (in a `use` or a path) is an edge, and the graph of those edges must have no
//! cycle; `runtime.rs` is imported by none, and `js.rs` and `timer.rs` (bindings)
//! import none. A module added to the directory joins the check by its file alone.
#![cfg(not(target_arch = "wasm32"))]
// A test's helpers: a missing source or a bad slice is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Each module of `src/interop/` with the modules of that directory it names.
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/interop");
    let sources: BTreeMap<String, String> = std::fs::read_dir(&dir)
        .expect("src/interop is readable")
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        .map(|path| {
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&path).expect("a source file"))
        })
        .collect();
    let modules: BTreeSet<String> = sources.keys().filter(|m| *m != "mod").cloned().collect();
    sources
        .iter()
        .filter(|(module, _)| *module != "mod")
        .map(|(module, text)| {
            let named = names_after(text, "super::")
                .into_iter()
                .chain(names_after(text, "crate::interop::"))
                .chain(grouped(text))
                .filter(|name| modules.contains(name) && name != module)
                .collect();
            (module.clone(), named)
        })
        .collect()
}

/// The identifiers right after each `prefix` in `text` (outside `//` comments).
fn names_after(text: &str, prefix: &str) -> Vec<String> {
    code_lines(text)
        .flat_map(|line| {
            line.match_indices(prefix)
                .map(|(at, _)| ident(&line[at + prefix.len()..]))
                .collect::<Vec<_>>()
        })
        .filter(|name| !name.is_empty())
        .collect()
}

/// The modules named in a grouped import, `use super::{a, b::{c, d}, e};`: the
/// first name of each item at the group's own level, over any lines.
fn grouped(text: &str) -> Vec<String> {
    let code: String = code_lines(text).collect::<Vec<_>>().join("\n");
    let mut names = Vec::new();
    for (at, found) in code.match_indices("super::{") {
        let mut depth = 0;
        let mut item_starts = true;
        for (i, c) in code[at + found.len()..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => break,
                '}' => depth -= 1,
                ',' if depth == 0 => item_starts = true,
                c if item_starts && !c.is_whitespace() => {
                    names.push(ident(&code[at + found.len() + i..]));
                    item_starts = false;
                }
                _ => {}
            }
        }
    }
    names.retain(|name| !name.is_empty());
    names
}

fn code_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .map(|line| line.find("//").map_or(line, |at| &line[..at]))
}

fn ident(text: &str) -> String {
    text.chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

/// A cycle of `graph`, as the modules along it, if there is one.
fn cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        graph: &BTreeMap<String, BTreeSet<String>>,
        node: &str,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut found = path[at..].to_vec();
            found.push(node.to_owned());
            return Some(found);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(found) = visit(graph, next, path, done) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(graph, node, &mut Vec::new(), &mut done))
}

#[test]
fn the_boundary_imports_one_way() {
    let graph = imports();
    assert!(
        graph.len() >= 10,
        "the modules of src/interop were read: {graph:?}"
    );
    assert_eq!(
        cycle(&graph),
        None,
        "an import cycle in src/interop: {graph:?}"
    );
    let importers: Vec<_> = graph
        .iter()
        .filter(|(_, named)| named.contains("runtime"))
        .map(|(module, _)| module)
        .collect();
    assert!(
        importers.is_empty(),
        "runtime.rs is the root, yet imported by {importers:?}"
    );
    for leaf in ["js", "timer"] {
        assert_eq!(
            graph[leaf],
            BTreeSet::new(),
            "{leaf}.rs imports no module of the boundary"
        );
    }
}

#[test]
fn the_reader_sees_every_form_of_import() {
    let text = "use super::js::{a, b};\nuse super::{inbox, inspect::{x, y}, patch};\n// super::plugin in a comment\nlet t = super::timer::now();\nuse crate::interop::de::raw;\nuse super::{\n    settings,\n};";
    let mut named: BTreeSet<String> = names_after(text, "super::").into_iter().collect();
    named.extend(names_after(text, "crate::interop::"));
    named.extend(grouped(text));
    let expected: BTreeSet<String> = ["js", "inbox", "inspect", "patch", "timer", "de", "settings"]
        .map(String::from)
        .into();
    // The comment's `plugin` is not code.
    assert_eq!(named, expected);
    let looped: BTreeMap<String, BTreeSet<String>> = [
        ("a".into(), ["b".into()].into()),
        ("b".into(), ["a".into()].into()),
    ]
    .into();
    assert_eq!(
        cycle(&looped),
        Some(vec!["a".into(), "b".into(), "a".into()])
    );
}
