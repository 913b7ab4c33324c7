//! Inbox entries: what counts as a usable message, and what each mode does with the rest.
//!
//! The boundary reads a JavaScript value defensively into a [`Probe`] (a getter
//! that throws or a revoked Proxy reads as [`Field::Unreadable`]); everything
//! after that is decided here, on plain types.

use crate::config::Mode;

/// The numbers of the boundary's shape codes. The JavaScript reader gets them
/// (with the field names) from [`SHAPE_LAYOUT_JSON`], so the two cannot drift.
pub mod code {
    /// Field codes (4 bits each).
    pub const MISSING: u32 = 0;
    /// An empty string.
    pub const EMPTY_STRING: u32 = 1;
    /// A non-empty string other than the expected literal.
    pub const STRING: u32 = 2;
    /// The expected literal (`"user"` for `role`).
    pub const EXPECTED: u32 = 3;
    /// An array.
    pub const ARRAY: u32 = 4;
    /// An object whose `kind` is a string.
    pub const OBJECT_KIND_STRING: u32 = 5;
    /// Any other object.
    pub const OBJECT: u32 = 6;
    /// Any other value.
    pub const OTHER: u32 = 7;
    /// Reading it threw.
    pub const UNREADABLE: u32 = 8;
    /// Type codes (the low 4 bits).
    pub const T_STRING: u32 = 0;
    /// A finite number.
    pub const T_FINITE: u32 = 1;
    /// `NaN` or an infinity.
    pub const T_NON_FINITE: u32 = 2;
    /// A boolean.
    pub const T_BOOLEAN: u32 = 3;
    /// A bigint.
    pub const T_BIGINT: u32 = 4;
    /// `null`.
    pub const T_NULL: u32 = 5;
    /// `undefined`.
    pub const T_UNDEFINED: u32 = 6;
    /// A symbol.
    pub const T_SYMBOL: u32 = 7;
    /// A function.
    pub const T_FUNCTION: u32 = 8;
    /// An array.
    pub const T_ARRAY: u32 = 9;
    /// An object, with its field codes.
    pub const T_OBJECT: u32 = 10;
    /// A value whose type could not be read.
    pub const T_UNREADABLE: u32 = 11;
    /// Where each message field's code starts, in [`super::MESSAGE_FIELDS`] order.
    pub const SHIFTS: [u32; 4] = [4, 8, 12, 16];
}

/// The fields a usable message is judged by, in shape-code order.
pub const MESSAGE_FIELDS: [&str; 4] = ["id", "role", "content", "source"];
/// The `role` a usable message has.
pub const USER_ROLE: &str = "user";
/// The key of `source` that must hold a string.
pub const SOURCE_KIND_KEY: &str = "kind";

/// The shape-code layout as the JavaScript reader receives it (`K.shape`), as
/// JSON: the field names, the role a message has, the key of `source` that must be
/// a string, and every number of [`code`], type codes by `typeof` name. Written out
/// here rather than serialized at run time (a third of a kilobyte of `.wasm`
/// instead of two); a test checks it against the constants above, so the two
/// cannot drift.
pub const SHAPE_LAYOUT_JSON: &str = r#"{"fields":["id","role","content","source"],"shifts":[4,8,12,16],"role":"user","kindKey":"kind","missing":0,"emptyString":1,"string":2,"expected":3,"array":4,"objectKindString":5,"object":6,"other":7,"unreadable":8,"types":{"string":0,"finite":1,"nonFinite":2,"boolean":3,"bigint":4,"null":5,"undefined":6,"symbol":7,"function":8,"array":9,"object":10,"unreadable":11}}"#;

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
    const fn from_code(c: u32) -> Self {
        match c {
            code::MISSING => Field::Missing,
            code::EMPTY_STRING => Field::Str {
                empty: true,
                expected: false,
            },
            code::STRING => Field::Str {
                empty: false,
                expected: false,
            },
            code::EXPECTED => Field::Str {
                empty: false,
                expected: true,
            },
            code::ARRAY => Field::Array,
            code::OBJECT_KIND_STRING => Field::Object {
                kind_is_string: true,
            },
            code::OBJECT => Field::Object {
                kind_is_string: false,
            },
            code::OTHER => Field::Other,
            _ => Field::Unreadable,
        }
    }
}

