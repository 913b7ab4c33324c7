//! Property tests of the pure core, run natively with proptest.
//!
//! **Config** (`config::parse`): every valid config, written with any subset of
//! its fields, in any key order, with `null`/`undefined` where a default applies,
//! parses to the config the contract's defaults give (a missing `refusalGraceMs`
//! is `min(1000, deadlineMs)`), and that config written out in full parses back to
//! itself. A valid config with one thing wrong (a number out of range, fractional,
//! `NaN`, infinite, a string or boolean where a number goes, a bad mode, a
//! non-boolean flag, a non-object section, an unknown key at any level, a grace
//! above the deadline) is refused with `HARNESS_GUARD_INVALID_CONFIG` naming that
//! field's dotted path, the offending value and what the field allows.
//! **Classification** (`inbox`): every `u32` shape code decodes without panicking
//! and reads only its documented bits; every code the boundary's `shapeCode` can
//! produce decodes to a probe that encodes back to the same code; an entry is a
//! message exactly when its fields are those of a usable message (for the
//! boundary's codes: exactly `MESSAGE_CODE`), a message is kept in every mode and
//! nothing else is; report mode never drops or repairs, quarantine never repairs.
//! **Flights** (`flights::Flights`): random sequences of begin, settle, refuse
//! (from the asking agent or another), clock ticks with bounded expiry, and
//! disposal are checked against a
//! small reference model: each flight ends at most once and lands exactly once,
//! the timer is armed (`next_due` is `Some`) exactly while a flight waits and
//! names the earliest due time, no flight ends before it is due (deadline, or the
//! first refusal plus its grace capped at the deadline, less the 1 ms timer slack)
//! and none stays waiting once due, the table's size follows the model throughout
//! and the table is empty once everything has landed.
//!
//! Each block prints how many cases it ran and its seed; `PROPTEST_RNG_SEED=<seed>`
//! replays a run, `PROPTEST_CASES=<n>` runs every block with `n` cases.
#![cfg(not(target_arch = "wasm32"))]
// Test code: the helpers outside `#[test]` functions report failures by panicking.
#![allow(clippy::panic, clippy::indexing_slicing)]

use std::cell::Cell;
use std::collections::hash_map::RandomState;
use std::fmt::Debug;
use std::hash::{BuildHasher, Hasher};

use proptest::prelude::*;
use proptest::test_runner::{RngSeed, TestCaseResult, TestRunner};

use harness_guard::config::{self, Config, InboxConfig, InspectConfig, Mode, Raw};
use harness_guard::error::{Error, Refusal};
use harness_guard::flights::{Ending, FlightKey, Flights, Landed, Query, RefusalEffect};
use harness_guard::inbox::{self, Action, Class, Field, Probe, MESSAGE_CODE};

/// Run `test` on `cases` values of `strategy`, then print how many ran and the seed.
fn check<S>(name: &str, cases: u32, strategy: S, test: impl Fn(S::Value) -> TestCaseResult)
where
    S: Strategy,
    S::Value: Debug,
{
    let defaults = ProptestConfig::default();
    let seed = match defaults.rng_seed {
        RngSeed::Fixed(seed) => seed,
        RngSeed::Random => {
            let mut h = RandomState::new().build_hasher();
            h.write(name.as_bytes());
            h.finish()
        }
    };
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(cases);
    let config = ProptestConfig {
        cases,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(seed),
        ..defaults
    };
    let ran = Cell::new(0usize);
    let result = TestRunner::new(config).run(&strategy, |value| {
        ran.set(ran.get() + 1);
        test(value)
    });
    match result {
        Ok(()) => println!("{name}: {} cases passed (seed {seed})", ran.get()),
        Err(e) => panic!(
            "{name} failed ({} runs, shrinking included); replay with PROPTEST_RNG_SEED={seed}\n{e}",
            ran.get()
        ),
    }
}

/// Generators of the inputs, one module per property group.
mod gen {
    /// Valid configs as JavaScript may write them, and single faults to write into them.
    pub mod configs {
        use crate::*;

        /// A config field as JavaScript may write it: left out, `null`/`undefined`, or a value.
        #[derive(Debug, Clone, Copy)]
        pub enum Slot<T> {
            Missing,
            Null,
            Given(T),
        }

        impl<T: Copy> Slot<T> {
            pub fn or(self, default: T) -> T {
                match self {
                    Slot::Given(v) => v,
                    Slot::Missing | Slot::Null => default,
                }
            }
        }

        fn slot<T: Debug + Clone + 'static>(
            value: impl Strategy<Value = T>,
        ) -> impl Strategy<Value = Slot<T>> {
            prop_oneof![
                2 => Just(Slot::Missing),
                1 => Just(Slot::Null),
                4 => value.prop_map(Slot::Given),
            ]
        }

        #[derive(Debug, Clone, Copy)]
        pub struct InspectSpec {
            pub enabled: Slot<bool>,
            pub deadline: Slot<u32>,
            /// Written as `-0` rather than `0` (JavaScript can hand either over).
            pub grace: Slot<(u32, bool)>,
        }

        #[derive(Debug, Clone, Copy)]
        pub struct InboxSpec {
            pub enabled: Slot<bool>,
            pub mode: Slot<Mode>,
            pub preview: Slot<u32>,
        }

        /// A valid config: which fields are written, and how.
        #[derive(Debug, Clone)]
        pub struct ConfigSpec {
            pub root: Slot<()>,
            pub inspect: Slot<InspectSpec>,
            pub inbox: Slot<InboxSpec>,
            /// Shuffles the keys of every object.
            pub order: u64,
        }

        /// An integer in `min..=max`, often one of the bounds.
        pub fn integer(min: u32, max: u32) -> BoxedStrategy<u32> {
            prop_oneof![
                1 => Just(min),
                1 => Just(max),
                1 => Just(max.saturating_sub(1).max(min)),
                4 => min..=max,
            ]
            .boxed()
        }

        fn inspect_spec() -> impl Strategy<Value = InspectSpec> {
            (
                slot(any::<bool>()),
                slot(prop_oneof![
                    integer(1, config::MAX_TIMER_MS),
                    integer(1, 2_000)
                ]),
            )
                .prop_flat_map(|(enabled, deadline)| {
                    let max = deadline.or(config::DEFAULT_DEADLINE_MS);
                    (
                        Just(enabled),
                        Just(deadline),
                        slot((integer(0, max), any::<bool>())),
                    )
                })
                .prop_map(|(enabled, deadline, grace)| InspectSpec {
                    enabled,
                    deadline,
                    grace,
                })
        }

        fn inbox_spec() -> impl Strategy<Value = InboxSpec> {
            (
                slot(any::<bool>()),
                slot(prop_oneof![
                    Just(Mode::Repair),
                    Just(Mode::Quarantine),
                    Just(Mode::Report)
                ]),
                slot(integer(1, config::MAX_PREVIEW_CHARS)),
            )
                .prop_map(|(enabled, mode, preview)| InboxSpec {
                    enabled,
                    mode,
                    preview,
                })
        }

