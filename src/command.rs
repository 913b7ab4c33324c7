//! What `/harness-guard` answers the human, without a model turn: the guard's
//! status and the asking session's latest records, as text.
//!
//! Everything that came from a page or a producer (request ids, names, reasons,
//! previews) is escaped as log lines are (see [`crate::echo`]); previews are
//! escaped and bounded already.

use std::fmt::Write as _;

use crate::echo::escape;
use crate::ledger::{InspectReport, Violation};
use crate::provider::Status;

/// The command's name, as typed after the slash.
pub const NAME: &str = "harness-guard";
/// The command's description in the host's command list.
pub const DESCRIPTION: &str =
    "Show what harness-guard saw in this session: whether it is guarding, \
     its settings and counts, and the latest client-query reports and inbox repairs";
/// How many of the session's latest reports and violations the command shows.
pub const LATEST: usize = 10;

/// `at` (ms since the epoch) as `YYYY-MM-DD HH:MM:SS` UTC.
pub fn utc(at: f64) -> String {
    if !at.is_finite() || at < 0.0 {
        return "?".into();
    }
    // Whole seconds since the epoch; a date before the year 292 billion.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let secs = (at / 1000.0) as u64;
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Civil from days (H. Hinnant's algorithm), for days since 1970-01-01.
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

/// The command's text.
pub fn text(status: &Status<'_>, reports: &[&InspectReport], violations: &[&Violation]) -> String {
    let mut out = String::new();
    let state = match (&status.last_fault, status.failed, status.gave_up) {
        (Some(f), _, true) => format!(
            "stood down after an internal fault in {} at {} UTC and gave up recovering (it recovered {}); \
             it guards nothing until the process restarts",
            escape(&f.point),
            utc(f.at),
            crate::recovery::bound_text()
        ),
        (Some(f), Some(_), false) => format!(
            "stood down after an internal fault in {} at {} UTC; it recovers on a fresh instance after a backoff",
            escape(&f.point),
            utc(f.at)
        ),
        (Some(f), None, _) => format!(
            "guarding (recovered {} time{} after internal faults; the last in {} at {} UTC)",
            status.recoveries,
            if status.recoveries == 1 { "" } else { "s" },
            escape(&f.point),
            utc(f.at)
        ),
        (None, Some(_), _) => "stood down after an internal fault".into(),
        (None, None, _) => "guarding".into(),
    };
    let _ = writeln!(out, "harness-guard {}: {state}", status.version);
    let i = &status.inspect;
    let c = i.counts;
    if i.installed {
        let _ = writeln!(
            out,
            "client inspect queries: guarded, deadline {} ms, refusal grace {} ms, {} waiting now",
            i.deadline_ms.unwrap_or_default(),
            i.refusal_grace_ms.unwrap_or_default(),
            i.in_flight
        );
    } else {
        let _ = writeln!(
            out,
            "client inspect queries: not guarded here (no cordisInspect registry, or the inspect half is off)"
        );
    }
    let _ = writeln!(
        out,
        "  rejected at the deadline {}, refusals surfaced {}, unbound answers refused {}, ended by disposal {}",
        c.deadline, c.refused, c.unbound_agent, c.disposed
    );
    let b = &status.inbox;
    let _ = writeln!(
        out,
        "inbox entries: {}, mode {}",
        if b.installed {
            "guarded"
        } else {
            "not guarded (the inbox half is off)"
        },
        b.mode.as_str()
    );
    let _ = writeln!(
        out,
        "  repaired {}, quarantined {}, observed {}",
        b.counts.repaired, b.counts.quarantined, b.counts.observed
    );
    if reports.is_empty() {
        let _ = writeln!(out, "no client-query reports in this session");
    } else {
        let _ = writeln!(out, "latest client-query reports in this session:");
        for r in reports {
            let why = match (r.kind, &r.reason) {
                ("refused", Some(reason)) => format!("the page refused ({})", escape(reason)),
                ("deadline", _) => format!("no page answered within {} ms", r.deadline_ms),
                ("unbound-agent", _) => "a page answer without a bound agent was refused".into(),
                _ => "ended when the guard was stopped".into(),
            };
            let _ = writeln!(
                out,
                "  {} {} {}.{} (request {}): {why}",
                utc(r.at),
                r.kind,
                escape(&r.provider_id),
                escape(&r.method_name),
                escape(&r.request_id)
            );
        }
    }
    if violations.is_empty() {
        let _ = writeln!(out, "no inbox violations in this session");
    } else {
        let _ = writeln!(out, "latest inbox violations in this session:");
        for v in violations {
            let place = match &v.target {
                Some(t) => format!("{} {}[{}]", v.origin, escape(t), v.index),
                None => format!("{} position {}", v.origin, v.index),
            };
            let _ = writeln!(
                out,
                "  {} {place}: {} “{}” {} (value {})",
                utc(v.at),
                v.value_kind,
                v.preview,
                v.action,
                v.value_id
            );
        }
    }
    out.pop();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{InboxConfig, InspectConfig, Mode};
    use crate::ledger::{InboxCounts, InspectCounts};
    use crate::provider::{InboxStatus, InspectStatus, LastFault};

    #[test]
    fn dates_read_as_utc() {
        assert_eq!(utc(0.0), "1970-01-01 00:00:00");
        assert_eq!(utc(1_796_153_645_000.0), "2026-12-01 19:34:05");
        assert_eq!(utc(951_782_400_000.0), "2000-02-29 00:00:00");
        assert_eq!(utc(f64::NAN), "?");
    }

    /// Every day from 1970 into the 26th century, against a calendar counted
    /// day by day (century and 400-year leap rules included).
    #[test]
    fn every_day_reads_as_a_counted_calendar_does() {
        let leap = |y: u64| (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        let (mut year, mut month, mut day) = (1970_u64, 1_u64, 1_u64);
        for days in 0..(531_u64 * 366) {
            let secs = days * 86_400 + (days * 7_919) % 86_400;
            let want = format!(
                "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
                secs % 86_400 / 3600,
                secs % 3600 / 60,
                secs % 60
            );
            #[allow(clippy::cast_precision_loss)]
            let at = (secs * 1000) as f64;
            assert_eq!(utc(at), want, "{days} days after the epoch");
            let length = match month {
                2 if leap(year) => 29,
                2 => 28,
                4 | 6 | 9 | 11 => 30,
                _ => 31,
            };
            day += 1;
            if day > length {
                (day, month) = (1, month + 1);
            }
            if month > 12 {
                (month, year) = (1, year + 1);
            }
        }
    }

    fn status<'a>(
        inspect: &'a InspectCounts,
        inbox: &'a InboxCounts,
        fault: Option<LastFault>,
        failed: Option<&'a str>,
    ) -> Status<'a> {
        let config = InspectConfig {
            enabled: true,
            deadline_ms: 3000,
            refusal_grace_ms: 1000,
        };
        Status {
            version: "0.1.0",
            failed,
            recoveries: u32::from(fault.is_some() && failed.is_none()),
            last_fault: fault,
            gave_up: false,
            inspect: InspectStatus::new(Some(&config), 2, inspect),
            inbox: InboxStatus::new(
                &InboxConfig {
                    enabled: true,
                    mode: Mode::Repair,
                    preview_chars: 80,
                },
                true,
                inbox,
            ),
        }
    }

    /// Each kind of report says, in words, why its query ended.
    #[test]
    fn each_report_kind_says_why_its_query_ended() {
        let counts = (InspectCounts::default(), InboxCounts::default());
        for (kind, reason, why) in [
            ("deadline", None, "no page answered within 3000 ms"),
            (
                "refused",
                Some("method-missing"),
                "the page refused (method-missing)",
            ),
            (
                "unbound-agent",
                None,
                "a page answer without a bound agent was refused",
            ),
            ("disposed", None, "ended when the guard was stopped"),
        ] {
            let report = InspectReport {
                kind,
                request_id: "inspect-1".into(),
                session_id: Some("s".into()),
                provider_id: "P".into(),
                method_name: "m".into(),
                deadline_ms: 3000,
                at: 0.0,
                reason: reason.map(Into::into),
            };
            let text = text(&status(&counts.0, &counts.1, None, None), &[&report], &[]);
            assert!(
                text.contains(&format!("{kind} P.m (request inspect-1): {why}\n")),
                "{kind}: {text}"
            );
        }
    }

    #[test]
    fn the_text_says_what_is_guarded_and_the_sessions_records() {
        let inspect = InspectCounts {
            deadline: 1,
            ..InspectCounts::default()
        };
        let inbox = InboxCounts {
            repaired: 1,
            ..InboxCounts::default()
        };
        let report = InspectReport {
            kind: "refused",
            request_id: "inspect-3\n".into(),
            session_id: Some("s".into()),
            provider_id: "Theme".into(),
            method_name: "listTokens".into(),
            deadline_ms: 3000,
            at: 0.0,
            reason: Some("provider-missing\u{202e}".into()),
        };
        let violation = Violation {
            at: 0.0,
            origin: "claimed",
            session_id: Some("s".into()),
            seq: None,
            target: Some("next-step".into()),
            index: 0,
            value_kind: "string",
            preview: "a bare string".into(),
            action: "repaired",
            value_id: 4,
            repeat: false,
        };
        let text = text(
            &status(&inspect, &inbox, None, None),
            &[&report],
            &[&violation],
        );
        assert!(
            text.starts_with("harness-guard 0.1.0: guarding\n"),
            "{text}"
        );
        assert!(
            text.contains("deadline 3000 ms, refusal grace 1000 ms, 2 waiting now"),
            "{text}"
        );
        assert!(text.contains("rejected at the deadline 1,"), "{text}");
        assert!(
            text.contains("inbox entries: guarded, mode repair"),
            "{text}"
        );
        assert!(
            text.contains("repaired 1, quarantined 0, observed 0"),
            "{text}"
        );
        assert!(
            text.contains("refused Theme.listTokens (request inspect-3\\n): the page refused (provider-missing\\u202e)"),
            "escaped as log lines are: {text}"
        );
        assert!(
            text.contains("claimed next-step[0]: string “a bare string” repaired (value 4)"),
            "{text}"
        );
        assert!(!text.ends_with('\n'));
    }

    #[test]
    fn the_text_says_when_the_guard_stood_down_or_recovered() {
        let (a, b) = (InspectCounts::default(), InboxCounts::default());
        let fault = LastFault {
            point: "claim".into(),
            at: 0.0,
        };
        let down = text(&status(&a, &b, Some(fault.clone()), Some("x")), &[], &[]);
        assert!(down.contains("stood down after an internal fault in claim at 1970-01-01 00:00:00 UTC; it recovers"), "{down}");
        let up = text(&status(&a, &b, Some(fault), None), &[], &[]);
        assert!(
            up.contains("guarding (recovered 1 time after internal faults; the last in claim"),
            "{up}"
        );
        assert!(
            up.contains("no client-query reports in this session"),
            "{up}"
        );
        assert!(up.contains("no inbox violations in this session"), "{up}");
    }
}
