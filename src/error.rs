//! The crate's one error type, with the stable codes JavaScript branches on.

use std::fmt;

/// Why a page's answer did not settle a client query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The page answered `{ ok: false, reason, message }`.
    Page {
        /// The page's `reason`, verbatim.
        reason: String,
        /// The page's `message`, verbatim.
        message: String,
    },
    /// The page answered `ok: true`, but the registry's output validation refused the data.
    InvalidOutput {
        /// The violations, from the same validator the registry uses, when it could be reached.
        detail: Option<String>,
    },
}

impl Refusal {
    /// The short reason recorded in reports.
    pub fn reason(&self) -> &str {
        match self {
            Refusal::Page { reason, .. } => reason,
            Refusal::InvalidOutput { .. } => "invalid-output",
        }
    }
}

/// Everything that can go wrong, each with a stable [`Error::code`].
#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// A config value is outside what the field allows.
    InvalidConfig {
        /// Dotted path of the field, e.g. `inspect.deadlineMs`.
        field: String,
        /// The offending value, rendered for people.
        value: String,
        /// What the field allows.
        expected: String,
    },
    /// The host object lacks what a guard relies on; the guard was not installed.
    HostShape {
        /// What was inspected, e.g. `cordisInspect`.
        target: &'static str,
        /// The missing members.
        missing: Vec<&'static str>,
    },
    /// No page answered a client query before its deadline.
    InspectDeadline {
        /// The provider asked.
        provider: String,
        /// The method asked.
        method: String,
        /// The deadline that expired.
        deadline_ms: u32,
    },
    /// Every page that answered refused, and the refusal grace ran out.
    InspectRefused {
        /// The provider asked.
        provider: String,
        /// The method asked.
        method: String,
        /// The first refusal seen.
        refusal: Refusal,
    },
    /// The guard was disposed while the query waited.
    GuardDisposed {
        /// The provider asked.
        provider: String,
        /// The method asked.
        method: String,
    },
    /// The guard stood down after a fault of its own while the query waited.
    GuardFailed,
    /// The guard stands down after a fault of its own (until it recovers, or for
    /// good once it recovered too often).
    StoodDown,
    /// An input to the guard's host inspect provider is outside what it allows.
    InvalidInput {
        /// The input field, e.g. `limit`.
        field: &'static str,
        /// The offending value, rendered for people.
        value: String,
        /// What the field allows.
        expected: &'static str,
    },
}

impl Error {
    /// The stable code carried as `error.code` in JavaScript.
    pub fn code(&self) -> &'static str {
        match self {
            Error::InvalidConfig { .. } => "HARNESS_GUARD_INVALID_CONFIG",
            Error::HostShape { .. } => "HARNESS_GUARD_HOST_SHAPE",
            Error::InspectDeadline { .. } => "INSPECT_CLIENT_DEADLINE",
            Error::InspectRefused { .. } => "INSPECT_CLIENT_REFUSED",
            Error::GuardDisposed { .. } => "INSPECT_CLIENT_GUARD_DISPOSED",
            Error::GuardFailed => "INSPECT_CLIENT_GUARD_FAILED",
            Error::StoodDown => "HARNESS_GUARD_FAILED",
            Error::InvalidInput { .. } => "HARNESS_GUARD_INVALID_INPUT",
        }
    }
}

/// What the model should do instead of waiting, shared by every client-query rejection.
const INSTEAD: &str = "Do not retry platform:\"client\" queries here: read the source, or use a platform:\"host\" provider from cordis_inspect_list instead.";

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidConfig {
                field,
                value,
                expected,
            } => write!(
                f,
                "invalid harness-guard config: {field} is {value}, expected {expected}"
            ),
            Error::HostShape { target, missing } => write!(
                f,
                "{target} lacks {} that harness-guard relies on; left untouched",
                listed(missing)
            ),
            // The three client-query messages are read by the model; their wording is
            // part of the public contract.
            Error::InspectDeadline {
                provider,
                method,
                deadline_ms,
            } => write!(
                f,
                "Client inspect query {provider}.{method} got no answer from any page within {deadline_ms}ms. \
                 Client Inspect Providers only run inside a live browser page, so a session with no page open \
                 — a subagent, a teammate, a headless or ACP run — has nobody to answer it. {INSTEAD}"
            ),
            Error::InspectRefused {
                provider,
                method,
                refusal: Refusal::Page { reason, message },
            } => write!(
                f,
                "Client inspect query {provider}.{method} was refused by the page: {reason}: {message}. \
                 The page that answered cannot serve this query, so asking again will get the same refusal. {INSTEAD}"
            ),
            Error::InspectRefused {
                provider,
                method,
                refusal: Refusal::InvalidOutput { detail: Some(detail) },
            } => write!(
                f,
                "Client inspect query {provider}.{method} was refused: the page's answer failed output validation: \
                 {detail}. The registry discards such answers, so asking again will get the same refusal. {INSTEAD}"
            ),
            Error::InspectRefused {
                provider,
                method,
                refusal: Refusal::InvalidOutput { detail: None },
            } => write!(
                f,
                "Client inspect query {provider}.{method} was refused: the page's answer failed output validation \
                 against the method's outputSchema, so the registry discarded it. {INSTEAD}"
            ),
            Error::GuardDisposed { provider, method } => write!(
                f,
                "Client inspect query {provider}.{method} was abandoned because harness-guard was stopped while it \
                 waited for a page. {INSTEAD}"
            ),
            Error::GuardFailed => write!(
                f,
                "Client inspect query abandoned: harness-guard stood down after an internal fault while the query \
                 waited for a page, and cancelled it; it guards again once it recovered. {INSTEAD}"
            ),
            Error::StoodDown => f.write_str(
                "harness-guard stood down after an internal fault of its own and guards nothing until it recovers on a \
                 fresh WebAssembly instance (see recoveries and lastFault)",
            ),
            Error::InvalidInput {
                field,
                value,
                expected,
            } => write!(
                f,
                "HarnessGuard rejected input: {field} is {value}, expected {expected}"
            ),
        }
    }
}

