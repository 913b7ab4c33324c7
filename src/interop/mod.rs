//! The JavaScript boundary: bindings, defensive reads, and the guards that patch the host.
//!
//! Everything that touches `JsValue` lives below this module. Host calls that can
//! throw are bound with `catch`; a host exception the guard only passes along is
//! re-thrown unchanged. No call into JavaScript is made while a `RefCell` borrow
//! is held, because JavaScript may call straight back in.

mod inbox;
mod inspect;
mod patch;
mod runtime;

pub use inbox::install as install_inbox;
pub use inspect::install as install_inspect;
pub use runtime::Installation;

use js_sys::{Array, Function, JsString, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::config::Raw;
use crate::error::Error;
use crate::ledger::{Fields, Value};

#[wasm_bindgen(module = "/src/interop/helpers.js")]
extern "C" {
    #[wasm_bindgen(js_name = makeWrapper)]
    fn make_wrapper(dispatch: &Function, token: u32, previous: &JsValue) -> Function;
    #[wasm_bindgen(js_name = safeString)]
    fn safe_string(value: &JsValue) -> JsString;
    fn render(value: &JsValue) -> JsString;
    #[wasm_bindgen(js_name = isArray)]
    fn is_array(value: &JsValue) -> Option<bool>;
    #[wasm_bindgen(js_name = removeAt)]
    fn remove_at(array: &Array, index: u32);
    #[wasm_bindgen(js_name = shapes)]
    fn shape_codes(list: &Array) -> js_sys::Uint32Array;
    #[wasm_bindgen(js_name = shapeCode)]
    fn shape(value: &JsValue) -> u32;
    #[wasm_bindgen(js_name = makeQueryWrapper)]
    fn make_query_wrapper(
        begin: &Function,
        settle: &Function,
        guard: u32,
        previous: &JsValue,
        platform: &JsValue,
    ) -> Function;
    #[wasm_bindgen(js_name = makeAnnouncer)]
    fn make_announcer() -> Function;
    #[wasm_bindgen(js_name = flightOf)]
    fn flight_of(key: f64) -> JsValue;
    #[wasm_bindgen(js_name = takeFlight)]
    fn take_flight(key: f64) -> JsValue;
    #[wasm_bindgen(js_name = makeTicker)]
    fn make_ticker(tick: &Function) -> Function;
    fn deliver(work: &Array);
    #[wasm_bindgen(js_name = makeClaimWrapper)]
    fn make_claim_wrapper(
        dispatch: &Function,
        token: u32,
        previous: &JsValue,
        message_code: u32,
    ) -> Function;
    #[wasm_bindgen(js_name = makeInsertObserver)]
    fn make_insert_observer(dispatch: &Function, token: u32, message_code: u32) -> Function;
    #[wasm_bindgen(js_name = makePreStep)]
    fn make_pre_step(dispatch: &Function, token: u32) -> Function;
    #[wasm_bindgen(js_name = logLater)]
    fn log_later(warn: &Function, text: &str);
    #[wasm_bindgen(js_name = userMessage, catch)]
    fn user_message(create: &Function, text: &JsValue, summary: &str) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(js_name = makeResolveWrapper)]
    fn make_resolve_wrapper(
        dispatch: &Function,
        unbound: u32,
        refused: u32,
        previous: &JsValue,
    ) -> Function;
}

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = setTimeout, catch)]
    fn set_timeout(callback: &Function, delay_ms: f64) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(js_name = clearTimeout)]
    fn clear_timeout(handle: &JsValue);
    #[wasm_bindgen(js_name = setImmediate, catch)]
    fn set_immediate(callback: &Function) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(js_name = clearImmediate, catch)]
    fn clear_immediate(handle: &JsValue) -> Result<(), JsValue>;
    #[wasm_bindgen(js_namespace = performance, js_name = now)]
    fn monotonic_now() -> f64;
    #[wasm_bindgen(js_namespace = Reflect, js_name = getOwnPropertyDescriptor, catch)]
    fn own_descriptor(target: &JsValue, key: &JsValue) -> Result<JsValue, JsValue>;
}

thread_local! {
    static PATCHED_MARKER: JsValue = js_sys::Symbol::for_("harness-guard.patched").into();
}

/// The registered marker every wrapper carries: `{ original, owner }` (made once;
/// the inbox guard checks it at every pre-step).
fn patched_marker() -> JsValue {
    PATCHED_MARKER.with(JsValue::clone)
}

/// `Symbol.for('cordis.original')`.
fn cordis_original() -> JsValue {
    js_sys::Symbol::for_("cordis.original").into()
}

