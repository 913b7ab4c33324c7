//! Bounded records of what the guards did, with running counts.

use std::borrow::Cow;
use std::collections::VecDeque;

use serde::ser::{Serialize, SerializeMap, Serializer};

/// How many records a ledger keeps; older ones make way (counts keep counting).
pub const RECORD_CAP: usize = 1000;

/// A record kind that knows which counter it bumps. Records and counts cross
/// into JavaScript through serde, when a reader asks (never per query or claim).
pub trait Record: Clone + Serialize {
    /// The counters.
    type Counts: Default + Clone + Serialize;
    /// Bump this record's counter.
    fn count(&self, counts: &mut Self::Counts);
    /// The session the record belongs to, if known.
    fn session(&self) -> Option<&str>;
}

/// The most recent records, and counts of all of them since the last reset.
#[derive(Debug, Clone)]
pub struct Ledger<R: Record> {
    records: VecDeque<R>,
    counts: R::Counts,
}

impl<R: Record> Default for Ledger<R> {
    fn default() -> Self {
        Self {
            records: VecDeque::new(),
            counts: R::Counts::default(),
        }
    }
}

impl<R: Record> Ledger<R> {
    /// Record one entry.
    pub fn push(&mut self, record: R) {
        record.count(&mut self.counts);
        if self.records.len() == RECORD_CAP {
            self.records.pop_front();
        }
        self.records.push_back(record);
    }

    /// The kept records, oldest first.
    pub fn records(&self) -> impl Iterator<Item = &R> {
        self.records.iter()
    }

    /// The latest `limit` kept records of `session`, oldest first.
    pub fn latest_of(&self, session: &str, limit: usize) -> Vec<&R> {
        let mut mine: Vec<&R> = self
            .records
            .iter()
            .rev()
            .filter(|r| r.session() == Some(session))
            .take(limit)
            .collect();
        mine.reverse();
        mine
    }

    /// The counts since the last reset.
    pub fn counts(&self) -> &R::Counts {
        &self.counts
    }

    /// Forget records and counts.
    pub fn reset(&mut self) {
        self.records.clear();
        self.counts = R::Counts::default();
    }
}

/// One inspect report, as `inspectClientGuard.reports()` returns it.
#[derive(Debug, Clone, PartialEq)]
pub struct InspectReport {
    /// `deadline`, `refused`, `unbound-agent` or `disposed`.
    pub kind: &'static str,
    /// The registry's request id.
    pub request_id: String,
    /// The agent (session) whose query it was, when known.
    pub session_id: Option<String>,
    /// The provider asked.
    pub provider_id: String,
    /// The method asked.
    pub method_name: String,
    /// The deadline in force.
    pub deadline_ms: u32,
    /// When, in ms since the epoch.
    pub at: f64,
    /// The page's refusal reason (refused reports only; absent otherwise).
    pub reason: Option<String>,
}

// Serialized as maps of their fields (see `serialize_as_map!` in lib.rs); a
// report's `reason` is left out when absent.
impl Serialize for InspectReport {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("kind", self.kind)?;
        map.serialize_entry("requestId", &self.request_id)?;
        map.serialize_entry("sessionId", &self.session_id)?;
        map.serialize_entry("providerId", &self.provider_id)?;
        map.serialize_entry("methodName", &self.method_name)?;
        map.serialize_entry("deadlineMs", &self.deadline_ms)?;
        map.serialize_entry("at", &self.at)?;
        if let Some(reason) = &self.reason {
            map.serialize_entry("reason", reason)?;
        }
        map.end()
    }
}

/// Counters of inspect reports by kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InspectCounts {
    /// Deadline expiries.
    pub deadline: u64,
    /// Surfaced refusals.
    pub refused: u64,
    /// Refused unbound-agent answers.
    pub unbound_agent: u64,
    /// Queries rejected by disposal.
    pub disposed: u64,
}

serialize_as_map!(InspectCounts |v| {
    "deadline" => &v.deadline,
    "refused" => &v.refused,
    "unboundAgent" => &v.unbound_agent,
    "disposed" => &v.disposed,
});