impl std::error::Error for Error {}

/// `items` separated by `, ` (written out: `join`'s generic code is a kilobyte of `.wasm`).
pub fn listed(items: &[&str]) -> String {
    let mut out = String::new();
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(item);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_read_as_written_out() {
        assert_eq!(listed(&[]), "");
        assert_eq!(listed(&["ctx.on"]), "ctx.on");
        assert_eq!(listed(&["a", "b", "c"]), "a, b, c");
    }

    #[test]
    fn deadline_message_is_the_contract_text() {
        let e = Error::InspectDeadline {
            provider: "Theme".into(),
            method: "listTokens".into(),
            deadline_ms: 15000,
        };
        assert_eq!(
            e.to_string(),
            "Client inspect query Theme.listTokens got no answer from any page within 15000ms. Client Inspect \
             Providers only run inside a live browser page, so a session with no page open — a subagent, a \
             teammate, a headless or ACP run — has nobody to answer it. Do not retry platform:\"client\" queries \
             here: read the source, or use a platform:\"host\" provider from cordis_inspect_list instead."
        );
        assert_eq!(e.code(), "INSPECT_CLIENT_DEADLINE");
    }

    #[test]
    fn refusal_message_carries_reason_and_message_verbatim() {
        let e = Error::InspectRefused {
            provider: "Service".into(),
            method: "listService".into(),
            refusal: Refusal::Page {
                reason: "provider-error".into(),
                message: "no catalogued Service named \"agentPresets\"".into(),
            },
        };
        let text = e.to_string();
        assert!(text.contains("provider-error: no catalogued Service named \"agentPresets\""));
        assert!(text.contains("cordis_inspect_list"));
        assert_eq!(e.code(), "INSPECT_CLIENT_REFUSED");
    }

    #[test]
    fn invalid_output_names_the_violation_when_known() {
        let with = Error::InspectRefused {
            provider: "Theme".into(),
            method: "listTokens".into(),
            refusal: Refusal::InvalidOutput {
                detail: Some("output.count must be number".into()),
            },
        };
        assert!(with
            .to_string()
            .contains("failed output validation: output.count must be number."));
        let without = Error::InspectRefused {
            provider: "Theme".into(),
            method: "listTokens".into(),
            refusal: Refusal::InvalidOutput { detail: None },
        };
        assert!(without
            .to_string()
            .contains("against the method's outputSchema"));
        assert_eq!(with.code(), without.code());
    }

    #[test]
    fn codes_are_distinct() {
        let all = [
            Error::InvalidConfig {
                field: "f".into(),
                value: "v".into(),
                expected: "e".into(),
            },
            Error::HostShape {
                target: "t",
                missing: vec!["query"],
            },
            Error::InspectDeadline {
                provider: "P".into(),
                method: "M".into(),
                deadline_ms: 1,
            },
            Error::InspectRefused {
                provider: "P".into(),
                method: "M".into(),
                refusal: Refusal::InvalidOutput { detail: None },
            },
            Error::GuardDisposed {
                provider: "P".into(),
                method: "M".into(),
            },
        ];
        let mut codes: Vec<_> = all.iter().map(Error::code).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), all.len());
    }

    #[test]
    fn own_errors_read_lowercase_without_trailing_period() {
        let e = Error::InvalidConfig {
            field: "inspect.deadlineMs".into(),
            value: "0".into(),
            expected: "an integer in 1..=2147483647".into(),
        };
        let s = e.to_string();
        assert!(s.starts_with("invalid harness-guard config: inspect.deadlineMs is 0"));
        assert!(!s.ends_with('.'));
    }

    #[test]
    fn a_refusal_reports_its_reason() {
        let page = Refusal::Page {
            reason: "provider-error".into(),
            message: "m".into(),
        };
        assert_eq!(page.reason(), "provider-error");
        assert_eq!(
            Refusal::InvalidOutput { detail: None }.reason(),
            "invalid-output"
        );
    }
}
