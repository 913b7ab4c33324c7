//! The plugin's config: defaults, and validation that names the offending field.
//!
//! Validation works on [`Raw`], a plain tree the boundary builds from whatever
//! JavaScript handed over, so every rule here is tested natively. Unknown keys,
//! fractions, `NaN`, strings where numbers belong and values outside a range are
//! all refused with the field's dotted path, the value and the allowed range.

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, Serializer};
use serde::{Deserialize, Deserializer};

use crate::error::Error;

/// The largest delay Node's `setTimeout` honours; larger ones fire after 1 ms.
pub const MAX_TIMER_MS: u32 = 2_147_483_647;
/// Default client-query deadline.
pub const DEFAULT_DEADLINE_MS: u32 = 15_000;
/// Default (and cap of the derived) refusal grace.
pub const DEFAULT_REFUSAL_GRACE_MS: u32 = 1_000;
/// Default preview length of a recorded inbox value.
pub const DEFAULT_PREVIEW_CHARS: u32 = 80;
/// Largest preview length accepted.
pub const MAX_PREVIEW_CHARS: u32 = 100_000;

/// A config value as read off JavaScript, before validation.
#[derive(Debug, Clone, PartialEq)]
pub enum Raw {
    /// `undefined` or `null`: the default applies.
    Absent,
    /// A boolean.
    Bool(bool),
    /// A number (any `f64`, including `NaN`).
    Number(f64),
    /// A string.
    Str(String),
    /// A plain object's own enumerable string-keyed entries, in order.
    Object(Vec<(String, Raw)>),
    /// Anything else, by its `typeof` name (or `"array"`).
    Other(String),
}

impl Raw {
    /// How the value reads in an error message: short, never the whole of a huge string.
    pub fn render(&self) -> String {
        match self {
            Raw::Absent => "absent".into(),
            Raw::Bool(b) => b.to_string(),
            Raw::Number(n) => render_number(*n),
            Raw::Str(s) => {
                let cut: String = s.chars().take(40).collect();
                let more = if cut.len() < s.len() { "…" } else { "" };
                format!("\"{cut}\"{more}")
            }
            Raw::Object(_) => "an object".into(),
            Raw::Other(kind) => format!("a value of type {kind}"),
        }
    }
}

/// A number as people read it in a message: integers exactly, fractions to 15
/// significant digits. Written out by hand because `f64`'s `Display` would pull
/// about 20 KB of float-formatting code into the wasm for this one error path.
pub fn render_number(n: f64) -> String {
    const HUGE: f64 = 1e18;
    if n.is_nan() {
        return "NaN".into();
    }
    if n.is_infinite() {
        return if n > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    let sign = if n < 0.0 { "-" } else { "" };
    let abs = n.abs();
    if abs >= HUGE {
        return format!("{sign}a number above 1e18");
    }
    // |n| < 1e18: the integer part fits an i64 / u64 exactly enough.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let whole = abs.trunc() as u64;
    let fraction = abs.fract();
    if fraction == 0.0 {
        return if whole == 0 {
            "0".into()
        } else {
            format!("{sign}{whole}")
        };
    }
    let int_digits = if whole == 0 {
        0
    } else {
        whole.to_string().len()
    };
    let places = 15usize.saturating_sub(int_digits).max(1);
    let scale = 10u64.pow(u32::try_from(places).unwrap_or(15));
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let mut digits = (fraction * scale as f64).round() as u64;
    let mut whole = whole;
    if digits >= scale {
        whole += 1;
        digits -= scale;
    }
    let padded = format!("{digits:0places$}");
    let trimmed = padded.trim_end_matches('0');
    if trimmed.is_empty() {
        return if whole == 0 {
            format!("{sign}a number between 0 and 1e-{places}")
        } else {
            format!("{sign}{whole}")
        };
    }
    format!("{sign}{whole}.{trimmed}")
}

/// How deep a config tree is read; anything deeper is "an object" (the schema is two levels).
const MAX_DEPTH: u8 = 4;

/// Reads any self-describing value (in the wasm build, the boundary's
/// deserializer of a plain copy of what JavaScript passed) into a [`Raw`] tree, so that every value, however wrong,
/// reaches [`parse`] and is refused there with its field's name.
impl<'de> Deserialize<'de> for Raw {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        RawSeed(0).deserialize(deserializer)
    }
}