impl Record for InspectReport {
    type Counts = InspectCounts;
    fn count(&self, counts: &mut InspectCounts) {
        match self.kind {
            "deadline" => counts.deadline += 1,
            "refused" => counts.refused += 1,
            "unbound-agent" => counts.unbound_agent += 1,
            _ => counts.disposed += 1,
        }
    }
    fn session(&self) -> Option<&str> {
        self.session_id.as_deref()
    }
}

/// One inbox violation, as `inboxInputGuard.violations()` returns it.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    /// When, in ms since the epoch.
    pub at: f64,
    /// `durable`, `pending` or `claimed`.
    pub origin: &'static str,
    /// The agent's session.
    pub session_id: Option<String>,
    /// The session log seq of the durable write (durable records only).
    pub seq: Option<f64>,
    /// The inbox list: `next-turn` or `next-step` (a host's own name only from a
    /// durable write's event; the guard's are static).
    pub target: Option<Cow<'static, str>>,
    /// Position in the list or claimed batch.
    pub index: u32,
    /// `typeof` name of the value (or `null` / `array`).
    pub value_kind: &'static str,
    /// A bounded rendering of the value.
    pub preview: String,
    /// `repaired`, `quarantined` or `observed`.
    pub action: &'static str,
    /// Which value this is: every record of one value (seen at its write, while
    /// pending, when claimed) carries the id of its first (see [`crate::sightings`]).
    pub value_id: u64,
    /// A later sighting of a value already recorded: it adds no `observed` count.
    /// (Not serialized.)
    pub repeat: bool,
}

serialize_as_map!(Violation |v| {
    "at" => &v.at,
    "origin" => v.origin,
    "sessionId" => &v.session_id,
    "seq" => &v.seq,
    "target" => &v.target,
    "index" => &v.index,
    "valueKind" => v.value_kind,
    "preview" => &v.preview,
    "action" => v.action,
    "valueId" => &v.value_id,
});

/// Counters of inbox violations by action.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InboxCounts {
    /// Entries turned into user messages.
    pub repaired: u64,
    /// Entries dropped.
    pub quarantined: u64,
    /// Values only recorded (each value once, however often it was seen).
    pub observed: u64,
}

serialize_as_map!(InboxCounts |v| {
    "repaired" => &v.repaired,
    "quarantined" => &v.quarantined,
    "observed" => &v.observed,
});

