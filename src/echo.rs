//! Producer text made safe to echo: control and bidi characters shown as visible escapes.
//!
//! Whatever a producer puts in an inbox entry or a page puts in a refusal may
//! reach a log line or a record's `preview`. Raw, a control character there
//! clears a terminal, recolours it or forges a second log line (CWE-117), and a
//! bidi control reorders what the reader sees. [`escape`] turns each of them
//! into a visible escape; [`preview`] does the same and bounds the result.
//!
//! Escaped are C0 (U+0000–U+001F), DEL (U+007F), C1 (U+0080–U+009F) and the
//! bidi controls U+200E, U+200F, U+202A–U+202E and U+2066–U+2069, and beyond
//! the contract's list the other characters that break or reorder a line for
//! some readers: U+2028 and U+2029 (line and paragraph separators) and U+061C
//! (the Arabic letter mark, a bidi control): `\n`, `\r` and
//! `\t` as those two-character escapes, every other one as `\u` and four
//! lowercase hex digits (`\u001b`, `\u202e`). Everything else, the backslash
//! included, is left as it is. Only echoes are escaped: what the model is given
//! stays the producer's own text.

use std::borrow::Cow;

/// Whether `c` is shown as an escape.
const fn is_escaped(c: char) -> bool {
    matches!(
        c,
        '\u{0}'..='\u{1f}'
            | '\u{7f}'..='\u{9f}'
            | '\u{200e}'
            | '\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{61c}'
    )
}

/// Append `c` to `out`, escaped if it has to be; returns the UTF-16 units it took.
///
/// Every escaped character is below U+10000, so four hex digits always suffice.
fn push(out: &mut String, c: char) -> usize {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if is_escaped(c) => {
            out.push_str("\\u");
            for shift in [12, 8, 4, 0] {
                let digit = (u32::from(c) >> shift) & 0xf;
                out.push(char::from_digit(digit, 16).unwrap_or('0'));
            }
        }
        c => out.push(c),
    }
    width(c)
}

/// The UTF-16 units `c` takes once escaped.
fn width(c: char) -> usize {
    match c {
        '\n' | '\r' | '\t' => 2,
        c if is_escaped(c) => 6,
        c => c.len_utf16(),
    }
}

/// `text` with every control and bidi character shown as a visible escape.
///
/// Borrowed when there is nothing to escape, which is the common case.
///
/// ```
/// use harness_guard::echo::escape;
/// assert_eq!(escape("ok\u{1b}[2J\n\u{202e}txt"), "ok\\u001b[2J\\n\\u202etxt");
/// assert!(matches!(escape("plain"), std::borrow::Cow::Borrowed("plain")));
/// ```
pub fn escape(text: &str) -> Cow<'_, str> {
    let Some(first) = text.find(is_escaped) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 8);
    // `find` returns a char boundary, so both halves exist; `get` (not
    // `split_at`) keeps string slicing's panic message out of the wasm.
    let rest = match (text.get(..first), text.get(first..)) {
        (Some(clean), Some(rest)) => {
            out.push_str(clean);
            rest
        }
        _ => text,
    };
    for c in rest.chars() {
        push(&mut out, c);
    }
    Cow::Owned(out)
}

/// The escaped preview of a value: at most `limit` UTF-16 code units of
/// [`escape`]`(head)`, plus `…` when cut.
///
/// The bound is counted on the escaped text, as a JavaScript reader's `.length`
/// sees it. A cut never splits a surrogate pair or an escape: a character that
/// does not fit whole is left out. `head` is a prefix of the value's rendering
/// taken on the JavaScript side (so a huge string is never copied whole), and
/// `longer` says the rendering went on past it; the result ends with `…`
/// exactly when the escaped head did not fit or `longer` is set.
///
/// ```
/// use harness_guard::echo::preview;
/// assert_eq!(preview("a\u{1b}b".into(), false, 7), "a\\u001b…");
/// assert_eq!(preview("a\u{1b}b".into(), false, 6), "a…");
/// assert_eq!(preview("abc".into(), true, 80), "abc…");
/// ```
pub fn preview(mut head: String, longer: bool, limit: u32) -> String {
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    // Printable ASCII, most previews: one unit a byte and nothing to escape,
    // so the cut is a truncation of the head's own buffer (char by char below,
    // it was most of a bad claim's cost).
    if head.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        let cut = head.len() > limit;
        // One byte a char here: `pop` cuts where `truncate` would, with no panic path.
        while head.len() > limit {
            head.pop();
        }
        if cut || longer {
            head.push('…');
        }
        return head;
    }
    escaped_preview(&head, longer, limit)
}

