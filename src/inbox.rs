//! Inbox entries: what counts as a usable message, and what each mode does with the rest.
//!
//! The boundary reads a JavaScript value defensively into a [`Probe`] (a getter
//! that throws or a revoked Proxy reads as [`Field::Unreadable`]); everything
//! after that is decided here, on plain types.

use crate::config::Mode;

/// One property of an inbox entry, as read off JavaScript.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Field {
    /// The property is absent or `undefined`.
    Missing,
    /// A string: whether it is empty, and whether it equals the expected literal.
    Str {
        /// Whether the string is empty.
        empty: bool,
        /// Whether it equals the literal the field must hold (`"user"` for `role`).
        expected: bool,
    },
    /// An array.
    Array,
    /// An object that is not an array; `kind_is_string` is whether its `kind` is a string.
    Object {
        /// Whether the object's own `kind` reads as a string.
        kind_is_string: bool,
    },
    /// Any other value.
    Other,
    /// Reading it threw (a throwing getter, a revoked or trapping Proxy).
    Unreadable,
}

/// A JavaScript value reduced to what classification needs.
#[derive(Debug, Clone, PartialEq)]
pub enum Probe {
    /// A string.
    String,
    /// A number, with whether it is finite.
    Number {
        /// `Number.isFinite(value)`.
        finite: bool,
    },
    /// A boolean.
    Boolean,
    /// A bigint.
    BigInt,
    /// `null`.
    Null,
    /// `undefined`.
    Undefined,
    /// A symbol.
    Symbol,
    /// A function.
    Function,
    /// An array.
    Array,
    /// An object (not an array), with its four message fields.
    Object {
        /// `id`.
        id: Field,
        /// `role`.
        role: Field,
        /// `content`.
        content: Field,
        /// `source`.
        source: Field,
    },
    /// A value whose very type could not be read (a revoked Proxy).
    Unreadable,
}

impl Probe {
    /// The `valueKind` recorded for it: the `typeof` name, or `null` / `array`.
    pub const fn kind(&self) -> &'static str {
        match self {
            Probe::String => "string",
            Probe::Number { .. } => "number",
            Probe::Boolean => "boolean",
            Probe::BigInt => "bigint",
            Probe::Null => "null",
            Probe::Undefined => "undefined",
            Probe::Symbol => "symbol",
            Probe::Function => "function",
            Probe::Array => "array",
            Probe::Object { .. } | Probe::Unreadable => "object",
        }
    }
}

impl Field {
    /// Decode one 4-bit field code of the boundary's shape codes.
    const fn from_code(code: u32) -> Self {
        match code {
            0 => Field::Missing,
            1 => Field::Str {
                empty: true,
                expected: false,
            },
            2 => Field::Str {
                empty: false,
                expected: false,
            },
            3 => Field::Str {
                empty: false,
                expected: true,
            },
            4 => Field::Array,
            5 => Field::Object {
                kind_is_string: true,
            },
            6 => Field::Object {
                kind_is_string: false,
            },
            7 => Field::Other,
            _ => Field::Unreadable,
        }
    }
}

impl Probe {
    /// Decode a shape code read on the JavaScript side (`shapes()` in the boundary's
    /// helpers): the low 4 bits are the value's type; an object carries 4 bits each
    /// for `id`, `role`, `content` and `source`, from bit 4 up.
    pub fn from_code(code: u32) -> Self {
        let field = |at: u32| Field::from_code((code >> at) & 0xf);
        match code & 0xf {
            0 => Probe::String,
            1 => Probe::Number { finite: true },
            2 => Probe::Number { finite: false },
            3 => Probe::Boolean,
            4 => Probe::BigInt,
            5 => Probe::Null,
            6 => Probe::Undefined,
            7 => Probe::Symbol,
            8 => Probe::Function,
            9 => Probe::Array,
            10 => Probe::Object {
                id: field(4),
                role: field(8),
                content: field(12),
                source: field(16),
            },
            _ => Probe::Unreadable,
        }
    }
}