/// The object under `Symbol.for('cordis.original')`, else the value itself. Never throws.
pub fn original_of(value: &JsValue) -> JsValue {
    if !value.is_object() {
        return value.clone();
    }
    match Reflect::get(value, &cordis_original()) {
        Ok(inner) if inner.is_object() => inner,
        _ => value.clone(),
    }
}

/// The shape code of every entry of `list` (see `Probe::from_code`), in one crossing.
fn shapes(list: &Array) -> Vec<u32> {
    shape_codes(list).to_vec()
}

/// `value[key]`, or `None` when reading throws. Keys are interned: each name is
/// decoded into a JavaScript string once, not on every read.
fn get(value: &JsValue, key: &str) -> Option<JsValue> {
    if !value.is_object() && !value.is_function() {
        return None;
    }
    Reflect::get(value, &JsValue::from_str(wasm_bindgen::intern(key))).ok()
}

/// `value[key]` as a function, when it is one.
fn get_fn(value: &JsValue, key: &str) -> Option<Function> {
    get(value, key)?.dyn_into::<Function>().ok()
}

/// `value[key]` as a Rust string, when it is a string.
fn get_string(value: &JsValue, key: &str) -> Option<String> {
    get(value, key)?.as_string()
}

/// `String(value)`, cut to `max` UTF-16 units with `…`, never throwing.
fn text_of(value: &JsValue, max: u32) -> String {
    let text = safe_string(value);
    let len = text.length();
    if len <= max {
        String::from(text)
    } else {
        format!("{}…", String::from(text.slice(0, max)))
    }
}

/// A prefix of [`render`] long enough for `chars` characters, and whether it was cut.
fn render_head(value: &JsValue, chars: u32) -> (String, bool) {
    let text = render(value);
    let len = text.length();
    let units = chars.saturating_mul(2).saturating_add(2);
    if len <= units {
        (String::from(text), false)
    } else {
        (String::from(text.slice(0, units)), true)
    }
}

/// A record as a fresh plain JavaScript object.
pub fn to_js(record: &impl Fields) -> JsValue {
    let object = js_sys::Object::new();
    for (key, value) in record.fields() {
        let value = match value {
            Value::Str(s) => JsValue::from_str(s),
            Value::Num(n) => JsValue::from_f64(n),
            Value::Null => JsValue::NULL,
        };
        // Defining a data property on a fresh plain object cannot fail.
        let _ = Reflect::set(
            &object,
            &JsValue::from_str(wasm_bindgen::intern(key)),
            &value,
        );
    }
    object.into()
}

/// Records as a fresh array of plain objects.
pub fn to_js_list<'a, R: Fields + 'a>(records: impl Iterator<Item = &'a R>) -> JsValue {
    records.map(|r| to_js(r)).collect::<Array>().into()
}

/// A real `Error` carrying `code`, as JavaScript branches on it.
pub fn to_js_error(error: &Error) -> JsValue {
    let js = js_sys::Error::new(&error.to_string());
    // Setting an own data property on a fresh Error cannot fail.
    let _ = Reflect::set(
        &js,
        &JsValue::from_str("code"),
        &JsValue::from_str(error.code()),
    );
    if let Error::InvalidConfig { field, .. } = error {
        let _ = Reflect::set(&js, &JsValue::from_str("field"), &JsValue::from_str(field));
    }
    js.into()
}

/// Read any JavaScript value into a [`Raw`] config tree, never throwing.
pub fn raw_config(value: &JsValue) -> Raw {
    raw_at(value, 0)
}

fn raw_at(value: &JsValue, depth: u8) -> Raw {
    if value.is_undefined() || value.is_null() {
        return Raw::Absent;
    }
    if let Some(b) = value.as_bool() {
        return Raw::Bool(b);
    }
    if let Some(n) = value.as_f64() {
        return Raw::Number(n);
    }
    if let Some(s) = value.as_string() {
        return Raw::Str(s);
    }
    if value.is_function() {
        return Raw::Other("function".into());
    }
    if is_array(value) != Some(false) {
        return Raw::Other("array".into());
    }
    if !value.is_object() || depth > 4 {
        return Raw::Other(value.js_typeof().as_string().unwrap_or_default());
    }
    let Ok(keys) = Reflect::own_keys(value) else {
        return Raw::Other("object".into());
    };
    let mut entries = Vec::new();
    for key in keys.iter() {
        let Some(name) = key.as_string() else {
            continue;
        };
        let descriptor = own_descriptor(value, &key).unwrap_or(JsValue::UNDEFINED);
        if get(&descriptor, "enumerable").and_then(|e| e.as_bool()) != Some(true) {
            continue;
        }
        let field = match Reflect::get(value, &key) {
            Ok(v) => raw_at(&v, depth + 1),
            Err(_) => Raw::Other("unreadable".into()),
        };
        entries.push((name, field));
    }
    Raw::Object(entries)
}