        pub fn spec() -> impl Strategy<Value = ConfigSpec> {
            (
            prop_oneof![3 => Just(Slot::Given(())), 1 => Just(Slot::Missing), 1 => Just(Slot::Null)],
            slot(inspect_spec()),
            slot(inbox_spec()),
            any::<u64>(),
        )
            .prop_map(|(root, inspect, inbox, order)| ConfigSpec {
                root,
                inspect,
                inbox,
                order,
            })
        }

        fn num(n: u32) -> Raw {
            Raw::Number(f64::from(n))
        }

        /// Entries of an object from its slots, keys in an order set by `order`.
        fn object(order: u64, entries: Vec<(&str, Slot<Raw>)>) -> Raw {
            let mut kept: Vec<(String, Raw)> = entries
                .into_iter()
                .filter_map(|(key, slot)| match slot {
                    Slot::Missing => None,
                    Slot::Null => Some((key.to_owned(), Raw::Absent)),
                    Slot::Given(raw) => Some((key.to_owned(), raw)),
                })
                .collect();
            // A cheap deterministic shuffle: rotate, and reverse on one bit.
            if !kept.is_empty() {
                let len = kept.len();
                kept.rotate_left((order % len as u64) as usize);
                if order & 0x100 != 0 {
                    kept.reverse();
                }
            }
            Raw::Object(kept)
        }

        fn map<T: Copy>(slot: Slot<T>, f: impl FnOnce(T) -> Raw) -> Slot<Raw> {
            match slot {
                Slot::Missing => Slot::Missing,
                Slot::Null => Slot::Null,
                Slot::Given(v) => Slot::Given(f(v)),
            }
        }

        impl ConfigSpec {
            /// The config as JavaScript would hand it over.
            pub fn raw(&self) -> Raw {
                let order = self.order;
                let inspect = match self.inspect {
                    Slot::Given(s) => Slot::Given(object(
                        order >> 9,
                        vec![
                            ("enabled", map(s.enabled, Raw::Bool)),
                            ("deadlineMs", map(s.deadline, num)),
                            (
                                "refusalGraceMs",
                                map(s.grace, |(g, negative_zero)| {
                                    if g == 0 && negative_zero {
                                        Raw::Number(-0.0)
                                    } else {
                                        num(g)
                                    }
                                }),
                            ),
                        ],
                    )),
                    Slot::Missing => Slot::Missing,
                    Slot::Null => Slot::Null,
                };
                let inbox = match self.inbox {
                    Slot::Given(s) => Slot::Given(object(
                        order >> 18,
                        vec![
                            ("enabled", map(s.enabled, Raw::Bool)),
                            ("mode", map(s.mode, |m| Raw::Str(m.as_str().into()))),
                            ("previewChars", map(s.preview, num)),
                        ],
                    )),
                    Slot::Missing => Slot::Missing,
                    Slot::Null => Slot::Null,
                };
                match self.root {
                    Slot::Given(()) => object(order, vec![("inspect", inspect), ("inbox", inbox)]),
                    Slot::Missing | Slot::Null => Raw::Absent,
                }
            }

            /// The config the contract's defaults give for it, computed field by field.
            pub fn expected(&self) -> Config {
                let (inspect, inbox) = match self.root {
                    Slot::Given(()) => (self.inspect, self.inbox),
                    _ => (Slot::Missing, Slot::Missing),
                };
                let inspect = match inspect {
                    Slot::Given(s) => {
                        let deadline_ms = s.deadline.or(15_000);
                        InspectConfig {
                            enabled: s.enabled.or(true),
                            deadline_ms,
                            refusal_grace_ms: s.grace.or((deadline_ms.min(1_000), false)).0,
                        }
                    }
                    _ => InspectConfig {
                        enabled: true,
                        deadline_ms: 15_000,
                        refusal_grace_ms: 1_000,
                    },
                };
                let inbox = match inbox {
                    Slot::Given(s) => InboxConfig {
                        enabled: s.enabled.or(true),
                        mode: s.mode.or(Mode::Repair),
                        preview_chars: s.preview.or(80),
                    },
                    _ => InboxConfig {
                        enabled: true,
                        mode: Mode::Repair,
                        preview_chars: 80,
                    },
                };
                Config { inspect, inbox }
            }
        }

        /// A config written out in full, every field explicit.
        pub fn write_out(c: &Config) -> Raw {
            let entry = |k: &str, v: Raw| (k.to_owned(), v);
            Raw::Object(vec![
                entry(
                    "inspect",
                    Raw::Object(vec![
                        entry("enabled", Raw::Bool(c.inspect.enabled)),
                        entry("deadlineMs", num(c.inspect.deadline_ms)),
                        entry("refusalGraceMs", num(c.inspect.refusal_grace_ms)),
                    ]),
                ),
                entry(
                    "inbox",
                    Raw::Object(vec![
                        entry("enabled", Raw::Bool(c.inbox.enabled)),
                        entry("mode", Raw::Str(c.inbox.mode.as_str().into())),
                        entry("previewChars", num(c.inbox.preview_chars)),
                    ]),
                ),
            ])
        }