/// The one shape code [`classify`] accepts as a usable message: an object whose
/// `id` is a non-empty string, `role` is `'user'`, `content` an array and
/// `source` an object with a string `kind`. The boundary hands it to the claim
/// wrapper, so a batch of nothing else is returned without entering wasm.
pub const MESSAGE_CODE: u32 = 10 | 2 << 4 | 3 << 8 | 4 << 12 | 5 << 16;

/// What an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// A usable message: non-empty string `id`, `role === 'user'`, array `content`,
    /// and a `source` object whose `kind` is a string.
    Message,
    /// A string, finite number, boolean or bigint: it can be delivered as text.
    Scalar,
    /// Anything else: it cannot be rendered into content unambiguously.
    Other,
}

/// Classify a probed value.
pub fn classify(probe: &Probe) -> Class {
    match probe {
        Probe::Object {
            id,
            role,
            content,
            source,
        } => {
            let usable = matches!(id, Field::Str { empty: false, .. })
                && matches!(role, Field::Str { expected: true, .. })
                && *content == Field::Array
                && *source
                    == (Field::Object {
                        kind_is_string: true,
                    });
            if usable {
                Class::Message
            } else {
                Class::Other
            }
        }
        Probe::String | Probe::Boolean | Probe::BigInt | Probe::Number { finite: true } => {
            Class::Scalar
        }
        _ => Class::Other,
    }
}

/// What the guard does with one entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// A usable message: left alone, not recorded.
    Keep,
    /// Replaced by a user message carrying `String(value)`; recorded `repaired`.
    Repair,
    /// Removed; recorded `quarantined`.
    Drop,
    /// Left in place; recorded `observed`.
    Observe,
}

impl Action {
    /// The `action` recorded for it (`None` for a kept message).
    pub const fn recorded(self) -> Option<&'static str> {
        match self {
            Action::Keep => None,
            Action::Repair => Some("repaired"),
            Action::Drop => Some("quarantined"),
            Action::Observe => Some("observed"),
        }
    }
}

/// The mode's decision for a class of entry.
pub const fn decide(mode: Mode, class: Class) -> Action {
    match (class, mode) {
        (Class::Message, _) => Action::Keep,
        (_, Mode::Report) => Action::Observe,
        (Class::Scalar, Mode::Repair) => Action::Repair,
        (_, Mode::Repair | Mode::Quarantine) => Action::Drop,
    }
}

/// The summary a repaired message's `source` carries.
pub fn repair_summary(probe: &Probe) -> String {
    format!("repaired inbox input ({})", probe.kind())
}