impl Probe {
    /// Decode a shape code read on the JavaScript side (`shapeCode()` in the
    /// boundary's shapes.js): the low 4 bits are the value's type; an object carries 4 bits each
    /// for `id`, `role`, `content` and `source`, from bit 4 up.
    pub fn from_code(c: u32) -> Self {
        match c & 0xf {
            code::T_STRING => Probe::String,
            code::T_FINITE => Probe::Number { finite: true },
            code::T_NON_FINITE => Probe::Number { finite: false },
            code::T_BOOLEAN => Probe::Boolean,
            code::T_BIGINT => Probe::BigInt,
            code::T_NULL => Probe::Null,
            code::T_UNDEFINED => Probe::Undefined,
            code::T_SYMBOL => Probe::Symbol,
            code::T_FUNCTION => Probe::Function,
            code::T_ARRAY => Probe::Array,
            code::T_OBJECT => {
                // Each field by its shift, with no array built: this runs for every bad
                // entry, where V8 keeps the wasm unoptimized and an array `map` is calls.
                let [id, role, content, source] = code::SHIFTS;
                let field = |at: u32| Field::from_code((c >> at) & 0xf);
                Probe::Object {
                    id: field(id),
                    role: field(role),
                    content: field(content),
                    source: field(source),
                }
            }
            _ => Probe::Unreadable,
        }
    }
}

/// The one shape code [`classify`] accepts as a usable message: an object whose
/// `id` is a non-empty string, `role` is `'user'`, `content` an array and
/// `source` an object with a string `kind`. The boundary hands it to the claim
/// wrapper, so a batch of nothing else is returned without entering wasm.
pub const MESSAGE_CODE: u32 = code::T_OBJECT
    | code::STRING << code::SHIFTS[0]
    | code::EXPECTED << code::SHIFTS[1]
    | code::ARRAY << code::SHIFTS[2]
    | code::OBJECT_KIND_STRING << code::SHIFTS[3];

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

/// What a message-shaped entry is when the batch did not come from the host's own
/// claim alone: the host reads the entry again (and serializes it), so it is a
/// usable message only if its plain copy (each field read once, as JSON) is one.
/// `copy`: the copy's probe, or `None` when it has no plain copy (a cycle, a
/// trapping Proxy, a throwing getter, a bigint field). A usable copy is handed on
/// in the entry's place; anything else is the non-message it is.
pub fn judge_copy(copy: Option<&Probe>) -> Class {
    match copy {
        Some(probe) if classify(probe) == Class::Message => Class::Message,
        _ => Class::Other,
    }
}

/// The `source` of a repaired message: `{ kind, plugin, form, summary }`.
pub const REPAIR_SOURCE: [(&str, &str); 3] = [
    ("kind", "plugin"),
    ("plugin", "inbox-input-guard"),
    ("form", "notice"),
];

/// The summary a repaired message's `source` carries.
pub fn repair_summary(probe: &Probe) -> String {
    format!("repaired inbox input ({})", probe.kind())
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
    fn the_layout_handed_to_javascript_is_the_constants() {
        let layout: serde_json::Value =
            serde_json::from_str(SHAPE_LAYOUT_JSON).unwrap_or(serde_json::Value::Null);
        let expected = serde_json::json!({
            "fields": MESSAGE_FIELDS,
            "shifts": code::SHIFTS,
            "role": USER_ROLE,
            "kindKey": SOURCE_KIND_KEY,
            "missing": code::MISSING,
            "emptyString": code::EMPTY_STRING,
            "string": code::STRING,
            "expected": code::EXPECTED,
            "array": code::ARRAY,
            "objectKindString": code::OBJECT_KIND_STRING,
            "object": code::OBJECT,
            "other": code::OTHER,
            "unreadable": code::UNREADABLE,
            "types": {
                "string": code::T_STRING,
                "finite": code::T_FINITE,
                "nonFinite": code::T_NON_FINITE,
                "boolean": code::T_BOOLEAN,
                "bigint": code::T_BIGINT,
                "null": code::T_NULL,
                "undefined": code::T_UNDEFINED,
                "symbol": code::T_SYMBOL,
                "function": code::T_FUNCTION,
                "array": code::T_ARRAY,
                "object": code::T_OBJECT,
                "unreadable": code::T_UNREADABLE,
            },
        });
        assert_eq!(layout, expected);
    }

    #[test]
    fn a_complete_user_message_is_usable() {
        assert_eq!(classify(&message()), Class::Message);
    }

    #[test]
    fn a_message_shaped_entry_is_usable_only_through_a_usable_plain_copy() {
        assert_eq!(judge_copy(Some(&message())), Class::Message);
        assert_eq!(judge_copy(None), Class::Other, "no plain copy: not data");
        let broken = with(|p| {
            if let Probe::Object { source, .. } = p {
                *source = Field::Missing;
            }
        });
        assert_eq!(
            judge_copy(Some(&broken)),
            Class::Other,
            "the copy reads differently"
        );
        assert_eq!(
            judge_copy(Some(&Probe::String)),
            Class::Other,
            "a toJSON that returns a string"
        );
        assert_eq!(decide(Mode::Repair, judge_copy(None)), Action::Drop);
        assert_eq!(decide(Mode::Report, judge_copy(None)), Action::Observe);
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