        /// Where a fault goes.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Level {
            Root,
            Inspect,
            Inbox,
        }

        impl Level {
            pub fn path(self) -> &'static str {
                match self {
                    Level::Root => "config",
                    Level::Inspect => "inspect",
                    Level::Inbox => "inbox",
                }
            }

            pub fn known(self) -> &'static [&'static str] {
                match self {
                    Level::Root => &["inspect", "inbox"],
                    Level::Inspect => &["enabled", "deadlineMs", "refusalGraceMs"],
                    Level::Inbox => &["enabled", "mode", "previewChars"],
                }
            }
        }

        /// The numeric fields, with their ranges.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum NumField {
            Deadline,
            Grace,
            Preview,
        }

        /// One thing wrong with an otherwise valid config.
        #[derive(Debug, Clone)]
        pub enum Fault {
            /// A numeric field holds `value` (out of its range, or not an integer).
            Number(NumField, Raw),
            /// A flag holds a non-boolean.
            Flag(Level, Raw),
            /// `inbox.mode` holds anything but the three spellings.
            Mode(Raw),
            /// A section (or the root) is not an object.
            NotObject(Level, Raw),
            /// A key the level does not know.
            Unknown(Level, String, Raw),
        }

        fn any_string() -> impl Strategy<Value = String> {
            prop_oneof![
                Just(String::new()),
                "[a-zA-Z0-9 ]{0,12}",
                "\\PC{0,8}",
                (1usize..200).prop_map(|n| "x".repeat(n)),
            ]
        }

        fn other_kind() -> impl Strategy<Value = Raw> {
            prop::sample::select(vec!["array", "function", "symbol", "bigint"])
                .prop_map(|k| Raw::Other(k.into()))
        }

        /// Values that are not numbers.
        fn non_number() -> impl Strategy<Value = Raw> {
            prop_oneof![
                any::<bool>().prop_map(Raw::Bool),
                any_string().prop_map(Raw::Str),
                (0u32..100_000).prop_map(|n| Raw::Str(n.to_string())),
                other_kind(),
                Just(Raw::Object(vec![])),
            ]
        }

        /// Numbers outside `min..=max` or not integers, and non-numbers.
        pub fn bad_number(min: u32, max: u32) -> BoxedStrategy<Raw> {
            let (lo, hi) = (f64::from(min), f64::from(max));
            let mut below = vec![Just(-1.0).boxed(), (-1e12..-0.000_001f64).boxed()];
            if min > 0 {
                below.push(Just(f64::from(min - 1)).boxed());
                below.push(Just(0.0).boxed());
                below.push(Just(-0.0).boxed());
            }
            prop_oneof![
                prop::strategy::Union::new(below).prop_map(Raw::Number),
                prop_oneof![
                    Just(hi + 1.0),
                    (hi + 1.0..1e15),
                    Just(1e300),
                    Just(f64::MAX),
                    Just(f64::from(u32::MAX) + 1.0),
                ]
                .prop_map(Raw::Number),
                // Fractions inside the range, and just past an integer bound.
                (lo..=hi, 0.001..0.999f64)
                    .prop_map(move |(n, f)| Raw::Number(
                        (n.floor() + f).min(hi - 0.0001).max(lo + 0.0001)
                    ))
                    .prop_filter(
                        "a fraction",
                        |r| matches!(r, Raw::Number(n) if n.fract() != 0.0)
                    ),
                Just(Raw::Number(hi + 2f64.powi(-20))),
                Just(Raw::Number(f64::NAN)),
                Just(Raw::Number(f64::INFINITY)),
                Just(Raw::Number(f64::NEG_INFINITY)),
                non_number(),
            ]
            .boxed()
        }

        /// A key not in `known`: near misses of the known keys, and arbitrary ones.
        fn unknown_key(level: Level) -> impl Strategy<Value = String> {
            let known = level.known();
            let mut near: Vec<String> = Vec::new();
            for k in known {
                near.push(k.to_uppercase());
                near.push(format!("{k}s"));
                near.push(k.get(..k.len() - 1).unwrap_or_default().to_owned());
                near.push(format!(" {k}"));
            }
            near.extend(["onReport", "deadline", "inspct", "modes", ""].map(String::from));
            prop_oneof![prop::sample::select(near), "[a-zA-Z_$][a-zA-Z0-9_$]{0,12}"]
                .prop_filter("not a known key", move |k| !known.contains(&k.as_str()))
        }

        fn any_raw() -> impl Strategy<Value = Raw> {
            prop_oneof![
                Just(Raw::Absent),
                non_number(),
                any::<f64>().prop_map(Raw::Number),
                Just(Raw::Object(vec![("x".into(), Raw::Number(1.0))])),
            ]
        }

        pub fn fault(spec: &ConfigSpec) -> BoxedStrategy<Fault> {
            // The grace is checked against the deadline the config ends up with.
            let deadline = spec.expected().inspect.deadline_ms;
            let level = || prop_oneof![Just(Level::Root), Just(Level::Inspect), Just(Level::Inbox)];
            prop_oneof![
                bad_number(1, config::MAX_TIMER_MS)
                    .prop_map(|r| Fault::Number(NumField::Deadline, r)),
                bad_number(0, deadline).prop_map(|r| Fault::Number(NumField::Grace, r)),
                bad_number(1, config::MAX_PREVIEW_CHARS)
                    .prop_map(|r| Fault::Number(NumField::Preview, r)),
                (
                    prop_oneof![Just(Level::Inspect), Just(Level::Inbox)],
                    prop_oneof![
                        any_string().prop_map(Raw::Str),
                        any::<f64>().prop_map(Raw::Number),
                        other_kind(),
                        Just(Raw::Object(vec![]))
                    ]
                )
                    .prop_map(|(l, r)| Fault::Flag(l, r)),
                prop_oneof![
                    any_string()
                        .prop_filter("not a mode", |s| !["repair", "quarantine", "report"]
                            .contains(&s.as_str()))
                        .prop_map(Raw::Str),
                    prop::sample::select(vec!["Repair", "REPORT", " quarantine", "repair ", "fix"])
                        .prop_map(|s| Raw::Str(s.into())),
                    any::<f64>().prop_map(Raw::Number),
                    any::<bool>().prop_map(Raw::Bool),
                    other_kind(),
                    Just(Raw::Object(vec![])),
                ]
                .prop_map(Fault::Mode),
                (
                    level(),
                    prop_oneof![
                        any::<f64>().prop_map(Raw::Number),
                        any::<bool>().prop_map(Raw::Bool),
                        any_string().prop_map(Raw::Str),
                        other_kind()
                    ]
                )
                    .prop_map(|(l, r)| Fault::NotObject(l, r)),
                level()
                    .prop_flat_map(|l| (Just(l), unknown_key(l), any_raw()))
                    .prop_map(|(l, k, r)| Fault::Unknown(l, k, r)),
            ]
            .boxed()
        }

        /// The entries of the object at `key` of `entries`, made an object if it was not one.
        fn section<'a>(
            entries: &'a mut Vec<(String, Raw)>,
            key: &str,
        ) -> &'a mut Vec<(String, Raw)> {
            let at = match entries.iter().position(|(k, _)| k == key) {
                Some(at) => at,
                None => {
                    entries.push((key.to_owned(), Raw::Absent));
                    entries.len() - 1
                }
            };
            let slot = &mut entries[at].1;
            if !matches!(slot, Raw::Object(_)) {
                *slot = Raw::Object(vec![]);
            }
            match slot {
                Raw::Object(inner) => inner,
                _ => unreachable!(),
            }
        }

        /// Set `key` of an object's entries, replacing what was there (in place).
        fn set(entries: &mut Vec<(String, Raw)>, key: &str, value: Raw) {
            match entries.iter_mut().find(|(k, _)| k == key) {
                Some((_, v)) => *v = value,
                None => entries.push((key.to_owned(), value)),
            }
        }

        impl Fault {
            /// The spec's raw config with this fault written in; the dotted path it must
            /// be reported under, the value, and what the error must say is allowed.
            pub fn apply(&self, spec: &ConfigSpec) -> (Raw, String, Raw, Expect) {
                let mut root = match spec.raw() {
                    Raw::Object(entries) => entries,
                    _ => vec![],
                };
                let deadline = spec.expected().inspect.deadline_ms;
                let range =
                    |min: u32, max: u32| Expect::Exactly(format!("an integer in {min}..={max}"));
                let (path, value, expect) = match self {
                    Fault::Number(field, value) => {
                        let (sec, key, expect) = match field {
                            NumField::Deadline => {
                                ("inspect", "deadlineMs", range(1, config::MAX_TIMER_MS))
                            }
                            NumField::Grace => ("inspect", "refusalGraceMs", range(0, deadline)),
                            NumField::Preview => {
                                ("inbox", "previewChars", range(1, config::MAX_PREVIEW_CHARS))
                            }
                        };
                        set(section(&mut root, sec), key, value.clone());
                        (format!("{sec}.{key}"), value.clone(), expect)
                    }
                    Fault::Flag(level, value) => {
                        set(section(&mut root, level.path()), "enabled", value.clone());
                        (
                            format!("{}.enabled", level.path()),
                            value.clone(),
                            Expect::Exactly("true or false".into()),
                        )
                    }
                    Fault::Mode(value) => {
                        set(section(&mut root, "inbox"), "mode", value.clone());
                        (
                            "inbox.mode".into(),
                            value.clone(),
                            Expect::Mentions(vec!["\"repair\"", "\"quarantine\"", "\"report\""]),
                        )
                    }
                    Fault::NotObject(Level::Root, value) => {
                        return (
                            value.clone(),
                            "config".into(),
                            value.clone(),
                            Expect::Exactly("an object".into()),
                        );
                    }
                    Fault::NotObject(level, value) => {
                        set(&mut root, level.path(), value.clone());
                        (
                            level.path().into(),
                            value.clone(),
                            Expect::Exactly("an object".into()),
                        )
                    }
                    Fault::Unknown(level, key, value) => {
                        let (entries, path) = match level {
                            Level::Root => (&mut root, key.clone()),
                            _ => (
                                section(&mut root, level.path()),
                                format!("{}.{key}", level.path()),
                            ),
                        };
                        // Anywhere among the known keys.
                        let at = (spec.order as usize) % (entries.len() + 1);
                        entries.insert(at, (key.clone(), value.clone()));
                        (
                            path,
                            value.clone(),
                            Expect::Mentions(level.known().to_vec()),
                        )
                    }
                };
                (Raw::Object(root), path, value, expect)
            }
        }

        /// What the error must say the field allows.
        #[derive(Debug, Clone)]
        pub enum Expect {
            Exactly(String),
            Mentions(Vec<&'static str>),
        }
    }

    /// Shape codes, in the layout the boundary's `shapeCode` writes.
    pub mod codes {
        use crate::*;

        /// The field codes the boundary's `fieldCode` produces; 3 ("equals the expected
        /// literal") only where there is a literal, which is `role` alone.
        const FIELD_CODES: [u32; 8] = [0, 1, 2, 4, 5, 6, 7, 8];
        const ROLE_CODES: [u32; 9] = [0, 1, 2, 3, 4, 5, 6, 7, 8];
        /// The type codes of `shapeCode` other than 10 (an object with its fields).
        const TYPE_CODES: [u32; 11] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11];

        /// Every code the boundary's `shapeCode` can produce, in order.
        pub fn boundary() -> Vec<u32> {
            let mut all = TYPE_CODES.to_vec();
            for id in FIELD_CODES {
                for role in ROLE_CODES {
                    for content in FIELD_CODES {
                        for source in FIELD_CODES {
                            all.push(10 | id << 4 | role << 8 | content << 12 | source << 16);
                        }
                    }
                }
            }
            all
        }

        /// Codes to decode: anything at all, object codes with arbitrary nibbles, and the
        /// boundary's codes with junk in the bits above them.
        pub fn arbitrary() -> impl Strategy<Value = u32> {
            prop_oneof![
                any::<u32>(),
                any::<u32>().prop_map(|c| (c & !0xf) | 10),
                prop::sample::select(boundary()),
                (prop::sample::select(boundary()), any::<u32>())
                    .prop_map(|(c, junk)| c | (junk << 20)),
            ]
        }

        /// The code of a field, in the layout `shapeCode` writes.
        pub fn field_code(field: &Field) -> u32 {
            match field {
                Field::Missing => 0,
                Field::Str {
                    empty: true,
                    expected: false,
                } => 1,
                Field::Str {
                    empty: false,
                    expected: false,
                } => 2,
                Field::Str {
                    empty: false,
                    expected: true,
                } => 3,
                Field::Str {
                    empty: true,
                    expected: true,
                } => panic!("no literal is empty: {field:?}"),
                Field::Array => 4,
                Field::Object {
                    kind_is_string: true,
                } => 5,
                Field::Object {
                    kind_is_string: false,
                } => 6,
                Field::Other => 7,
                Field::Unreadable => 8,
            }
        }

        /// The code of a probe, in the layout `shapeCode` writes.
        pub fn encode(probe: &Probe) -> u32 {
            match probe {
                Probe::String => 0,
                Probe::Number { finite: true } => 1,
                Probe::Number { finite: false } => 2,
                Probe::Boolean => 3,
                Probe::BigInt => 4,
                Probe::Null => 5,
                Probe::Undefined => 6,
                Probe::Symbol => 7,
                Probe::Function => 8,
                Probe::Array => 9,
                Probe::Object {
                    id,
                    role,
                    content,
                    source,
                } => {
                    10 | field_code(id) << 4
                        | field_code(role) << 8
                        | field_code(content) << 12
                        | field_code(source) << 16
                }
                Probe::Unreadable => 11,
            }
        }
    }

    /// Operation sequences on the flight table.
    pub mod ops {
        use crate::*;

        pub const GUARDS: u32 = 3;

        #[derive(Debug, Clone)]
        pub enum Sender {
            /// The agent that asked the flight's query (possibly none).
            Asker,
            /// Some agent, possibly the asker by chance.
            Agent(Option<String>),
        }

        /// Which flight an operation is about: mostly one still in the table, else any.
        #[derive(Debug, Clone)]
        pub struct Pick {
            pub index: prop::sample::Index,
            pub live: bool,
        }

        fn pick() -> impl Strategy<Value = Pick> {
            (any::<prop::sample::Index>(), prop::bool::weighted(0.8))
                .prop_map(|(index, live)| Pick { index, live })
        }

        #[derive(Debug, Clone)]
        pub enum Op {
            /// A query starts, asked by `asker`.
            Begin { query: Query, asker: Option<String> },
            /// The registry settles the flight (a valid answer, or the caller's cancellation).
            Settle { flight: Pick },
            /// A page refuses a flight's request (or a request no flight has).
            Refuse {
                flight: Option<Pick>,
                from: Sender,
                refusal: Refusal,
            },
            /// The clock moves on and the timer fires: at most `limit` flights end.
            Tick {
                advance: f64,
                limit: usize,
                land_now: bool,
            },
            /// A guard is disposed: its waiting flights end, and land.
            Dispose { guard: u32 },
            /// `n` queries start and are answered at once, as most are: the heap fills
            /// with stale entries and the table reuses its slots.
            Churn { n: u32, query: Query },
        }

        #[derive(Debug, Clone)]
        pub struct Run {
            pub start: f64,
            pub ops: Vec<Op>,
            /// Whether the final drain lets time run out (else every guard is disposed).
            pub drain_by_time: bool,
        }

        pub fn query() -> impl Strategy<Value = Query> {
            (
                0..GUARDS,
                prop_oneof![4 => 1u32..=300, 1 => 1u32..=3, 1 => 1_000u32..=20_000],
            )
                .prop_flat_map(|(guard, deadline_ms)| {
                    (
                        Just(guard),
                        Just(deadline_ms),
                        prop_oneof![Just(0), Just(deadline_ms), 0..=deadline_ms],
                    )
                })
                .prop_map(|(guard, deadline_ms, grace_ms)| Query {
                    guard,
                    deadline_ms,
                    grace_ms,
                })
        }

        fn agent() -> impl Strategy<Value = Option<String>> {
            prop_oneof![
                1 => Just(None),
                3 => (0u8..3).prop_map(|a| Some(format!("agent-{a}"))),
            ]
        }

        fn refusal() -> impl Strategy<Value = Refusal> {
            prop_oneof![
                (
                    prop::sample::select(vec![
                        "provider-missing",
                        "method-missing",
                        "provider-error"
                    ]),
                    any::<u16>()
                )
                    .prop_map(|(reason, n)| Refusal::Page {
                        reason: reason.into(),
                        message: format!("refusal {n}"),
                    }),
                prop::option::of(any::<u16>().prop_map(|n| format!("output.count {n}")))
                    .prop_map(|detail| Refusal::InvalidOutput { detail }),
            ]
        }

        fn op() -> impl Strategy<Value = Op> {
            prop_oneof![
                3 => (query(), agent())
                    .prop_map(|(query, asker)| Op::Begin { query, asker }),
                2 => pick().prop_map(|flight| Op::Settle { flight }),
                3 => (
                    prop::option::weighted(0.9, pick()),
                    prop_oneof![3 => Just(Sender::Asker), 1 => agent().prop_map(Sender::Agent)],
                    refusal(),
                )
                    .prop_map(|(flight, from, refusal)| Op::Refuse { flight, from, refusal }),
                3 => (
                    prop_oneof![
                        Just(0.0),
                        0.0..2.0f64,
                        (0u32..=200).prop_map(f64::from),
                        0.0..200.0f64,
                    ],
                    prop_oneof![3 => Just(usize::MAX), 2 => 0usize..=3],
                    prop::bool::weighted(0.8),
                )
                    .prop_map(|(advance, limit, land_now)| Op::Tick { advance, limit, land_now }),
                1 => (0..GUARDS).prop_map(|guard| Op::Dispose { guard }),
                1 => (1u32..=40, query()).prop_map(|(n, query)| Op::Churn { n, query }),
            ]
        }

        pub fn run() -> impl Strategy<Value = Run> {
            (
                prop_oneof![
                    Just(0.0),
                    (0u32..1_000_000).prop_map(f64::from),
                    0.0..1e7f64,
                ],
                prop::collection::vec(op(), 1..80),
                any::<bool>(),
            )
                .prop_map(|(start, ops, drain_by_time)| Run {
                    start,
                    ops,
                    drain_by_time,
                })
        }
    }
}