/// A [`Raw`] at a given depth.
struct RawSeed(u8);

impl<'de> DeserializeSeed<'de> for RawSeed {
    type Value = Raw;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Raw, D::Error> {
        deserializer.deserialize_any(RawVisitor(self.0))
    }
}

struct RawVisitor(u8);

impl<'de> Visitor<'de> for RawVisitor {
    type Value = Raw;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Raw, E> {
        Ok(Raw::Absent)
    }
    fn visit_none<E: de::Error>(self) -> Result<Raw, E> {
        Ok(Raw::Absent)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Raw, E> {
        Ok(Raw::Bool(v))
    }
    // The config's own reader (interop/de.rs) visits every number as an f64;
    // an integer visit from another deserializer reads as the number it holds.
    #[allow(clippy::cast_precision_loss)]
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Raw, E> {
        Ok(Raw::Number(v as f64))
    }
    #[allow(clippy::cast_precision_loss)]
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Raw, E> {
        Ok(Raw::Number(v as f64))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Raw, E> {
        Ok(Raw::Number(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Raw, E> {
        Ok(Raw::Str(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Raw, E> {
        Ok(Raw::Str(v))
    }
    fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<Raw, E> {
        Ok(Raw::Other("bytes".into()))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Raw, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Raw::Other("array".into()))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Raw, A::Error> {
        if self.0 > MAX_DEPTH {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            return Ok(Raw::Other("object".into()));
        }
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            entries.push((key, map.next_value_seed(RawSeed(self.0 + 1))?));
        }
        Ok(Raw::Object(entries))
    }
}

/// How the inbox guard treats an entry that is not a usable message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Scalars become user messages; anything else is dropped.
    Repair,
    /// Every non-message is dropped.
    Quarantine,
    /// Nothing is touched; every non-message is recorded.
    Report,
}

/// The config spelling, as a string (see the note on the impls in `ledger.rs`).
impl Serialize for Mode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl Mode {
    /// The config spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            Mode::Repair => "repair",
            Mode::Quarantine => "quarantine",
            Mode::Report => "report",
        }
    }
}

/// The inspect half's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InspectConfig {
    /// Whether the inspect half is installed.
    pub enabled: bool,
    /// Deadline of a client query, in ms (`1 ..= MAX_TIMER_MS`).
    pub deadline_ms: u32,
    /// After the first refusal, how long another page may still answer (`0 ..= deadline_ms`).
    pub refusal_grace_ms: u32,
}

serialize_as_map!(InspectConfig |v| {
    "enabled" => &v.enabled,
    "deadlineMs" => &v.deadline_ms,
    "refusalGraceMs" => &v.refusal_grace_ms,
});

impl InspectConfig {
    /// The defaults for a given deadline: the grace is `min(1000, deadline)`.
    pub const fn with_deadline(deadline_ms: u32) -> Self {
        let refusal_grace_ms = if deadline_ms < DEFAULT_REFUSAL_GRACE_MS {
            deadline_ms
        } else {
            DEFAULT_REFUSAL_GRACE_MS
        };
        Self {
            enabled: true,
            deadline_ms,
            refusal_grace_ms,
        }
    }
}

impl Default for InspectConfig {
    fn default() -> Self {
        Self::with_deadline(DEFAULT_DEADLINE_MS)
    }
}

/// The inbox half's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InboxConfig {
    /// Whether the inbox half is installed.
    pub enabled: bool,
    /// What happens to a non-message.
    pub mode: Mode,
    /// Longest preview of a recorded value, in characters (`1 ..= MAX_PREVIEW_CHARS`).
    pub preview_chars: u32,
}

serialize_as_map!(InboxConfig |v| {
    "enabled" => &v.enabled,
    "mode" => &v.mode,
    "previewChars" => &v.preview_chars,
});

impl Default for InboxConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            mode: Mode::Repair,
            preview_chars: DEFAULT_PREVIEW_CHARS,
        }
    }
}