/// A preview of at most `limit` characters, plus `…` when cut.
///
/// `head` is a prefix of the rendering taken on the JavaScript side (so a huge
/// string is never copied whole); `longer` says the rendering went on past it.
pub fn preview(head: &str, longer: bool, limit: u32) -> String {
    let limit = limit as usize;
    let mut chars = head.char_indices();
    match chars.nth(limit) {
        Some((cut, _)) => format!("{}…", head.get(..cut).unwrap_or(head)),
        None if longer => format!("{head}…"),
        None => head.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message() -> Probe {
        Probe::Object {
            id: Field::Str {
                empty: false,
                expected: false,
            },
            role: Field::Str {
                empty: false,
                expected: true,
            },
            content: Field::Array,
            source: Field::Object {
                kind_is_string: true,
            },
        }
    }

    fn with(f: impl FnOnce(&mut Probe)) -> Probe {
        let mut p = message();
        f(&mut p);
        p
    }

    #[test]
    fn a_complete_user_message_is_usable() {
        assert_eq!(classify(&message()), Class::Message);
    }

    #[test]
    fn each_missing_or_wrong_field_makes_it_unusable() {
        let broken = [
            with(|p| {
                if let Probe::Object { id, .. } = p {
                    *id = Field::Str {
                        empty: true,
                        expected: false,
                    }
                }
            }),
            with(|p| {
                if let Probe::Object { id, .. } = p {
                    *id = Field::Other
                }
            }),
            with(|p| {
                if let Probe::Object { role, .. } = p {
                    *role = Field::Str {
                        empty: false,
                        expected: false,
                    }
                }
            }),
            with(|p| {
                if let Probe::Object { content, .. } = p {
                    *content = Field::Object {
                        kind_is_string: false,
                    }
                }
            }),
            with(|p| {
                if let Probe::Object { source, .. } = p {
                    *source = Field::Object {
                        kind_is_string: false,
                    }
                }
            }),
            with(|p| {
                if let Probe::Object { source, .. } = p {
                    *source = Field::Missing
                }
            }),
            with(|p| {
                if let Probe::Object { source, .. } = p {
                    *source = Field::Unreadable
                }
            }),
        ];
        for p in broken {
            assert_eq!(classify(&p), Class::Other, "{p:?}");
        }
    }

    #[test]
    fn scalars_are_repairable_but_not_non_finite_numbers() {
        for p in [
            Probe::String,
            Probe::Boolean,
            Probe::BigInt,
            Probe::Number { finite: true },
        ] {
            assert_eq!(classify(&p), Class::Scalar, "{p:?}");
        }
        for p in [
            Probe::Number { finite: false },
            Probe::Null,
            Probe::Undefined,
            Probe::Symbol,
            Probe::Function,
            Probe::Array,
            Probe::Unreadable,
        ] {
            assert_eq!(classify(&p), Class::Other, "{p:?}");
        }
    }

    #[test]
    fn the_mode_table() {
        use Action::*;
        use Class::*;
        let table = [
            (Mode::Repair, Message, Keep),
            (Mode::Repair, Scalar, Repair),
            (Mode::Repair, Other, Drop),
            (Mode::Quarantine, Message, Keep),
            (Mode::Quarantine, Scalar, Drop),
            (Mode::Quarantine, Other, Drop),
            (Mode::Report, Message, Keep),
            (Mode::Report, Scalar, Observe),
            (Mode::Report, Other, Observe),
        ];
        for (mode, class, action) in table {
            assert_eq!(decide(mode, class), action, "{mode:?} {class:?}");
        }
        assert_eq!(Repair.recorded(), Some("repaired"));
        assert_eq!(Drop.recorded(), Some("quarantined"));
        assert_eq!(Observe.recorded(), Some("observed"));
        assert_eq!(Keep.recorded(), None);
    }

    #[test]
    fn kinds_and_summaries() {
        assert_eq!(
            repair_summary(&Probe::String),
            "repaired inbox input (string)"
        );
        assert_eq!(
            repair_summary(&Probe::BigInt),
            "repaired inbox input (bigint)"
        );
        assert_eq!(Probe::Null.kind(), "null");
        assert_eq!(Probe::Array.kind(), "array");
        assert_eq!(message().kind(), "object");
    }

    /// The code the boundary gives an object whose fields have these codes.
    const fn object_code(id: u32, role: u32, content: u32, source: u32) -> u32 {
        10 | id << 4 | role << 8 | content << 12 | source << 16
    }

    #[test]
    fn shape_codes_decode_to_the_same_classes() {
        // A real message: non-empty id, role 'user', array content, source with string kind.
        assert_eq!(Probe::from_code(object_code(2, 3, 4, 5)), message());
        assert_eq!(
            classify(&Probe::from_code(object_code(2, 3, 4, 5))),
            Class::Message
        );
        for broken in [
            object_code(1, 3, 4, 5), // empty id
            object_code(0, 3, 4, 5), // no id
            object_code(2, 2, 4, 5), // role other than 'user'
            object_code(2, 3, 6, 5), // content not an array
            object_code(2, 3, 4, 6), // source kind not a string
            object_code(2, 3, 4, 8), // source unreadable
            object_code(8, 3, 4, 5), // id getter throws
        ] {
            assert_eq!(
                classify(&Probe::from_code(broken)),
                Class::Other,
                "{broken:#x}"
            );
        }
        for (code, class) in [
            (0, Class::Scalar),
            (1, Class::Scalar),
            (2, Class::Other),
            (3, Class::Scalar),
            (4, Class::Scalar),
            (5, Class::Other),
            (6, Class::Other),
            (7, Class::Other),
            (8, Class::Other),
            (9, Class::Other),
            (11, Class::Other),
            (15, Class::Other),
        ] {
            assert_eq!(classify(&Probe::from_code(code)), class, "{code}");
        }
        assert_eq!(Probe::from_code(5).kind(), "null");
        assert_eq!(Probe::from_code(9).kind(), "array");
        assert_eq!(Probe::from_code(4).kind(), "bigint");
    }

    #[test]
    fn the_fast_path_code_is_a_usable_message() {
        // The claim wrapper skips wasm only for entries whose code equals
        // MESSAGE_CODE; every other code reaches `classify`. So the one property
        // that matters is that MESSAGE_CODE itself is a message...
        assert_eq!(classify(&Probe::from_code(MESSAGE_CODE)), Class::Message);
        assert_eq!(Probe::from_code(MESSAGE_CODE), message());
        // ...and that changing any one field of it makes a non-message, so the
        // constant encodes all four checks.
        for at in [4, 8, 12, 16] {
            for field in 0..16 {
                let code = (MESSAGE_CODE & !(0xf << at)) | field << at;
                // (An `id` code 3, "equals the expected literal", is never produced:
                // the boundary has no literal for `id`.)
                if code != MESSAGE_CODE && !(at == 4 && field == 3) {
                    assert_eq!(classify(&Probe::from_code(code)), Class::Other, "{code:#x}");
                }
            }
        }
    }

    #[test]
    fn previews_are_bounded_by_characters() {
        assert_eq!(preview("hello", false, 80), "hello");
        assert_eq!(preview("hello", false, 5), "hello");
        assert_eq!(preview("hello", false, 4), "hell…");
        assert_eq!(preview("hello", true, 80), "hello…", "cut on the JS side");
        assert_eq!(
            preview("ééééé", false, 2),
            "éé…",
            "counts characters, not bytes"
        );
        assert_eq!(preview("😀😀😀", false, 1), "😀…");
        assert_eq!(preview("", false, 1), "");
    }

    #[test]
    fn every_shape_code_decodes_to_its_own_variant() {
        let types = [
            (0, Probe::String, "string"),
            (1, Probe::Number { finite: true }, "number"),
            (2, Probe::Number { finite: false }, "number"),
            (3, Probe::Boolean, "boolean"),
            (4, Probe::BigInt, "bigint"),
            (5, Probe::Null, "null"),
            (6, Probe::Undefined, "undefined"),
            (7, Probe::Symbol, "symbol"),
            (8, Probe::Function, "function"),
            (9, Probe::Array, "array"),
            (11, Probe::Unreadable, "object"),
            (15, Probe::Unreadable, "object"),
        ];
        for (code, probe, kind) in types {
            assert_eq!(Probe::from_code(code), probe, "type code {code}");
            assert_eq!(probe.kind(), kind, "type code {code}");
        }
        let str_field = |empty, expected| Field::Str { empty, expected };
        let fields = [
            (0, Field::Missing),
            (1, str_field(true, false)),
            (2, str_field(false, false)),
            (3, str_field(false, true)),
            (4, Field::Array),
            (
                5,
                Field::Object {
                    kind_is_string: true,
                },
            ),
            (
                6,
                Field::Object {
                    kind_is_string: false,
                },
            ),
            (7, Field::Other),
            (8, Field::Unreadable),
            (15, Field::Unreadable),
        ];
        for (code, field) in fields {
            assert_eq!(Field::from_code(code), field, "field code {code}");
            // Each field position reads its own four bits.
            let only = |at: u32| Probe::from_code(10 | code << at);
            let Probe::Object {
                id,
                role,
                content,
                source,
            } = only(4)
            else {
                panic!("object code")
            };
            assert_eq!(
                (id, role, content, source),
                (
                    field.clone(),
                    Field::Missing,
                    Field::Missing,
                    Field::Missing
                )
            );
            let Probe::Object { source, .. } = only(16) else {
                panic!("object code")
            };
            assert_eq!(source, field);
        }
    }
}