// ======================================================================
// Config: accepted values round-trip; rejected ones name field and range
// ======================================================================

#[test]
fn config_accepted_values_round_trip() {
    check("config round-trip", 2_000, gen::configs::spec(), |spec| {
        let raw = spec.raw();
        let parsed = config::parse(&raw);
        prop_assert_eq!(parsed.clone(), Ok(spec.expected()), "raw: {:?}", raw);
        let parsed = parsed.unwrap_or_default();
        prop_assert!(parsed.inspect.refusal_grace_ms <= parsed.inspect.deadline_ms);
        // Written out in full, the parsed config parses back to itself.
        prop_assert_eq!(config::parse(&gen::configs::write_out(&parsed)), Ok(parsed));
        // The programmatic options read the same two timings by the same rules.
        let timings = match &raw {
            Raw::Object(root) => match root.iter().find(|(k, _)| k == "inspect") {
                Some((_, Raw::Object(entries))) => entries
                    .iter()
                    .filter(|(k, _)| k != "enabled")
                    .cloned()
                    .collect(),
                _ => vec![],
            },
            _ => vec![],
        };
        let options = config::parse_inspect_options(&Raw::Object(timings));
        prop_assert_eq!(
            options,
            Ok(InspectConfig {
                enabled: true,
                ..parsed.inspect
            })
        );
        Ok(())
    });
}

