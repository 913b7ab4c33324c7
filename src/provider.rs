//! The guard's records for the model: the read-only host inspect provider `HarnessGuard`.
//!
//! The host's inspect registry lists this provider in `cordis_inspect_list` and
//! validates every input against [`MANIFEST`]'s schemas before a query reaches
//! it, and every answer after. The schemas keep to the subset the host accepts
//! (`assertSupportedJsonSchema`: one `type` string, `oneOf` for nullable fields,
//! no `minimum`/`maximum`), so the range of `limit` is checked here, with an
//! error naming the field.
//!
//! A query sees the records of the asking agent's own session only; counts are
//! numbers without text. An answer is bounded: records are kept newest first
//! until [`MAX_ANSWER_CHARS`] of text is reached.

use serde::ser::{Serialize, SerializeMap, Serializer};

use crate::config::{InboxConfig, InspectConfig, Mode, Raw};
use crate::error::Error;
use crate::ledger::{InboxCounts, InspectCounts, InspectReport, Violation};

/// The provider's id in `cordis_inspect_list`.
pub const PROVIDER_ID: &str = "HarnessGuard";

/// Default `limit` of `reports` and `violations`.
pub const DEFAULT_LIMIT: usize = 20;
/// The largest `limit` accepted.
pub const MAX_LIMIT: usize = 1000;

/// Text an answer may carry (previews, reasons and ids together), in characters:
/// well inside what a tool result should bring into the model's context.
pub const MAX_ANSWER_CHARS: usize = 48_000;

/// The manifest registered with `cordisInspect.register`, as JSON: `provider.json`
/// without the whitespace between its tokens (see `build.rs`).
pub const MANIFEST: &str = include_str!(concat!(env!("OUT_DIR"), "/provider.min.json"));

/// A method of the provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `status`: what is installed, with what settings, and the counts.
    Status,
    /// `reports`: the asking agent's inspect reports.
    Reports,
    /// `violations`: the asking session's inbox violations.
    Violations,
}

impl Method {
    /// The method of a name, if the provider has it.
    pub fn of(name: &str) -> Option<Self> {
        match name {
            "status" => Some(Self::Status),
            "reports" => Some(Self::Reports),
            "violations" => Some(Self::Violations),
            _ => None,
        }
    }
}

/// The `limit` of a `reports` or `violations` input (`{ limit? }`, already
/// checked against the input schema by the host; checked again here, since a
/// direct caller may skip the host).
pub fn limit(input: &Raw) -> Result<usize, Error> {
    let value = match input {
        Raw::Object(entries) => entries
            .iter()
            .find(|(k, _)| k == "limit")
            .map_or(&Raw::Absent, |(_, v)| v),
        _ => &Raw::Absent,
    };
    let refuse = || Error::InvalidInput {
        field: "limit",
        value: value.render(),
        expected: "an integer in 1..=1000",
    };
    match value {
        Raw::Absent => Ok(DEFAULT_LIMIT),
        Raw::Number(n) if n.fract() == 0.0 && (1.0..=1000.0).contains(n) => {
            // In 1..=1000, checked above.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            Ok(*n as usize)
        }
        _ => Err(refuse()),
    }
}

/// The answer to `status`.
#[derive(Debug)]
pub struct Status<'a> {
    /// The package version.
    pub version: &'static str,
    /// Present while the guard stands down after a fault of its own.
    pub failed: Option<&'a str>,
    /// Recoveries on a fresh instance so far in this process.
    pub recoveries: u32,
    /// The last fault of the guard, if any.
    pub last_fault: Option<LastFault>,
    /// The guard recovered too often and stays down until the process restarts.
    pub gave_up: bool,
    /// The inspect half.
    pub inspect: InspectStatus<'a>,
    /// The inbox half.
    pub inbox: InboxStatus<'a>,
}

// `failed` and `lastFault` are left out when absent, `gaveUp` when false (see
// `serialize_as_map!` in lib.rs).
impl Serialize for Status<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("version", self.version)?;
        if let Some(failed) = self.failed {
            map.serialize_entry("failed", failed)?;
        }
        map.serialize_entry("recoveries", &self.recoveries)?;
        if let Some(last_fault) = &self.last_fault {
            map.serialize_entry("lastFault", last_fault)?;
        }
        if self.gave_up {
            map.serialize_entry("gaveUp", &true)?;
        }
        map.serialize_entry("inspect", &self.inspect)?;
        map.serialize_entry("inbox", &self.inbox)?;
        map.end()
    }
}