/// The whole plugin config; serialized, it is the normalized config with every default filled in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Config {
    /// The inspect half.
    pub inspect: InspectConfig,
    /// The inbox half.
    pub inbox: InboxConfig,
}

serialize_as_map!(Config |v| {
    "inspect" => &v.inspect,
    "inbox" => &v.inbox,
});

/// Parse and validate the plugin config.
pub fn parse(raw: &Raw) -> Result<Config, Error> {
    let mut root = Section::open("", raw)?;
    let inspect = parse_inspect(root.take("inspect"), "inspect.")?;
    let inbox = parse_inbox(root.take("inbox"))?;
    root.finish(&["inspect", "inbox"])?;
    Ok(Config { inspect, inbox })
}

/// Parse the options of `installInspectClientGuard` (`deadlineMs`, `refusalGraceMs`;
/// `onReport` is a callback the boundary takes out first).
pub fn parse_inspect_options(raw: &Raw) -> Result<InspectConfig, Error> {
    let mut section = Section::open("", raw)?;
    let deadline = section.take("deadlineMs");
    let grace = section.take("refusalGraceMs");
    section.finish(&["deadlineMs", "refusalGraceMs", "onReport"])?;
    timing("", deadline, grace, true)
}

fn parse_inspect(raw: Raw, prefix: &str) -> Result<InspectConfig, Error> {
    let mut section = Section::open("inspect", &raw)?;
    let enabled = boolean("inspect.enabled", section.take("enabled"))?;
    let deadline = section.take("deadlineMs");
    let grace = section.take("refusalGraceMs");
    section.finish(&["enabled", "deadlineMs", "refusalGraceMs"])?;
    timing(prefix, deadline, grace, enabled)
}

fn timing(prefix: &str, deadline: Raw, grace: Raw, enabled: bool) -> Result<InspectConfig, Error> {
    let deadline_ms = integer(
        &format!("{prefix}deadlineMs"),
        deadline,
        1,
        MAX_TIMER_MS,
        DEFAULT_DEADLINE_MS,
    )?;
    let mut config = InspectConfig::with_deadline(deadline_ms);
    config.enabled = enabled;
    config.refusal_grace_ms = integer(
        &format!("{prefix}refusalGraceMs"),
        grace,
        0,
        deadline_ms,
        config.refusal_grace_ms,
    )?;
    Ok(config)
}

fn parse_inbox(raw: Raw) -> Result<InboxConfig, Error> {
    let mut section = Section::open("inbox", &raw)?;
    let defaults = InboxConfig::default();
    let enabled = boolean("inbox.enabled", section.take("enabled"))?;
    let mode = match section.take("mode") {
        Raw::Absent => defaults.mode,
        Raw::Str(s) if s == "repair" => Mode::Repair,
        Raw::Str(s) if s == "quarantine" => Mode::Quarantine,
        Raw::Str(s) if s == "report" => Mode::Report,
        other => {
            return Err(invalid(
                "inbox.mode",
                &other,
                "one of \"repair\", \"quarantine\", \"report\"",
            ))
        }
    };
    let preview_chars = integer(
        "inbox.previewChars",
        section.take("previewChars"),
        1,
        MAX_PREVIEW_CHARS,
        defaults.preview_chars,
    )?;
    section.finish(&["enabled", "mode", "previewChars"])?;
    Ok(InboxConfig {
        enabled,
        mode,
        preview_chars,
    })
}

/// An object being read field by field; whatever is left at the end is unknown.
struct Section {
    path: &'static str,
    entries: Vec<(String, Raw)>,
}