#[test]
fn config_rejected_values_name_their_field_and_range() {
    let strategy = gen::configs::spec().prop_flat_map(|spec| {
        let fault = gen::configs::fault(&spec);
        (Just(spec), fault)
    });
    check("config rejection", 2_000, strategy, |(spec, fault)| {
        let (raw, path, value, expect) = fault.apply(&spec);
        let err = config::parse(&raw);
        let Err(err @ Error::InvalidConfig { .. }) = err else {
            return Err(TestCaseError::fail(format!(
                "accepted or wrong error: {err:?} for {raw:?}"
            )));
        };
        prop_assert_eq!(err.code(), "HARNESS_GUARD_INVALID_CONFIG");
        let text = err.to_string();
        let Error::InvalidConfig {
            field,
            value: shown,
            expected,
        } = err
        else {
            unreachable!()
        };
        prop_assert_eq!(&field, &path);
        reads_as(&value, &shown)?;
        prop_assert!(shown.chars().count() <= 45, "value shown short: {}", shown);
        match &expect {
            gen::configs::Expect::Exactly(allowed) => prop_assert_eq!(&expected, allowed),
            gen::configs::Expect::Mentions(names) => {
                for name in names {
                    prop_assert!(expected.contains(name), "{} lacks {}", expected, name);
                }
            }
        }
        prop_assert!(
            text.contains(&format!("{path} is {shown}, expected {expected}")),
            "message names field, value and range: {}",
            text
        );
        Ok(())
    });
}

/// Whether `shown` is how a person reads the offending `value` in a refusal,
/// judged without the renderer under test: a boolean as `true`/`false`, a number
/// as the number it reads back as ([`number_reads_as`]), a string quoted and cut
/// at 40 characters with `…` after the quote, an object as "an object", anything
/// else by its type.
fn reads_as(value: &Raw, shown: &str) -> TestCaseResult {
    match value {
        Raw::Absent => prop_assert_eq!(shown, "absent"),
        Raw::Bool(b) => prop_assert_eq!(shown, if *b { "true" } else { "false" }),
        Raw::Number(n) => number_reads_as(*n, shown)?,
        Raw::Str(s) => {
            let chars: Vec<char> = s.chars().collect();
            let head: String = chars.iter().take(40).collect();
            let cut = if chars.len() > 40 { "…" } else { "" };
            prop_assert_eq!(
                shown,
                format!("\"{head}\"{cut}"),
                "a string is quoted, cut at 40"
            );
        }
        Raw::Object(_) => prop_assert_eq!(shown, "an object"),
        Raw::Other(kind) => prop_assert!(
            shown.starts_with("a value of type ") && shown.ends_with(kind.as_str()),
            "{} named by its type: {}",
            kind,
            shown
        ),
    }
    Ok(())
}

/// Whether `shown` is `n` as people read it: `NaN`, `±Infinity`, a number of
/// 1e18 or more said to be that, an integer exactly, and any other number to
/// within 1e-14 of its size when read back (what 15 decimal places round to
/// zero is said to be below 1e-15).
fn number_reads_as(n: f64, shown: &str) -> TestCaseResult {
    prop_assert!(shown.len() <= 30, "{} renders long: {}", n, shown);
    if n.is_nan() {
        prop_assert_eq!(shown, "NaN");
    } else if n.is_infinite() {
        prop_assert_eq!(shown, if n > 0.0 { "Infinity" } else { "-Infinity" });
    } else if n.abs() >= 1e18 {
        prop_assert!(shown.ends_with("a number above 1e18"), "{}", shown);
    } else if n.fract() == 0.0 {
        prop_assert_eq!(shown, format!("{}", n as i64), "integers exactly");
    } else if shown.contains("a number between 0 and 1e-15") {
        // Only for what 15 decimal places round to zero.
        prop_assert!(n.abs() < 1e-15, "{:e} renders as {}", n, shown);
    } else {
        let back: f64 = shown
            .parse()
            .map_err(|_| TestCaseError::fail(format!("{n:e} renders as {shown}")))?;
        prop_assert!(
            (back - n).abs() <= 1e-14 * n.abs().max(1.0),
            "{:e} renders as {} (reads back {:e})",
            n,
            shown,
            back
        );
    }
    Ok(())
}