impl Record for Violation {
    type Counts = InboxCounts;
    fn count(&self, counts: &mut InboxCounts) {
        match self.action {
            "repaired" => counts.repaired += 1,
            "quarantined" => counts.quarantined += 1,
            _ if self.repeat => {}
            _ => counts.observed += 1,
        }
    }
    fn session(&self) -> Option<&str> {
        self.session_id.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(kind: &'static str) -> InspectReport {
        InspectReport {
            kind,
            request_id: "inspect-1".into(),
            session_id: Some("s-1".into()),
            provider_id: "P".into(),
            method_name: "M".into(),
            deadline_ms: 10,
            at: 0.0,
            reason: None,
        }
    }

    #[test]
    fn counts_by_kind_and_reset() {
        let mut l = Ledger::default();
        for k in [
            "deadline",
            "deadline",
            "refused",
            "unbound-agent",
            "disposed",
        ] {
            l.push(report(k));
        }
        assert_eq!(
            l.counts(),
            &InspectCounts {
                deadline: 2,
                refused: 1,
                unbound_agent: 1,
                disposed: 1
            }
        );
        assert_eq!(l.records().count(), 5);
        l.reset();
        assert_eq!(l.counts(), &InspectCounts::default());
        assert_eq!(l.records().count(), 0);
    }

    #[test]
    fn records_are_capped_but_counts_are_not() {
        let mut l = Ledger::default();
        for _ in 0..RECORD_CAP + 10 {
            l.push(report("deadline"));
        }
        assert_eq!(l.records().count(), RECORD_CAP);
        assert_eq!(l.counts().deadline, (RECORD_CAP + 10) as u64);
    }

    /// The JSON a record serializes to (the same shape serde-wasm-bindgen's
    /// json-compatible serializer gives JavaScript).
    fn json(value: &impl Serialize) -> String {
        serde_json::to_string(value).unwrap_or_default()
    }

    #[test]
    fn records_read_as_the_documented_objects() {
        let mut r = report("refused");
        assert_eq!(
            json(&r),
            r#"{"kind":"refused","requestId":"inspect-1","sessionId":"s-1","providerId":"P","methodName":"M","deadlineMs":10,"at":0.0}"#,
            "no reason key unless there is a reason"
        );
        r.reason = Some("provider-missing".into());
        assert!(json(&r).ends_with(r#","reason":"provider-missing"}"#));
        let v = Violation {
            at: 1.0,
            origin: "claimed",
            session_id: None,
            seq: None,
            target: Some("next-turn".into()),
            index: 2,
            value_kind: "string",
            preview: "x".into(),
            action: "repaired",
            value_id: 7,
            repeat: true,
        };
        assert_eq!(
            json(&v),
            r#"{"at":1.0,"origin":"claimed","sessionId":null,"seq":null,"target":"next-turn","index":2,"valueKind":"string","preview":"x","action":"repaired","valueId":7}"#,
            "missing reads null"
        );
        let c = InspectCounts {
            unbound_agent: 3,
            ..InspectCounts::default()
        };
        assert_eq!(
            json(&c),
            r#"{"deadline":0,"refused":0,"unboundAgent":3,"disposed":0}"#
        );
    }

    #[test]
    fn latest_of_a_session_is_its_own_newest_oldest_first() {
        let mut l = Ledger::default();
        for (i, session) in ["a", "b", "a", "a", "b"].iter().enumerate() {
            let mut r = report("deadline");
            r.request_id = format!("inspect-{i}");
            r.session_id = Some((*session).into());
            l.push(r);
        }
        let ids =
            |v: Vec<&InspectReport>| v.iter().map(|r| r.request_id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(l.latest_of("a", 2)), ["inspect-2", "inspect-3"]);
        assert_eq!(ids(l.latest_of("b", 20)), ["inspect-1", "inspect-4"]);
        assert!(l.latest_of("c", 20).is_empty());
    }

    /// The provider and the command read a session's violations through this
    /// filter: another session's, and session-less ones, never come out.
    #[test]
    fn latest_violations_of_a_session_are_its_own() {
        let mut l = Ledger::default();
        for (i, session) in [Some("a"), None, Some("b"), Some(""), Some("a")]
            .iter()
            .enumerate()
        {
            l.push(Violation {
                at: 0.0,
                origin: "claimed",
                session_id: session.map(Into::into),
                seq: None,
                target: None,
                index: i as u32,
                value_kind: "string",
                preview: String::new(),
                action: "observed",
                value_id: 1,
                repeat: false,
            });
        }
        let at = |v: Vec<&Violation>| v.iter().map(|r| r.index).collect::<Vec<_>>();
        assert_eq!(at(l.latest_of("a", 20)), [0, 4]);
        assert_eq!(at(l.latest_of("b", 20)), [2]);
        assert_eq!(
            at(l.latest_of("", 20)),
            [3],
            "an empty id is an id, not a missing one"
        );
        assert!(l.latest_of("xyzzy", 20).is_empty());
    }

    #[test]
    fn violations_count_by_action_and_observations_by_value() {
        let mut l = Ledger::default();
        for (action, repeat) in [
            ("repaired", false),
            ("quarantined", false),
            ("observed", false),
            ("observed", false),
            ("observed", true),
            ("repaired", true),
        ] {
            l.push(Violation {
                at: 0.0,
                origin: "claimed",
                session_id: None,
                seq: None,
                target: None,
                index: 0,
                value_kind: "string",
                preview: String::new(),
                action,
                value_id: 1,
                repeat,
            });
        }
        assert_eq!(
            l.counts(),
            &InboxCounts {
                repaired: 2,
                quarantined: 1,
                observed: 2
            },
            "a value seen again adds no observation; an action always counts"
        );
        assert_eq!(l.records().count(), 6, "every sighting is a record");
    }

    #[test]
    fn inbox_counts_cross_as_named_numbers() {
        let counts = InboxCounts {
            repaired: 3,
            quarantined: 2,
            observed: 1,
        };
        assert_eq!(
            json(&counts),
            r#"{"repaired":3,"quarantined":2,"observed":1}"#
        );
    }
}