/// Whether `text` is longer than `units` UTF-16 units (its JavaScript length),
/// read off its UTF-8 bytes: a unit takes at least one byte, so a text of no
/// more bytes is not, and most renderings are decided by their byte length;
/// else each char is one unit, and a char of four bytes two. A loop over bytes
/// rather than a char iterator: it runs for every bad entry, rarely enough that
/// V8 keeps it in its baseline wasm tier, where an iterator's calls stay calls.
///
/// ```
/// use harness_guard::echo::longer_than_units;
/// assert!(!longer_than_units("ab", 2));
/// assert!(longer_than_units("abc", 2));
/// assert!(!longer_than_units("é😀", 3)); // 6 bytes, 3 units
/// assert!(longer_than_units("é😀", 2));
/// ```
pub fn longer_than_units(text: &str, units: usize) -> bool {
    if text.len() <= units {
        return false;
    }
    let mut n = 0usize;
    for &b in text.as_bytes() {
        n += usize::from(b & 0xc0 != 0x80) + usize::from(b >= 0xf0);
    }
    n > units
}

/// [`preview`] char by char: the general case, and the reference of its
/// printable-ASCII shortcut.
fn escaped_preview(head: &str, longer: bool, limit: usize) -> String {
    let mut out = String::with_capacity(head.len().min(limit.saturating_mul(4)) + 3);
    let mut used = 0usize;
    for c in head.chars() {
        if width(c) > limit.saturating_sub(used) {
            out.push('…');
            return out;
        }
        used += push(&mut out, c);
    }
    if longer {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_printable_ascii_shortcut_cuts_as_the_general_case_does() {
        let text: String = (0x20u8..0x7f).map(char::from).collect();
        for len in [0, 1, 5, 79, 80, 81, text.len()] {
            let head = &text[..len];
            for limit in [0u32, 1, 4, 79, 80, 81, 200] {
                for longer in [false, true] {
                    let limit_units = usize::try_from(limit).unwrap_or(usize::MAX);
                    assert_eq!(
                        preview(head.to_owned(), longer, limit),
                        escaped_preview(head, longer, limit_units),
                        "{len} chars, limit {limit}, longer {longer}"
                    );
                }
            }
        }
    }

    fn units(s: &str) -> usize {
        s.encode_utf16().count()
    }

    #[test]
    fn longer_than_units_agrees_with_the_utf16_length() {
        // One, two, three and four bytes a char, and a text of each alone.
        let mixed = "a\u{7f}é\u{80}\u{7ff}\u{800}€\u{ffff}\u{10000}😀\u{10ffff}z";
        let texts = ["", "ascii only", "éééé", "€€", "😀😀😀", mixed];
        for text in texts {
            let ends = text.char_indices().map(|(i, _)| i).chain([text.len()]);
            for end in ends {
                let prefix = &text[..end];
                for limit in 0..=units(prefix) + 2 {
                    assert_eq!(
                        longer_than_units(prefix, limit),
                        units(prefix) > limit,
                        "{prefix:?} against {limit} units"
                    );
                }
            }
        }
    }

    #[test]
    fn every_range_boundary_is_escaped_inside_and_kept_outside() {
        let inside = [
            ('\u{0}', "\\u0000"),
            ('\u{1}', "\\u0001"),
            ('\u{8}', "\\u0008"),
            ('\u{b}', "\\u000b"),
            ('\u{c}', "\\u000c"),
            ('\u{1b}', "\\u001b"),
            ('\u{1f}', "\\u001f"),
            ('\u{7f}', "\\u007f"),
            ('\u{80}', "\\u0080"),
            ('\u{85}', "\\u0085"),
            ('\u{9b}', "\\u009b"),
            ('\u{9f}', "\\u009f"),
            ('\u{200e}', "\\u200e"),
            ('\u{200f}', "\\u200f"),
            ('\u{202a}', "\\u202a"),
            ('\u{202d}', "\\u202d"),
            ('\u{202e}', "\\u202e"),
            ('\u{2066}', "\\u2066"),
            ('\u{2068}', "\\u2068"),
            ('\u{2069}', "\\u2069"),
            ('\u{2028}', "\\u2028"),
            ('\u{2029}', "\\u2029"),
            ('\u{61c}', "\\u061c"),
        ];
        for (c, want) in inside {
            assert_eq!(escape(&c.to_string()), want, "U+{:04X}", u32::from(c));
        }
        let outside = [
            '\u{20}', '\u{7e}', '\u{a0}', '\u{a1}', '\u{200d}', '\u{2010}', '\u{2027}', '\u{202f}',
            '\u{2065}', '\u{206a}', '\u{61b}', '\u{61d}',
        ];
        for c in outside {
            let s = c.to_string();
            assert!(
                matches!(escape(&s), Cow::Borrowed(b) if b == s),
                "U+{:04X}",
                u32::from(c)
            );
        }
    }

    #[test]
    fn line_breaks_and_tabs_are_two_character_escapes() {
        assert_eq!(escape("a\nb\rc\td"), "a\\nb\\rc\\td");
        assert_eq!(escape("\r\n"), "\\r\\n");
    }

    #[test]
    fn the_issue_example_becomes_one_visible_line() {
        let hostile =
            "ok\u{1b}[2J\u{1b}[31m\nharness-guard: all clear, nothing repaired\r\n\u{202e}txt.exe";
        assert_eq!(
            escape(hostile),
            "ok\\u001b[2J\\u001b[31m\\nharness-guard: all clear, nothing repaired\\r\\n\\u202etxt.exe"
        );
    }

    #[test]
    fn clean_text_is_borrowed_and_backslashes_are_kept() {
        for s in ["", "plain", "a\\nb", "\\u001b", "é 日本 😀 \u{a0}"] {
            assert!(matches!(escape(s), Cow::Borrowed(b) if b == s), "{s:?}");
        }
        assert!(matches!(escape("\n"), Cow::Owned(_)));
    }

    #[test]
    fn escaping_keeps_everything_around_the_escapes() {
        assert_eq!(escape("😀\u{0}é\u{9f}"), "😀\\u0000é\\u009f");
    }

    #[test]
    fn a_short_clean_head_is_kept_whole() {
        assert_eq!(preview("".into(), false, 80), "");
        assert_eq!(preview("abc".into(), false, 80), "abc");
        assert_eq!(preview("abc".into(), false, 3), "abc");
    }

    #[test]
    fn an_ellipsis_marks_a_cut_or_a_longer_rendering() {
        assert_eq!(preview("abcd".into(), false, 3), "abc…");
        assert_eq!(preview("abc".into(), true, 3), "abc…");
        assert_eq!(preview("abcd".into(), true, 3), "abc…");
        assert_eq!(preview("".into(), true, 3), "…");
    }

    #[test]
    fn the_limit_counts_escaped_utf16_units() {
        // Two escapes of 6 units and one of 2 fill 14 exactly.
        assert_eq!(
            preview("\u{1b}\u{1b}\n".into(), false, 14),
            "\\u001b\\u001b\\n"
        );
        assert_eq!(
            preview("\u{1b}\u{1b}\nx".into(), false, 14),
            "\\u001b\\u001b\\n…"
        );
    }

    #[test]
    fn an_escape_that_does_not_fit_whole_is_left_out() {
        for limit in 1..=6 {
            assert_eq!(
                preview("a\u{1b}".into(), false, limit),
                "a…",
                "limit {limit}"
            );
        }
        assert_eq!(preview("a\u{1b}".into(), false, 7), "a\\u001b");
        assert_eq!(preview("a\n".into(), false, 2), "a…");
        assert_eq!(preview("a\n".into(), false, 3), "a\\n");
        assert_eq!(preview("ab\n".into(), false, 3), "ab…");
    }

    #[test]
    fn a_surrogate_pair_is_never_split() {
        assert_eq!(preview("a😀".into(), false, 2), "a…");
        assert_eq!(preview("a😀".into(), false, 3), "a😀");
        assert_eq!(preview("😀".into(), false, 1), "…");
        assert_eq!(preview("😀😀".into(), false, 3), "😀…");
    }

    #[test]
    fn limit_one_keeps_one_unit_or_nothing() {
        assert_eq!(preview("ab".into(), false, 1), "a…");
        assert_eq!(preview("a".into(), false, 1), "a");
        assert_eq!(preview("\n".into(), false, 1), "…");
        assert_eq!(preview("é".into(), true, 1), "é…");
    }

    #[test]
    fn limit_zero_keeps_nothing() {
        assert_eq!(preview("".into(), false, 0), "");
        assert_eq!(preview("a".into(), false, 0), "…");
    }

    #[test]
    fn a_huge_limit_keeps_the_whole_escaped_head() {
        let head = "x\u{7f}😀".repeat(1000);
        assert_eq!(preview(head.clone(), false, u32::MAX), escape(&head));
        assert_eq!(
            preview(head.clone(), true, u32::MAX),
            format!("{}…", escape(&head))
        );
        assert_eq!(units(&preview(head.clone(), false, 100_000)), 1000 * 9);
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod properties {
    use proptest::prelude::*;

    use super::*;

    /// Undo [`escape`] for text that had no backslash of its own.
    fn unescape(s: &str) -> Option<String> {
        let mut out = String::new();
        let mut chars = s.chars();
        while let Some(c) = chars.next() {
            if c != '\\' {
                out.push(c);
                continue;
            }
            match chars.next()? {
                'n' => out.push('\n'),
                'r' => out.push('\r'),
                't' => out.push('\t'),
                'u' => {
                    let hex: String = chars.by_ref().take(4).collect();
                    if hex.len() != 4 || hex.chars().any(|h| h.is_ascii_uppercase()) {
                        return None;
                    }
                    out.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?);
                }
                _ => return None,
            }
        }
        Some(out)
    }

    /// Text rich in escaped characters, their neighbours, astral characters and backslashes.
    fn text() -> impl Strategy<Value = String> {
        let c = prop_oneof![
            3 => any::<char>(),
            2 => proptest::char::range('\u{0}', '\u{a0}'),
            1 => proptest::char::range('\u{200c}', '\u{2070}'),
            1 => proptest::char::range('\u{1f600}', '\u{1f64f}'),
            1 => Just('\\'),
        ];
        proptest::collection::vec(c, 0..40).prop_map(|v| v.into_iter().collect())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn escape_output_has_no_escaped_character(s in text()) {
            let e = escape(&s);
            prop_assert!(!e.chars().any(is_escaped), "{e:?}");
            prop_assert_eq!(matches!(e, Cow::Borrowed(_)), !s.chars().any(is_escaped));
        }

        #[test]
        fn escape_is_undone_when_the_input_had_no_backslash(s in text()) {
            let s: String = s.chars().filter(|&c| c != '\\').collect();
            prop_assert_eq!(unescape(&escape(&s)), Some(s));
        }

        #[test]
        fn preview_is_a_bounded_prefix_of_the_escape(
            head in text(),
            longer in any::<bool>(),
            limit in prop_oneof![0u32..24, Just(u32::MAX)],
        ) {
            let p = preview(head.clone(), longer, limit);
            let units: Vec<u16> = p.encode_utf16().collect();
            prop_assert!(units.len() as u64 <= u64::from(limit) + 1, "{p:?}");
            prop_assert!(String::from_utf16(&units).is_ok());
            let escaped = escape(&head);
            let cut = escaped.encode_utf16().count() as u64 > u64::from(limit);
            let body = if cut || longer {
                let body = p.strip_suffix('…');
                prop_assert!(body.is_some(), "{p:?} lacks the ellipsis");
                body.unwrap_or(&p)
            } else {
                prop_assert_eq!(&p, &escaped);
                &p
            };
            prop_assert!(escaped.starts_with(body), "{body:?} vs {escaped:?}");
            // The cut falls between whole escapes: what is kept un-escapes to a prefix of head.
            if !head.contains('\\') {
                let kept = unescape(body);
                prop_assert!(kept.as_deref().is_some_and(|k| head.starts_with(k)), "{body:?}");
            }
        }
    }
}