#[test]
fn config_numbers_render_as_people_read_them() {
    let strategy = prop_oneof![
        any::<f64>(),
        (-1e15..1e15f64),
        (-1_000_000i64..1_000_000).prop_map(|n| n as f64),
        (-1e18..1e18f64).prop_map(f64::trunc),
        (0u32..100, 0u32..1000).prop_map(|(w, f)| f64::from(w) + f64::from(f) / 1000.0),
    ];
    check("config number rendering", 3_000, strategy, |n| {
        number_reads_as(n, &config::render_number(n))
    });
}

// ======================================================================
// Classification: shape codes decode; only a usable message is kept
// ======================================================================

/// What a probe must classify as, from the definition of a usable message.
fn reference_class(code: u32) -> Class {
    let nibble = |at: u32| (code >> at) & 0xf;
    match code & 0xf {
        // A string, finite number, boolean or bigint.
        0 | 1 | 3 | 4 => Class::Scalar,
        // An object: non-empty string id, role 'user', array content, source with a string kind.
        10 if matches!(nibble(4), 2 | 3)
            && nibble(8) == 3
            && nibble(12) == 4
            && nibble(16) == 5 =>
        {
            Class::Message
        }
        _ => Class::Other,
    }
}

const MODES: [Mode; 3] = [Mode::Repair, Mode::Quarantine, Mode::Report];

/// The mode rules every class must obey.
fn mode_rules(class: Class) -> TestCaseResult {
    for mode in MODES {
        let action = inbox::decide(mode, class);
        prop_assert_eq!(
            action == Action::Keep,
            class == Class::Message,
            "{:?} {:?}",
            mode,
            class
        );
        prop_assert_eq!(action.recorded().is_none(), action == Action::Keep);
        match mode {
            Mode::Report => prop_assert!(matches!(action, Action::Keep | Action::Observe)),
            Mode::Quarantine => prop_assert!(matches!(action, Action::Keep | Action::Drop)),
            Mode::Repair => prop_assert_eq!(
                action == Action::Repair,
                class == Class::Scalar,
                "repair mode repairs exactly the scalars"
            ),
        }
    }
    Ok(())
}

#[test]
fn classification_every_code_decodes_and_only_messages_are_kept() {
    check(
        "classification of any u32",
        10_000,
        gen::codes::arbitrary(),
        |code| {
            let probe = Probe::from_code(code);
            // Only the documented bits are read: the type nibble, and for objects the
            // four field nibbles; a field nibble above 8 reads as unreadable.
            let canonical = match code & 0xf {
                10 => (0..4).fold(10, |c, i| {
                    let at = 4 + 4 * i;
                    c | ((code >> at) & 0xf).min(8) << at
                }),
                t @ 0..=9 => t,
                _ => 11,
            };
            prop_assert_eq!(&probe, &Probe::from_code(canonical));
            prop_assert_eq!(gen::codes::encode(&probe), canonical);
            prop_assert!(!probe.kind().is_empty());
            let class = inbox::classify(&probe);
            prop_assert_eq!(
                class,
                reference_class(code),
                "code {:#x}: {:?}",
                code,
                probe
            );
            prop_assert!(inbox::repair_summary(&probe).contains(probe.kind()));
            mode_rules(class)
        },
    );

    // The boundary's code space is small: check all of it, not a sample.
    let all = gen::codes::boundary();
    let mut messages = Vec::new();
    for &code in &all {
        let probe = Probe::from_code(code);
        assert_eq!(
            gen::codes::encode(&probe),
            code,
            "code {code:#x} round-trips"
        );
        let class = inbox::classify(&probe);
        assert_eq!(class, reference_class(code), "{code:#x}");
        if class == Class::Message {
            messages.push(code);
        }
        mode_rules(class).unwrap_or_else(|e| panic!("{code:#x}: {e}"));
    }
    assert_eq!(
        messages,
        vec![MESSAGE_CODE],
        "exactly one boundary code is a message"
    );
    println!(
        "classification of the boundary's codes: all {} codes checked",
        all.len()
    );
}

// Previews are the `echo` module's, with its own property tests (escaping, the
// UTF-16 bound, whole escapes and surrogate pairs).

// ======================================================================
// Flights: the state machine against a reference model
// ======================================================================

/// The slack `expire_at_most` allows a timer that fires early (`EARLY_MS` in flights.rs).
const EARLY_MS: f64 = 1.0;
/// Due times are kept in whole microseconds, rounded up: a due time read back, or
/// compared, may be up to 1 µs later than the exact one (plus float noise).
const ROUNDING_MS: f64 = 0.001 + 1e-6;

#[derive(Debug, Clone, PartialEq)]
enum State {
    Waiting,
    Ended(Ending),
    Landed,
}

#[derive(Debug)]
struct Modelled {
    key: FlightKey,
    query: Query,
    deadline_at: f64,
    /// The agent that asked (the JavaScript side compares an answering agent with it).
    asker: Option<String>,
    /// The first counted refusal, and when it came.
    refusal: Option<(f64, Refusal)>,
    state: State,
    /// How often the table reported it ended, and how often it landed.
    endings: u32,
    landings: u32,
}

impl Modelled {
    /// When it is due: its deadline, or the first refusal's grace if that runs out first.
    fn due(&self) -> f64 {
        match &self.refusal {
            Some((at, _)) => (at + f64::from(self.query.grace_ms)).min(self.deadline_at),
            None => self.deadline_at,
        }
    }

    fn in_table(&self) -> bool {
        self.state != State::Landed
    }
}

#[derive(Debug, Default)]
struct Model {
    flights: Vec<Modelled>,
    now: f64,
    /// The most flights the table has held at once.
    peak: usize,
    tally: Tally,
}

/// What the runs exercised, so a generator that stops reaching a path shows.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    ops: usize,
    deadline: usize,
    refused: usize,
    disposed: usize,
    settled: usize,
    first_refusals: usize,
    repeated_refusals: usize,
    ignored_refusals: usize,
    ticks_cut_short: usize,
    most_in_table: usize,
}

impl Tally {
    fn add(&mut self, o: &Tally) {
        self.ops += o.ops;
        self.deadline += o.deadline;
        self.refused += o.refused;
        self.disposed += o.disposed;
        self.settled += o.settled;
        self.first_refusals += o.first_refusals;
        self.repeated_refusals += o.repeated_refusals;
        self.ignored_refusals += o.ignored_refusals;
        self.ticks_cut_short += o.ticks_cut_short;
        self.most_in_table = self.most_in_table.max(o.most_in_table);
    }
}

