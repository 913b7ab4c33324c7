//! Bounded records of what the guards did, with running counts.

use std::collections::VecDeque;

/// How many records a ledger keeps; older ones make way (counts keep counting).
pub const RECORD_CAP: usize = 1000;

/// One field of a record, as it reads in JavaScript.
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    /// A string.
    Str(&'a str),
    /// A number.
    Num(f64),
    /// `null`.
    Null,
}

impl<'a> From<&'a Option<String>> for Value<'a> {
    fn from(v: &'a Option<String>) -> Self {
        v.as_deref().map_or(Value::Null, Value::Str)
    }
}

/// A record (or set of counters) as the plain object JavaScript receives: its
/// camelCase field names and values. Fields left out are absent from the object.
pub trait Fields {
    /// The fields, in order.
    fn fields(&self) -> Vec<(&'static str, Value<'_>)>;
}

/// A record kind that knows which counter it bumps.
pub trait Record: Clone + Fields {
    /// The counters.
    type Counts: Default + Clone + Fields;
    /// Bump this record's counter.
    fn count(&self, counts: &mut Self::Counts);
}

// Counters are far below 2^53, so they convert to f64 exactly.
#[allow(clippy::cast_precision_loss)]
fn num(n: u64) -> Value<'static> {
    Value::Num(n as f64)
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
    /// The provider asked.
    pub provider_id: String,
    /// The method asked.
    pub method_name: String,
    /// The deadline in force.
    pub deadline_ms: u32,
    /// When, in ms since the epoch.
    pub at: f64,
    /// The page's refusal reason (refused reports only).
    pub reason: Option<String>,
}

impl Fields for InspectReport {
    fn fields(&self) -> Vec<(&'static str, Value<'_>)> {
        let mut fields = vec![
            ("kind", Value::Str(self.kind)),
            ("requestId", Value::Str(&self.request_id)),
            ("providerId", Value::Str(&self.provider_id)),
            ("methodName", Value::Str(&self.method_name)),
            ("deadlineMs", Value::Num(f64::from(self.deadline_ms))),
            ("at", Value::Num(self.at)),
        ];
        if let Some(reason) = &self.reason {
            fields.push(("reason", Value::Str(reason)));
        }
        fields
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

impl Fields for InspectCounts {
    fn fields(&self) -> Vec<(&'static str, Value<'_>)> {
        vec![
            ("deadline", num(self.deadline)),
            ("refused", num(self.refused)),
            ("unboundAgent", num(self.unbound_agent)),
            ("disposed", num(self.disposed)),
        ]
    }
}

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
    /// The inbox list: `next-turn` or `next-step`.
    pub target: Option<String>,
    /// Position in the list or claimed batch.
    pub index: u32,
    /// `typeof` name of the value (or `null` / `array`).
    pub value_kind: &'static str,
    /// A bounded rendering of the value.
    pub preview: String,
    /// `repaired`, `quarantined` or `observed`.
    pub action: &'static str,
}

impl Fields for Violation {
    fn fields(&self) -> Vec<(&'static str, Value<'_>)> {
        vec![
            ("at", Value::Num(self.at)),
            ("origin", Value::Str(self.origin)),
            ("sessionId", (&self.session_id).into()),
            ("seq", self.seq.map_or(Value::Null, Value::Num)),
            ("target", (&self.target).into()),
            ("index", Value::Num(f64::from(self.index))),
            ("valueKind", Value::Str(self.value_kind)),
            ("preview", Value::Str(&self.preview)),
            ("action", Value::Str(self.action)),
        ]
    }
}

/// Counters of inbox violations by action.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InboxCounts {
    /// Entries turned into user messages.
    pub repaired: u64,
    /// Entries dropped.
    pub quarantined: u64,
    /// Entries only recorded.
    pub observed: u64,
}

impl Fields for InboxCounts {
    fn fields(&self) -> Vec<(&'static str, Value<'_>)> {
        vec![
            ("repaired", num(self.repaired)),
            ("quarantined", num(self.quarantined)),
            ("observed", num(self.observed)),
        ]
    }
}

impl Record for Violation {
    type Counts = InboxCounts;
    fn count(&self, counts: &mut InboxCounts) {
        match self.action {
            "repaired" => counts.repaired += 1,
            "quarantined" => counts.quarantined += 1,
            _ => counts.observed += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(kind: &'static str) -> InspectReport {
        InspectReport {
            kind,
            request_id: "inspect-1".into(),
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

    #[test]
    fn records_read_as_the_documented_objects() {
        let mut r = report("refused");
        let names: Vec<_> = r.fields().iter().map(|(k, _)| *k).collect();
        assert_eq!(
            names,
            [
                "kind",
                "requestId",
                "providerId",
                "methodName",
                "deadlineMs",
                "at"
            ],
            "no reason key unless there is a reason"
        );
        r.reason = Some("provider-missing".into());
        assert_eq!(
            r.fields().last(),
            Some(&("reason", Value::Str("provider-missing")))
        );
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
        };
        let f = v.fields();
        assert!(
            f.contains(&("sessionId", Value::Null)),
            "missing reads null"
        );
        assert!(f.contains(&("seq", Value::Null)));
        assert!(f.contains(&("target", Value::Str("next-turn"))));
        let c = InspectCounts {
            unbound_agent: 3,
            ..InspectCounts::default()
        };
        assert!(c.fields().contains(&("unboundAgent", Value::Num(3.0))));
    }

    #[test]
    fn violations_count_by_action() {
        let mut l = Ledger::default();
        for action in ["repaired", "quarantined", "observed", "observed"] {
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
            });
        }
        assert_eq!(
            l.counts(),
            &InboxCounts {
                repaired: 1,
                quarantined: 1,
                observed: 2
            }
        );
    }

    #[test]
    fn inbox_counts_cross_as_named_numbers() {
        let counts = InboxCounts {
            repaired: 3,
            quarantined: 2,
            observed: 1,
        };
        assert_eq!(
            counts.fields(),
            vec![
                ("repaired", Value::Num(3.0)),
                ("quarantined", Value::Num(2.0)),
                ("observed", Value::Num(1.0)),
            ]
        );
    }
}