/// Where and when the guard last faulted.
#[derive(Debug, Clone, PartialEq)]
pub struct LastFault {
    /// The entry point (`claim`, `preStep`, `created`, `sessionEvent`, `begin`,
    /// `settle`, `tick`, `resolve`, `apply` or `plugin`).
    pub point: String,
    /// When, in ms since the epoch.
    pub at: f64,
}

serialize_as_map!(LastFault |v| {
    "point" => &v.point,
    "at" => &v.at,
});

/// The inspect half in a `status` answer.
#[derive(Debug)]
pub struct InspectStatus<'a> {
    /// Whether the client-query guard is on the registry.
    pub installed: bool,
    /// The deadline in force, while installed.
    pub deadline_ms: Option<u32>,
    /// The refusal grace in force, while installed.
    pub refusal_grace_ms: Option<u32>,
    /// Guarded client queries waiting now, across the process.
    pub in_flight: u32,
    /// Reports by kind.
    pub counts: &'a InspectCounts,
}

// `deadlineMs` and `refusalGraceMs` are left out while not installed.
impl Serialize for InspectStatus<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("installed", &self.installed)?;
        if let Some(deadline_ms) = &self.deadline_ms {
            map.serialize_entry("deadlineMs", deadline_ms)?;
        }
        if let Some(refusal_grace_ms) = &self.refusal_grace_ms {
            map.serialize_entry("refusalGraceMs", refusal_grace_ms)?;
        }
        map.serialize_entry("inFlight", &self.in_flight)?;
        map.serialize_entry("counts", self.counts)?;
        map.end()
    }
}

impl<'a> InspectStatus<'a> {
    /// The inspect half's status: `config` while installed.
    pub fn new(config: Option<&InspectConfig>, in_flight: u32, counts: &'a InspectCounts) -> Self {
        Self {
            installed: config.is_some(),
            deadline_ms: config.map(|c| c.deadline_ms),
            refusal_grace_ms: config.map(|c| c.refusal_grace_ms),
            in_flight,
            counts,
        }
    }
}

/// The inbox half in a `status` answer.
#[derive(Debug)]
pub struct InboxStatus<'a> {
    /// Whether agents' inboxes are guarded.
    pub installed: bool,
    /// The configured mode.
    pub mode: Mode,
    /// Violations by action.
    pub counts: &'a InboxCounts,
}

serialize_as_map!(InboxStatus<'_> |v| {
    "installed" => &v.installed,
    "mode" => &v.mode,
    "counts" => v.counts,
});

impl<'a> InboxStatus<'a> {
    /// The inbox half's status.
    pub fn new(config: &InboxConfig, installed: bool, counts: &'a InboxCounts) -> Self {
        Self {
            installed,
            mode: config.mode,
            counts,
        }
    }
}

/// The answer to `reports`.
#[derive(Debug)]
pub struct Reports<'a> {
    /// Oldest first.
    pub reports: Vec<&'a InspectReport>,
}

serialize_as_map!(Reports<'_> |v| {
    "reports" => &v.reports,
});

/// The answer to `violations`.
#[derive(Debug)]
pub struct Violations<'a> {
    /// Oldest first.
    pub violations: Vec<&'a Violation>,
}

serialize_as_map!(Violations<'_> |v| {
    "violations" => &v.violations,
});

/// Text a record brings into an answer, in characters.
pub trait Weight {
    /// The characters of its strings.
    fn weight(&self) -> usize;
}

impl Weight for InspectReport {
    fn weight(&self) -> usize {
        self.request_id.len()
            + self.session_id.as_ref().map_or(0, String::len)
            + self.provider_id.len()
            + self.method_name.len()
            + self.reason.as_ref().map_or(0, String::len)
    }
}

impl Weight for Violation {
    fn weight(&self) -> usize {
        self.session_id.as_ref().map_or(0, String::len)
            + self.target.as_ref().map_or(0, |t| t.len())
            + self.preview.len()
    }
}