impl Section {
    fn open(path: &'static str, raw: &Raw) -> Result<Self, Error> {
        match raw {
            Raw::Absent => Ok(Self {
                path,
                entries: Vec::new(),
            }),
            Raw::Object(entries) => Ok(Self {
                path,
                entries: entries.clone(),
            }),
            other => Err(invalid(
                if path.is_empty() { "config" } else { path },
                other,
                "an object",
            )),
        }
    }

    fn take(&mut self, key: &str) -> Raw {
        match self.entries.iter().position(|(k, _)| k == key) {
            Some(at) => self.entries.remove(at).1,
            None => Raw::Absent,
        }
    }

    fn finish(self, known: &[&str]) -> Result<(), Error> {
        let Some((key, value)) = self
            .entries
            .into_iter()
            .find(|(k, _)| !known.contains(&k.as_str()))
        else {
            return Ok(());
        };
        let field = if self.path.is_empty() {
            key
        } else {
            format!("{}.{key}", self.path)
        };
        Err(Error::InvalidConfig {
            field,
            value: value.render(),
            expected: format!("no such key (known keys: {})", crate::error::listed(known)),
        })
    }
}

fn invalid(field: &str, value: &Raw, expected: &str) -> Error {
    Error::InvalidConfig {
        field: field.into(),
        value: value.render(),
        expected: expected.into(),
    }
}

fn boolean(field: &str, raw: Raw) -> Result<bool, Error> {
    match raw {
        Raw::Absent => Ok(true),
        Raw::Bool(b) => Ok(b),
        other => Err(invalid(field, &other, "true or false")),
    }
}

