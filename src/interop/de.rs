//! Reading the config: a plain JavaScript copy, through a serde `Deserializer` of its own.
//!
//! The config crosses once per mount: JavaScript takes a plain copy
//! (`structuredClone`, getters read once) and serde's `Deserialize` for
//! [`Raw`](crate::config::Raw) reads it through this deserializer. It is
//! self-describing and small on purpose: serde-wasm-bindgen's deserializer
//! reports type errors through serde's `Unexpected`, whose `Display` links
//! Rust's float formatting, and the two together measured 13.5 KB of the
//! 64 KB `.wasm` budget (measured by building without it). serde-wasm-bindgen still carries
//! everything that goes out (records, counts, the normalized config).
//!
//! Every value maps to one visit: `null`/`undefined` to unit, booleans,
//! numbers, strings, arrays to a sequence, `Uint8Array`/`ArrayBuffer` to bytes
//! (their contents unread), and any non-iterable object to a map of its own
//! enumerable string-keyed entries. Anything else (a bigint, a `Map`, a `Set`)
//! is an error, which the caller reads as unreadable: the schema the loader
//! calls before the mount (`Config`, schemastery) resolves none of them as the
//! number or the object it expects, so the guard reads them as it does, and a
//! value the mount would not run with is refused, naming its field. Past
//! [`MAX_DEPTH`] every value is unit, so a cyclic copy ends. An object's entries
//! are taken in JavaScript (`entriesOf` in values.js), one crossing.

use js_sys::{Array, Reflect};
use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use serde::forward_to_deserialize_any;
use wasm_bindgen::{JsCast, JsValue};

use super::js::{entries_of, is_array, snapshot};
use crate::config::Raw;

/// Nesting read before every deeper value reads as unit (the schema is two levels).
pub const MAX_DEPTH: u8 = 16;

/// Read any JavaScript value into a [`Raw`] config tree, never throwing: a plain
/// copy is taken in JavaScript (getters read once) and deserialized by serde
/// (through [`from_copy`], below). A value that cannot be copied (a function, a
/// symbol, a Proxy, a throwing getter) reads as unreadable at the deepest field
/// that holds it.
pub fn raw_config(value: &JsValue) -> Raw {
    read_config(value, 0)
}

/// `value` as a [`Raw`] tree: its plain copy through serde, or, when no copy can
/// be taken or read, its fields one by one (down to a few levels) to find the culprit.
fn read_config(value: &JsValue, depth: u8) -> Raw {
    match snapshot(value) {
        Ok(copy) => from_copy(copy).unwrap_or_else(|_| locate_unreadable(value, depth)),
        Err(_) => locate_unreadable(value, depth),
    }
}

/// What an unreadable value is, for the refusal: its `typeof`, or for an
/// object the collection it is (a `Map` or a `Set`, which schemastery reads as
/// neither an object nor a list), else `unreadable`.
fn unreadable(value: &JsValue) -> Raw {
    let kind = match value.js_typeof().as_string() {
        Some(t) if t != "object" => t,
        _ if value.is_instance_of::<js_sys::Map>() => "Map".into(),
        _ if value.is_instance_of::<js_sys::Set>() => "Set".into(),
        _ => "unreadable".into(),
    };
    Raw::Other(kind)
}

/// Find which field of a value that could not be copied is at fault.
fn locate_unreadable(value: &JsValue, depth: u8) -> Raw {
    if !value.is_object() || depth > 2 || is_array(value) != Some(false) {
        return unreadable(value);
    }
    let keys = match Reflect::own_keys(value) {
        Ok(keys) if keys.length() > 0 => keys,
        // A value with no fields of its own (a `Set`, say) is itself the culprit.
        _ => return unreadable(value),
    };
    let mut entries = Vec::new();
    for key in keys.iter() {
        let Some(name) = key.as_string() else {
            continue;
        };
        let field = match Reflect::get(value, &key) {
            Ok(v) => read_config(&v, depth + 1),
            Err(_) => Raw::Other("unreadable".into()),
        };
        entries.push((name, field));
    }
    Raw::Object(entries)
}

/// The one error: the value has no plain-data reading. Its message is never
/// formatted from serde's arguments, so no formatting code comes with it.
#[derive(Debug)]
pub struct Unreadable;

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("no plain-data reading")
    }
}

impl std::error::Error for Unreadable {}

impl de::Error for Unreadable {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Unreadable
    }
}

/// Deserialize `T` from a plain copy.
pub fn from_copy<'de, T: de::Deserialize<'de>>(value: JsValue) -> Result<T, Unreadable> {
    T::deserialize(Plain { value, depth: 0 })
}

/// One value of the copy, at its depth.
struct Plain {
    value: JsValue,
    depth: u8,
}

impl Plain {
    fn child(&self, value: JsValue) -> Plain {
        Plain {
            value,
            depth: self.depth.saturating_add(1),
        }
    }
}

impl<'de> de::Deserializer<'de> for Plain {
    type Error = Unreadable;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Unreadable> {
        let v = &self.value;
        if v.is_null() || v.is_undefined() || self.depth > MAX_DEPTH {
            return visitor.visit_unit();
        }
        if let Some(b) = v.as_bool() {
            return visitor.visit_bool(b);
        }
        if let Some(n) = v.as_f64() {
            return visitor.visit_f64(n);
        }
        if let Some(s) = v.as_string() {
            return visitor.visit_string(s);
        }
        if is_array(v) == Some(true) {
            let items = v.unchecked_ref::<Array>().to_vec().into_iter();
            return visitor.visit_seq(Items { items, of: &self });
        }
        if !v.is_object() {
            // A symbol or a function: no copy holds one, but this reader needs no copy.
            return Err(Unreadable);
        }
        let entries = entries_of(v);
        if entries.is_null() {
            return visitor.visit_bytes(&[]);
        }
        if entries.is_undefined() {
            return Err(Unreadable);
        }
        let entries: Array = entries.unchecked_into();
        visitor.visit_map(Entries {
            entries: entries.to_vec().into_iter(),
            value: None,
            of: &self,
        })
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

/// The elements of an array.
struct Items<'a> {
    items: std::vec::IntoIter<JsValue>,
    of: &'a Plain,
}

impl<'de> SeqAccess<'de> for Items<'_> {
    type Error = Unreadable;

    fn next_element_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, Unreadable> {
        match self.items.next() {
            Some(item) => seed.deserialize(self.of.child(item)).map(Some),
            None => Ok(None),
        }
    }
}

/// The `[key, value]` pairs of an object or a `Map`; every key must be a string.
struct Entries<'a> {
    entries: std::vec::IntoIter<JsValue>,
    value: Option<JsValue>,
    of: &'a Plain,
}

impl<'de> MapAccess<'de> for Entries<'_> {
    type Error = Unreadable;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Unreadable> {
        let Some(pair) = self.entries.next() else {
            return Ok(None);
        };
        let pair: Array = pair.unchecked_into();
        let key = pair.get(0).as_string().ok_or(Unreadable)?;
        self.value = Some(pair.get(1));
        seed.deserialize(key.into_deserializer()).map(Some)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<S::Value, Unreadable> {
        let value = self.value.take().ok_or(Unreadable)?;
        seed.deserialize(self.of.child(value))
    }
}