/// Of `records` (oldest first), the newest that fit in [`MAX_ANSWER_CHARS`], oldest first.
pub fn bounded<R: Weight>(records: Vec<&R>) -> Vec<&R> {
    let mut total = 0;
    let mut keep = 0;
    for record in records.iter().rev() {
        total += record.weight();
        if total > MAX_ANSWER_CHARS {
            break;
        }
        keep += 1;
    }
    let skip = records.len() - keep;
    records.into_iter().skip(skip).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(limit: Raw) -> Raw {
        Raw::Object(vec![("limit".into(), limit)])
    }

    #[test]
    fn limit_defaults_and_bounds() {
        assert_eq!(limit(&Raw::Absent), Ok(DEFAULT_LIMIT));
        assert_eq!(limit(&Raw::Object(vec![])), Ok(DEFAULT_LIMIT));
        assert_eq!(limit(&input(Raw::Number(1.0))), Ok(1));
        assert_eq!(limit(&input(Raw::Number(1000.0))), Ok(MAX_LIMIT));
        for bad in [
            Raw::Number(0.0),
            Raw::Number(1001.0),
            Raw::Number(2.5),
            Raw::Number(f64::NAN),
            Raw::Str("5".into()),
        ] {
            let Err(e) = limit(&input(bad.clone())) else {
                return assert_eq!(Some(bad), None, "refused");
            };
            assert_eq!(e.code(), "HARNESS_GUARD_INVALID_INPUT");
            assert!(e.to_string().contains("limit is"), "{e}");
            assert!(e.to_string().contains("1..=1000"), "{e}");
        }
    }

    #[test]
    fn methods_by_name() {
        assert_eq!(Method::of("status"), Some(Method::Status));
        assert_eq!(Method::of("reports"), Some(Method::Reports));
        assert_eq!(Method::of("violations"), Some(Method::Violations));
        assert_eq!(Method::of("Status"), None);
    }

    fn violation(preview: &str) -> Violation {
        Violation {
            at: 0.0,
            origin: "claimed",
            session_id: Some("s".into()),
            seq: None,
            target: None,
            index: 0,
            value_kind: "string",
            preview: preview.into(),
            action: "repaired",
            value_id: 1,
            repeat: false,
        }
    }

    #[test]
    fn answers_keep_the_newest_records_that_fit() {
        let big = "x".repeat(MAX_ANSWER_CHARS / 3);
        let records: Vec<Violation> = (0..5).map(|i| violation(&format!("{i}{big}"))).collect();
        let kept = bounded(records.iter().collect());
        let firsts: Vec<_> = kept.iter().map(|v| v.preview.chars().next()).collect();
        assert_eq!(
            firsts,
            [Some('3'), Some('4')],
            "the newest two, oldest first"
        );
        let small: Vec<Violation> = (0..3).map(|i| violation(&i.to_string())).collect();
        assert_eq!(bounded(small.iter().collect()).len(), 3);
    }

    /// A record weighs the characters of each of its strings, so that an answer
    /// is bounded whichever field is long.
    #[test]
    fn every_string_of_a_record_weighs() {
        let report = InspectReport {
            kind: "refused",
            request_id: "r".into(),
            session_id: Some("s".repeat(20)),
            provider_id: "p".repeat(300),
            method_name: "m".repeat(4_000),
            deadline_ms: 10,
            at: 0.0,
            reason: Some("x".repeat(50_000)),
        };
        assert_eq!(report.weight(), 1 + 20 + 300 + 4_000 + 50_000);
        let mut v = violation(&"v".repeat(7));
        v.target = Some("next-turn".into());
        assert_eq!(v.weight(), 1 + 9 + 7, "session, target and preview");
        assert!(
            bounded(vec![&report]).is_empty(),
            "one record over the bound alone is left out"
        );
        let fits = violation(&"v".repeat(MAX_ANSWER_CHARS - 1));
        assert_eq!(bounded(vec![&fits]).len(), 1, "exactly at the bound fits");
    }

    #[test]
    fn the_embedded_manifest_is_provider_json_minified() {
        let source: serde_json::Value =
            serde_json::from_str(include_str!("provider.json")).unwrap_or_default();
        let embedded: serde_json::Value = serde_json::from_str(MANIFEST).unwrap_or_default();
        assert!(source.is_object(), "provider.json parses");
        assert_eq!(embedded, source, "the same JSON value");
        assert!(MANIFEST.len() < include_str!("provider.json").len());
        assert!(!MANIFEST.contains('\n'), "no line breaks left");
    }

    #[test]
    fn the_manifest_keeps_to_the_hosts_schema_subset() {
        let manifest: serde_json::Value =
            serde_json::from_str(MANIFEST).unwrap_or(serde_json::Value::Null);
        assert_eq!(manifest["id"], PROVIDER_ID);
        let methods = manifest["methods"].as_array().cloned().unwrap_or_default();
        let names: Vec<_> = methods.iter().map(|m| m["name"].clone()).collect();
        assert_eq!(names, ["status", "reports", "violations"]);
        const ALLOWED: [&str; 12] = [
            "type",
            "oneOf",
            "properties",
            "required",
            "additionalProperties",
            "items",
            "enum",
            "const",
            "description",
            "title",
            "default",
            "examples",
        ];
        fn check(schema: &serde_json::Value, path: &str) {
            let Some(object) = schema.as_object() else {
                return assert!(schema.is_boolean(), "{path}: a schema is an object");
            };
            for (key, value) in object {
                assert!(
                    ALLOWED.contains(&key.as_str()),
                    "{path}: {key} is not in the host's subset"
                );
                match key.as_str() {
                    "type" => assert!(value.is_string(), "{path}: one type string"),
                    "properties" => {
                        for (name, sub) in value.as_object().into_iter().flatten() {
                            check(sub, &format!("{path}.{name}"));
                        }
                    }
                    "items" | "additionalProperties" => check(value, &format!("{path}[]")),
                    "oneOf" => {
                        let options = value.as_array().cloned().unwrap_or_default();
                        assert!(options.len() >= 2, "{path}: oneOf of two or more");
                        for sub in &options {
                            check(sub, &format!("{path}|"));
                        }
                    }
                    _ => {}
                }
            }
        }
        for method in &methods {
            assert!(method["description"]
                .as_str()
                .is_some_and(|d| !d.is_empty()));
            check(&method["inputSchema"], "input");
            check(&method["outputSchema"], "output");
        }
    }

    /// The status serializes to the shape `index.d.ts` declares: `failed`,
    /// `lastFault` and `gaveUp` only when there is something to say, the
    /// inspect half's timings only while it is installed, the mode as its config
    /// spelling.
    #[test]
    fn status_serializes_with_optional_fields_left_out() {
        let counts = (InspectCounts::default(), InboxCounts::default());
        let inbox = InboxConfig::default();
        let quiet = Status {
            version: "1.2.3",
            failed: None,
            recoveries: 0,
            last_fault: None,
            gave_up: false,
            inspect: InspectStatus::new(None, 0, &counts.0),
            inbox: InboxStatus::new(&inbox, true, &counts.1),
        };
        assert_eq!(
            serde_json::to_string(&quiet).unwrap_or_default(),
            r#"{"version":"1.2.3","recoveries":0,"inspect":{"installed":false,"inFlight":0,"counts":{"deadline":0,"refused":0,"unboundAgent":0,"disposed":0}},"inbox":{"installed":true,"mode":"repair","counts":{"repaired":0,"quarantined":0,"observed":0}}}"#
        );
        let inspect = InspectConfig::with_deadline(500);
        let report = InboxConfig {
            mode: crate::config::Mode::Report,
            ..inbox
        };
        let down = Status {
            version: "1.2.3",
            failed: Some("down"),
            recoveries: 2,
            last_fault: Some(LastFault {
                point: "claim".into(),
                at: 5.0,
            }),
            gave_up: true,
            inspect: InspectStatus::new(Some(&inspect), 3, &counts.0),
            inbox: InboxStatus::new(&report, false, &counts.1),
        };
        assert_eq!(
            serde_json::to_string(&down).unwrap_or_default(),
            r#"{"version":"1.2.3","failed":"down","recoveries":2,"lastFault":{"point":"claim","at":5.0},"gaveUp":true,"inspect":{"installed":true,"deadlineMs":500,"refusalGraceMs":500,"inFlight":3,"counts":{"deadline":0,"refused":0,"unboundAgent":0,"disposed":0}},"inbox":{"installed":false,"mode":"report","counts":{"repaired":0,"quarantined":0,"observed":0}}}"#
        );
    }

    #[test]
    fn answers_serialize_as_one_named_list() {
        let v = violation("x");
        assert_eq!(
            serde_json::to_string(&Violations {
                violations: vec![&v]
            })
            .unwrap_or_default(),
            format!(
                r#"{{"violations":[{}]}}"#,
                serde_json::to_string(&v).unwrap_or_default()
            )
        );
        assert_eq!(
            serde_json::to_string(&Reports { reports: vec![] }).unwrap_or_default(),
            r#"{"reports":[]}"#
        );
    }
}