impl Model {
    fn pick(&self, pick: &gen::ops::Pick) -> Option<usize> {
        let live: Vec<usize> = (0..self.flights.len())
            .filter(|&i| self.flights[i].in_table())
            .collect();
        if pick.live && !live.is_empty() {
            Some(live[pick.index.index(live.len())])
        } else {
            (!self.flights.is_empty()).then(|| pick.index.index(self.flights.len()))
        }
    }

    fn by_key(&self, key: FlightKey) -> Option<usize> {
        self.flights.iter().position(|f| f.key == key)
    }
}

/// Land a flight and check what comes back against the model.
fn land(table: &mut Flights, model: &mut Model, i: usize) -> TestCaseResult {
    let f = &mut model.flights[i];
    let landed = table.land(f.key);
    match &f.state {
        State::Landed => prop_assert_eq!(landed, None, "a landed flight lands again"),
        state => {
            let ending = match state {
                State::Ended(e) => Some(e.clone()),
                _ => None,
            };
            let expected = Landed {
                query: f.query,
                ending: ending.clone(),
            };
            prop_assert_eq!(landed.as_ref(), Some(&expected));
            let error = expected.error("P", "m");
            let code = error.as_ref().map(Error::code);
            prop_assert_eq!(
                code,
                ending.as_ref().map(|e| match e {
                    Ending::Deadline => "INSPECT_CLIENT_DEADLINE",
                    Ending::Refused(_) => "INSPECT_CLIENT_REFUSED",
                    Ending::Disposed => "INSPECT_CLIENT_GUARD_DISPOSED",
                })
            );
            if ending.is_none() {
                model.tally.settled += 1;
            }
            f.state = State::Landed;
            f.landings += 1;
        }
    }
    Ok(())
}

/// The registry settled a waiting flight first: `settle` takes it off once.
fn settle(table: &mut Flights, model: &mut Model, i: usize) -> TestCaseResult {
    let f = &mut model.flights[i];
    prop_assert!(table.settle(f.key), "a waiting flight settles");
    prop_assert!(!table.settle(f.key), "and only once");
    f.state = State::Landed;
    f.landings += 1;
    model.tally.settled += 1;
    Ok(())
}

/// Record flights the table ended, checking each was waiting and ends once.
fn record_endings(
    model: &mut Model,
    ended: &[(FlightKey, Ending)],
) -> Result<Vec<usize>, TestCaseError> {
    let mut indices = Vec::new();
    for (key, ending) in ended {
        let i = model
            .by_key(*key)
            .ok_or_else(|| TestCaseError::fail(format!("unknown key {key:?} ended")))?;
        let f = &mut model.flights[i];
        prop_assert_eq!(
            &f.state,
            &State::Waiting,
            "{:?} ended but was not waiting",
            key
        );
        f.state = State::Ended(ending.clone());
        f.endings += 1;
        match ending {
            Ending::Deadline => model.tally.deadline += 1,
            Ending::Refused(_) => model.tally.refused += 1,
            Ending::Disposed => model.tally.disposed += 1,
        }
        indices.push(i);
    }
    Ok(indices)
}

/// Everything the table says must agree with the model.
fn agree(table: &mut Flights, model: &Model) -> TestCaseResult {
    let in_table = model.flights.iter().filter(|f| f.in_table()).count();
    prop_assert_eq!(table.len(), in_table);
    prop_assert_eq!(table.is_empty(), in_table == 0);
    let earliest = model
        .flights
        .iter()
        .filter(|f| f.state == State::Waiting)
        .map(Modelled::due)
        .reduce(f64::min);
    match (table.next_due(), earliest) {
        (None, None) => {}
        (Some(due), Some(model_due)) => prop_assert!(
            due >= model_due - 1e-6 && due <= model_due + ROUNDING_MS,
            "timer armed for {} but the earliest flight is due at {}",
            due,
            model_due
        ),
        (armed, expected) => {
            return Err(TestCaseError::fail(format!(
                "timer armed {armed:?} while the earliest waiting flight is due {expected:?}"
            )))
        }
    }
    for f in &model.flights {
        prop_assert_eq!(table.contains(f.key), f.in_table(), "{:?}", f.key);
        let expected = (f.state == State::Waiting).then_some(f.query);
        prop_assert_eq!(
            table.waiting(f.key).copied(),
            expected,
            "waiting({:?})",
            f.key
        );
        prop_assert!(f.endings <= 1 && f.landings <= 1, "{:?}", f);
    }
    Ok(())
}