/// An integer in `min ..= max`, or `default` when absent.
fn integer(field: &str, raw: Raw, min: u32, max: u32, default: u32) -> Result<u32, Error> {
    let expected = || format!("an integer in {min}..={max}");
    match raw {
        Raw::Absent => Ok(default),
        Raw::Number(n) if n.fract() == 0.0 && n >= f64::from(min) && n <= f64::from(max) => {
            // In range and integral, so the conversion is exact.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            Ok(n as u32)
        }
        other => Err(invalid(field, &other, &expected())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from_json(text: &str) -> Raw {
        serde_json::from_str::<Raw>(text).unwrap_or(Raw::Other("unparsed".into()))
    }

    #[test]
    fn any_value_deserializes_into_a_raw_tree() {
        assert_eq!(from_json("null"), Raw::Absent);
        assert_eq!(from_json("true"), Raw::Bool(true));
        assert_eq!(from_json("-3"), Raw::Number(-3.0));
        assert_eq!(from_json("1.5"), Raw::Number(1.5));
        assert_eq!(from_json(r#""x""#), Raw::Str("x".into()));
        assert_eq!(from_json("[1, {}]"), Raw::Other("array".into()));
        assert_eq!(
            from_json(r#"{"inspect":{"deadlineMs":5},"b":null}"#),
            Raw::Object(vec![
                (
                    "inspect".into(),
                    Raw::Object(vec![("deadlineMs".into(), Raw::Number(5.0))])
                ),
                ("b".into(), Raw::Absent),
            ])
        );
        let deep = r#"{"a":{"b":{"c":{"d":{"e":{"f":1}}}}}}"#;
        let mut level = from_json(deep);
        let mut depth = 0;
        while let Raw::Object(entries) = level {
            level = entries.into_iter().next().map_or(Raw::Absent, |e| e.1);
            depth += 1;
        }
        assert_eq!(depth, 5, "objects are read down to the depth limit");
        assert_eq!(level, Raw::Other("object".into()), "and no further");
    }

    #[test]
    fn a_parsed_config_serializes_normalized() {
        let config = parse(&from_json(r#"{"inspect":{"deadlineMs":500}}"#));
        assert_eq!(
            config.map(|c| serde_json::to_string(&c).unwrap_or_default()),
            Ok(r#"{"inspect":{"enabled":true,"deadlineMs":500,"refusalGraceMs":500},"inbox":{"enabled":true,"mode":"repair","previewChars":80}}"#.to_owned())
        );
    }

    fn obj(entries: &[(&str, Raw)]) -> Raw {
        Raw::Object(
            entries
                .iter()
                .map(|(k, v)| ((*k).to_string(), v.clone()))
                .collect(),
        )
    }

    fn err_field(raw: &Raw) -> (String, String, String) {
        match parse(raw) {
            Err(Error::InvalidConfig {
                field,
                value,
                expected,
            }) => (field, value, expected),
            other => panic!("expected a config error, got {other:?}"),
        }
    }

    #[test]
    fn absent_config_gives_the_contract_defaults() {
        let c = parse(&Raw::Absent).unwrap();
        assert_eq!(c.inspect.deadline_ms, 15_000);
        assert_eq!(c.inspect.refusal_grace_ms, 1_000);
        assert!(c.inspect.enabled && c.inbox.enabled);
        assert_eq!(c.inbox.mode, Mode::Repair);
        assert_eq!(c.inbox.preview_chars, 80);
        assert_eq!(parse(&obj(&[])).unwrap(), c);
    }

    #[test]
    fn grace_defaults_to_min_of_1000_and_deadline() {
        let c = parse(&obj(&[(
            "inspect",
            obj(&[("deadlineMs", Raw::Number(300.0))]),
        )]))
        .unwrap();
        assert_eq!(c.inspect.refusal_grace_ms, 300);
        let c = parse(&obj(&[(
            "inspect",
            obj(&[("deadlineMs", Raw::Number(5000.0))]),
        )]))
        .unwrap();
        assert_eq!(c.inspect.refusal_grace_ms, 1000);
    }

    #[test]
    fn deadline_bounds_are_inclusive() {
        for ok in [1.0, 2_147_483_647.0] {
            let c = parse(&obj(&[(
                "inspect",
                obj(&[("deadlineMs", Raw::Number(ok))]),
            )]))
            .unwrap();
            assert_eq!(f64::from(c.inspect.deadline_ms), ok);
        }
    }

    #[test]
    fn bad_deadlines_name_field_value_and_range() {
        for (bad, shown) in [
            (Raw::Number(0.0), "0"),
            (Raw::Number(-5.0), "-5"),
            (Raw::Number(1.5), "1.5"),
            (Raw::Number(f64::NAN), "NaN"),
            (Raw::Number(f64::INFINITY), "Infinity"),
            (Raw::Number(2_147_483_648.0), "2147483648"),
            (Raw::Str("15000".into()), "\"15000\""),
            (Raw::Bool(true), "true"),
        ] {
            let (field, value, expected) =
                err_field(&obj(&[("inspect", obj(&[("deadlineMs", bad)]))]));
            assert_eq!(field, "inspect.deadlineMs");
            assert_eq!(value, shown);
            assert_eq!(expected, "an integer in 1..=2147483647");
        }
    }

    #[test]
    fn grace_above_deadline_fails() {
        let (field, value, expected) = err_field(&obj(&[(
            "inspect",
            obj(&[
                ("deadlineMs", Raw::Number(500.0)),
                ("refusalGraceMs", Raw::Number(501.0)),
            ]),
        )]));
        assert_eq!(
            (field.as_str(), value.as_str(), expected.as_str()),
            ("inspect.refusalGraceMs", "501", "an integer in 0..=500")
        );
        let c = parse(&obj(&[(
            "inspect",
            obj(&[("refusalGraceMs", Raw::Number(0.0))]),
        )]))
        .unwrap();
        assert_eq!(c.inspect.refusal_grace_ms, 0);
    }

    #[test]
    fn unknown_keys_fail_at_every_level() {
        let (field, _, expected) = err_field(&obj(&[("inspct", obj(&[]))]));
        assert_eq!(field, "inspct");
        assert!(expected.contains("inspect, inbox"));
        let (field, _, _) = err_field(&obj(&[("inspect", obj(&[("deadline", Raw::Number(1.0))]))]));
        assert_eq!(field, "inspect.deadline");
        let (field, _, _) = err_field(&obj(&[("inbox", obj(&[("modes", Raw::Str("x".into()))]))]));
        assert_eq!(field, "inbox.modes");
    }

    #[test]
    fn mode_and_preview_are_checked() {
        let (field, value, _) =
            err_field(&obj(&[("inbox", obj(&[("mode", Raw::Str("fix".into()))]))]));
        assert_eq!((field.as_str(), value.as_str()), ("inbox.mode", "\"fix\""));
        for bad in [0.0, 100_001.0, 2.5] {
            let (field, _, expected) = err_field(&obj(&[(
                "inbox",
                obj(&[("previewChars", Raw::Number(bad))]),
            )]));
            assert_eq!(field, "inbox.previewChars");
            assert_eq!(expected, "an integer in 1..=100000");
        }
        let c = parse(&obj(&[(
            "inbox",
            obj(&[
                ("mode", Raw::Str("quarantine".into())),
                ("previewChars", Raw::Number(100_000.0)),
                ("enabled", Raw::Bool(false)),
            ]),
        )]))
        .unwrap();
        assert_eq!(c.inbox.mode, Mode::Quarantine);
        assert_eq!(c.inbox.preview_chars, 100_000);
        assert!(!c.inbox.enabled);
    }

    #[test]
    fn sections_must_be_objects_and_flags_booleans() {
        let (field, value, _) = err_field(&obj(&[("inspect", Raw::Number(1.0))]));
        assert_eq!((field.as_str(), value.as_str()), ("inspect", "1"));
        let (field, _, _) = err_field(&obj(&[(
            "inbox",
            obj(&[("enabled", Raw::Str("yes".into()))]),
        )]));
        assert_eq!(field, "inbox.enabled");
        let (field, _, _) = err_field(&Raw::Str("x".into()));
        assert_eq!(field, "config");
    }

    #[test]
    fn numbers_render_without_float_formatting() {
        for (n, shown) in [
            (0.0, "0"),
            (-0.0, "0"),
            (15000.0, "15000"),
            (-5.0, "-5"),
            (1.5, "1.5"),
            (0.1, "0.1"),
            (-0.25, "-0.25"),
            (123.456, "123.456"),
            (2_147_483_648.0, "2147483648"),
            (0.999_999_999_999_999_9, "1"),
            (1e300, "a number above 1e18"),
            (-1e19, "-a number above 1e18"),
            (1e-20, "a number between 0 and 1e-15"),
        ] {
            assert_eq!(render_number(n), shown, "{n:e}");
        }
    }

    #[test]
    fn huge_strings_render_short() {
        let (_, value, _) = err_field(&obj(&[(
            "inbox",
            obj(&[("mode", Raw::Str("x".repeat(10_000)))]),
        )]));
        assert!(value.chars().count() < 50, "{value}");
        assert!(value.ends_with('…'));
    }

    #[test]
    fn programmatic_options_share_the_rules() {
        let c = parse_inspect_options(&obj(&[("deadlineMs", Raw::Number(50.0))])).unwrap();
        assert_eq!((c.deadline_ms, c.refusal_grace_ms), (50, 50));
        assert!(matches!(
            parse_inspect_options(&obj(&[("deadlineMs", Raw::Number(0.0))])),
            Err(Error::InvalidConfig { field, .. }) if field == "deadlineMs"
        ));
        assert!(parse_inspect_options(&obj(&[("bogus", Raw::Bool(true))])).is_err());
    }

    #[test]
    fn every_mode_parses_from_its_spelling_and_spells_back() {
        for mode in [Mode::Repair, Mode::Quarantine, Mode::Report] {
            let raw = obj(&[("inbox", obj(&[("mode", Raw::Str(mode.as_str().into()))]))]);
            assert_eq!(parse(&raw).unwrap().inbox.mode, mode, "{}", mode.as_str());
        }
        assert_eq!(
            [Mode::Repair, Mode::Quarantine, Mode::Report].map(Mode::as_str),
            ["repair", "quarantine", "report"]
        );
    }
}
