//! Build step: the `HarnessGuard` provider's manifest without its indentation.
//!
//! `src/provider.json` stays readable; what `include_str!` embeds in the `.wasm`
//! is the same JSON with the whitespace between tokens removed (about 300 bytes
//! of the gzipped `.wasm`). A unit test in `src/provider.rs` checks the two are
//! the same JSON value.

use std::{env, fs, path::PathBuf};

/// `json` with whitespace outside strings removed. The input is the checked-in
/// manifest, so a malformed file is the test's to report, not this step's.
fn minify(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in json.chars() {
        if in_string {
            out.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if !c.is_whitespace() {
            out.push(c);
        }
    }
    out
}

fn main() {
    println!("cargo:rerun-if-changed=src/provider.json");
    let Ok(source) = fs::read_to_string("src/provider.json") else {
        println!("cargo:warning=src/provider.json could not be read");
        std::process::exit(1);
    };
    let Some(out) = env::var_os("OUT_DIR").map(PathBuf::from) else {
        println!("cargo:warning=OUT_DIR is not set");
        std::process::exit(1);
    };
    if let Err(error) = fs::write(out.join("provider.min.json"), minify(&source)) {
        println!("cargo:warning=could not write the minified manifest: {error}");
        std::process::exit(1);
    }
}