/// Advance the clock and let the timer fire, checking which flights end.
fn tick(
    table: &mut Flights,
    model: &mut Model,
    advance: f64,
    limit: usize,
    land_now: bool,
) -> TestCaseResult {
    model.now += advance;
    let now = model.now;
    let ended = table
        .expire_at_most(now, limit)
        .into_iter()
        .map(|key| {
            let ending = table.ending(key);
            ending
                .map(|e| (key, e))
                .ok_or_else(|| TestCaseError::fail(format!("{key:?} expired with no ending")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    prop_assert!(ended.len() <= limit);
    let indices = record_endings(model, &ended)?;
    let mut last_due = f64::NEG_INFINITY;
    for (&i, (_, ending)) in indices.iter().zip(&ended) {
        let f = &model.flights[i];
        let due = f.due();
        // Never before it is due (less the timer's slack)...
        prop_assert!(
            due <= now + EARLY_MS + ROUNDING_MS,
            "{:?} ended at {} but is due at {}",
            f.key,
            now,
            due
        );
        // ...ended the way its history says...
        let expected = match &f.refusal {
            Some((_, refusal)) => Ending::Refused(refusal.clone()),
            None => Ending::Deadline,
        };
        prop_assert_eq!(ending, &expected);
        // ...and earliest first.
        prop_assert!(due >= last_due - ROUNDING_MS, "ended out of order");
        last_due = due;
    }
    if ended.len() == limit
        && model
            .flights
            .iter()
            .any(|f| f.state == State::Waiting && f.due() <= now)
    {
        model.tally.ticks_cut_short += 1;
    }
    for f in model.flights.iter().filter(|f| f.state == State::Waiting) {
        // What stays waiting is due no earlier than what ended...
        prop_assert!(f.due() >= last_due - ROUNDING_MS, "{:?} skipped", f.key);
        // ...and, unless the limit cut the batch short, not due yet.
        if ended.len() < limit {
            prop_assert!(
                f.due() > now + EARLY_MS - ROUNDING_MS,
                "{:?} due at {} still waits at {}",
                f.key,
                f.due(),
                now
            );
        }
    }
    if land_now {
        for i in indices {
            land(table, model, i)?;
        }
    }
    Ok(())
}

/// A query of `asker` starts at the model's clock; returns the flight's index in the model.
fn begin(
    table: &mut Flights,
    model: &mut Model,
    query: Query,
    asker: Option<String>,
) -> Result<usize, TestCaseError> {
    let now = model.now;
    let key = table.begin(query, now);
    prop_assert!(model.by_key(key).is_none(), "key {:?} issued twice", key);
    // Slots are reused: the table is never larger than the most flights it held at once.
    model.peak = model.peak.max(table.len());
    prop_assert!(
        (key.slot as usize) < model.peak,
        "slot {} while at most {} flights were in the table",
        key.slot,
        model.peak
    );
    model.flights.push(Modelled {
        key,
        query,
        deadline_at: now + f64::from(query.deadline_ms),
        asker,
        refusal: None,
        state: State::Waiting,
        endings: 0,
        landings: 0,
    });
    Ok(model.flights.len() - 1)
}

fn apply(table: &mut Flights, model: &mut Model, op: &gen::ops::Op) -> TestCaseResult {
    use gen::ops::Op;
    let now = model.now;
    match op {
        Op::Begin { query, asker } => {
            begin(table, model, *query, asker.clone())?;
        }
        Op::Churn { n, query } => {
            for _ in 0..*n {
                let i = begin(table, model, *query, Some("agent-0".into()))?;
                land(table, model, i)?;
            }
        }
        Op::Settle { flight } => {
            if let Some(i) = model.pick(flight) {
                if model.flights[i].state == State::Waiting {
                    // The registry settled it first: the guard takes it off with
                    // `settle`, which reads no ending.
                    settle(table, model, i)?;
                } else {
                    land(table, model, i)?;
                }
            }
        }
        Op::Refuse {
            flight,
            from,
            refusal,
        } => {
            let target = flight.as_ref().and_then(|f| model.pick(f));
            let (key, asker) = match target {
                Some(i) => {
                    let f = &model.flights[i];
                    if f.state == State::Waiting && now > f.deadline_at {
                        // A refusal after the deadline, before the timer fired, is
                        // ignored: `flights_a_refusal_after_the_deadline_does_not_count`.
                        return Ok(());
                    }
                    (f.key, f.asker.clone())
                }
                // A key no flight was given.
                None => match FlightKey::from_f64(4_294_967_295.0) {
                    Some(key) if model.by_key(key).is_none() => (key, None),
                    _ => return Ok(()),
                },
            };
            let agent = match from {
                gen::ops::Sender::Asker => asker.clone(),
                gen::ops::Sender::Agent(agent) => agent.clone(),
            };
            // The fact the JavaScript side hands over: whether the page's agent asked.
            let from_asker = target.is_some() && agent == asker;
            let effect = table.refuse(key, from_asker, refusal.clone(), now);
            let expected = match target.map(|i| &mut model.flights[i]) {
                Some(f) if f.state == State::Waiting && from_asker => {
                    if f.refusal.is_some() {
                        RefusalEffect::Repeated
                    } else {
                        f.refusal = Some((now, refusal.clone()));
                        RefusalEffect::First
                    }
                }
                _ => RefusalEffect::Ignored,
            };
            prop_assert_eq!(effect, expected, "refusal of {:?} from {:?}", key, agent);
            match effect {
                RefusalEffect::First => model.tally.first_refusals += 1,
                RefusalEffect::Repeated => model.tally.repeated_refusals += 1,
                RefusalEffect::Ignored => model.tally.ignored_refusals += 1,
            }
        }
        Op::Tick {
            advance,
            limit,
            land_now,
        } => tick(table, model, *advance, *limit, *land_now)?,
        Op::Dispose { guard } => dispose(table, model, *guard)?,
    }
    Ok(())
}

fn dispose(table: &mut Flights, model: &mut Model, guard: u32) -> TestCaseResult {
    let mut keys = table.abandon(guard);
    keys.sort_unstable();
    let mut expected: Vec<FlightKey> = model
        .flights
        .iter()
        .filter(|f| f.state == State::Waiting && f.query.guard == guard)
        .map(|f| f.key)
        .collect();
    expected.sort_unstable();
    prop_assert_eq!(&keys, &expected, "disposing guard {}", guard);
    let ended: Vec<_> = keys.into_iter().map(|k| (k, Ending::Disposed)).collect();
    for i in record_endings(model, &ended)? {
        land(table, model, i)?;
    }
    Ok(())
}

#[test]
fn flights_match_the_reference_model() {
    let total = std::cell::RefCell::new(Tally::default());
    check("flights state machine", 700, gen::ops::run(), |run| {
        let mut table = Flights::new();
        let mut model = Model {
            now: run.start,
            ..Model::default()
        };
        for op in &run.ops {
            apply(&mut table, &mut model, op)?;
            agree(&mut table, &model)?;
            model.tally.ops += 1;
        }
        // Drain: let every deadline pass, or dispose every guard; then deliver
        // whatever ended and was not landed yet.
        if run.drain_by_time {
            let last = model
                .flights
                .iter()
                .map(|f| f.deadline_at)
                .fold(model.now, f64::max);
            let advance = last - model.now + 1.0;
            tick(&mut table, &mut model, advance, usize::MAX, true)?;
        } else {
            for guard in 0..gen::ops::GUARDS {
                dispose(&mut table, &mut model, guard)?;
            }
        }
        agree(&mut table, &model)?;
        for i in 0..model.flights.len() {
            if matches!(model.flights[i].state, State::Ended(_)) {
                land(&mut table, &mut model, i)?;
            }
        }
        agree(&mut table, &model)?;
        prop_assert!(table.is_empty());
        prop_assert_eq!(table.next_due(), None, "no timer once everything landed");
        for f in &model.flights {
            prop_assert_eq!(f.landings, 1, "{:?} lands exactly once", f.key);
            prop_assert!(f.endings <= 1);
            prop_assert!(table.land(f.key).is_none() && !table.contains(f.key));
        }
        prop_assert!(table.expire(f64::MAX).is_empty());
        model.tally.most_in_table = model.peak;
        total.borrow_mut().add(&model.tally);
        Ok(())
    });
    let t = total.into_inner();
    println!(
        "flights state machine exercised: {} ops; endings {} by deadline, {} refused, {} disposed, \
         {} settled by the registry; refusals {} first, {} repeated, {} ignored; {} ticks cut short \
         by their limit; up to {} flights in the table",
        t.ops,
        t.deadline,
        t.refused,
        t.disposed,
        t.settled,
        t.first_refusals,
        t.repeated_refusals,
        t.ignored_refusals,
        t.ticks_cut_short,
        t.most_in_table
    );
}

/// A refusal that arrives after the deadline passed, before the late timer fired,
/// does not count: the query rejects by its deadline.
#[test]
fn flights_a_refusal_after_the_deadline_does_not_count() {
    let strategy = (
        gen::ops::query(),
        prop_oneof![0.0..1e7f64, (0u32..1_000_000).prop_map(f64::from)],
        prop_oneof![Just(0.001), 0.001..5.0f64, 5.0..1_000.0f64],
    );
    check(
        "flights late refusal",
        500,
        strategy,
        |(query, start, late)| {
            let mut table = Flights::new();
            let key = table.begin(query, start);
            let now = start + f64::from(query.deadline_ms) + late;
            let effect = table.refuse(key, true, Refusal::InvalidOutput { detail: None }, now);
            let ended = table.expire(now);
            prop_assert_eq!(
                ended,
                vec![(key, Ending::Deadline)],
                "the deadline passed {} ms before the refusal ({:?})",
                late,
                effect
            );
            Ok(())
        },
    );
}
