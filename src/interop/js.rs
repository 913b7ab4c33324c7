//! The JavaScript side, as Rust sees it: the bindings of the boundary's JavaScript modules and of the host, and defensive reads of host values.
//!
//! Raw bindings and small safe helpers only, with no state and no guard logic:
//! every other module of the boundary takes what it needs from here. Every call
//! into JavaScript that can throw goes through a binding with `catch` (or
//! through `Reflect` and `Function::call*`, which js-sys binds that way), so no
//! JavaScript exception ever unwinds through wasm frames.

use js_sys::{Array, Function, Object, Reflect};
use serde::Serialize;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::error::Error;

#[wasm_bindgen(module = "/src/interop/trampolines.js")]
extern "C" {
    pub(super) fn configure(
        constants: &JsValue,
        shape: &JsValue,
        exports: &JsValue,
        claim: &JsValue,
        observed: &JsValue,
    );
    #[wasm_bindgen(js_name = makeMethod)]
    pub(super) fn make_method(
        token: u32,
        point: &str,
        previous: &JsValue,
        fallback: &JsValue,
        by_first: bool,
    ) -> Function;
    #[wasm_bindgen(js_name = makeListener)]
    pub(super) fn make_listener(token: u32, point: &str) -> Function;
    #[wasm_bindgen(js_name = makePreStep)]
    pub(super) fn make_pre_step(token: u32) -> Function;
    #[wasm_bindgen(js_name = makeInsertObserver)]
    pub(super) fn make_insert_observer(token: u32) -> Function;
}

#[wasm_bindgen(module = "/src/interop/deferred.js")]
extern "C" {
    pub(super) fn raise(error: &JsValue);
    #[wasm_bindgen(js_name = logLater)]
    pub(super) fn log_later(log: &Function, text: &str);
    #[wasm_bindgen(js_name = reportLater)]
    pub(super) fn report_later(on_report: &Function, report: &JsValue);
}

#[wasm_bindgen(module = "/src/interop/patches.js")]
extern "C" {
    pub(super) fn unpatch(record: &JsValue);
    #[wasm_bindgen(js_name = patchAlive)]
    pub(super) fn patch_alive(record: &JsValue) -> bool;
    #[wasm_bindgen(js_name = stalePatches)]
    pub(super) fn stale_patches(owner: &JsValue, kind: &str) -> Array;
}

#[wasm_bindgen(module = "/src/interop/claims.js")]
extern "C" {
    #[wasm_bindgen(js_name = patchClaim, catch)]
    pub(super) fn patch_claim(
        inbox: &JsValue,
        owner: &JsValue,
        token: u32,
    ) -> Result<JsValue, JsValue>;
    pub(super) fn vouched(inbox: &JsValue, list: &JsValue) -> bool;
}

#[wasm_bindgen(module = "/src/interop/flights.js")]
extern "C" {
    #[wasm_bindgen(js_name = patchQuery, catch)]
    pub(super) fn patch_query(
        registry: &JsValue,
        owner: &JsValue,
        guard: u32,
    ) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(js_name = patchResolve, catch)]
    pub(super) fn patch_resolve(
        registry: &JsValue,
        owner: &JsValue,
        unbound: u32,
        refused: u32,
    ) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(js_name = makeAnnouncer)]
    pub(super) fn make_announcer() -> Function;
    /// What the reports of ended flights need, for a chunk at once: their texts,
    /// and their lengths written into `lengths` (see `unpack_texts`).
    #[wasm_bindgen(js_name = flightTexts)]
    pub(super) fn flight_texts(keys: &[f64], lengths: &mut [i32]) -> String;
    pub(super) fn deliver(work: &Array);
}

#[wasm_bindgen(module = "/src/interop/shapes.js")]
extern "C" {
    /// The shape code of every entry of `list` (see `Probe::from_code`), in one
    /// crossing: the glue copies the codes into a `Vec` it allocates in this
    /// instance's memory.
    pub(super) fn shapes(list: &JsValue) -> Vec<u32>;
    #[wasm_bindgen(js_name = shapeCode)]
    pub(super) fn shape(value: &JsValue) -> u32;
}

#[wasm_bindgen(module = "/src/interop/values.js")]
extern "C" {
    #[wasm_bindgen(js_name = plainCopy)]
    pub(super) fn plain_copy(value: &JsValue) -> JsValue;
    #[wasm_bindgen(js_name = renderHead)]
    pub(super) fn render_head_js(value: &JsValue, units: u32) -> String;
    #[wasm_bindgen(js_name = renderAt)]
    pub(super) fn render_at(list: &JsValue, index: u32, units: u32) -> String;
    #[wasm_bindgen(catch)]
    pub(super) fn snapshot(value: &JsValue) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(js_name = safeString)]
    pub(super) fn safe_string(value: &JsValue) -> String;
    /// `String(value)`, cut to `max` UTF-16 units with `…`, never throwing.
    #[wasm_bindgen(js_name = textOf)]
    pub(super) fn text_of(value: &JsValue, max: u32) -> String;
    #[wasm_bindgen(js_name = isArray)]
    pub(super) fn is_array(value: &JsValue) -> Option<bool>;
    /// An object's `[key, value]` pairs, `null` for bytes, `undefined` for an
    /// iterable (see `entriesOf` in values.js).
    #[wasm_bindgen(js_name = entriesOf)]
    pub(super) fn entries_of(value: &JsValue) -> JsValue;
}

#[wasm_bindgen(module = "/src/interop/edits.js")]
extern "C" {
    #[wasm_bindgen(js_name = repairMessage)]
    pub(super) fn repair_message(create: &Function, value: &JsValue, source: &JsValue) -> JsValue;
    #[wasm_bindgen(js_name = repairAt)]
    pub(super) fn repair_at(
        batch: &JsValue,
        index: u32,
        create: &Function,
        summary: &JsValue,
    ) -> u32;
    #[wasm_bindgen(js_name = dropAt)]
    pub(super) fn drop_at(batch: &JsValue, index: u32) -> bool;
}

#[wasm_bindgen(module = "/src/interop/supervisor.js")]
extern "C" {
    #[wasm_bindgen(js_name = bindShim)]
    pub(super) fn bind_shim(state: &JsValue);
    #[wasm_bindgen(js_name = openMount, catch)]
    pub(super) fn open_mount(
        kind: &str,
        target: &JsValue,
        config: &JsValue,
        host: &JsValue,
        logger: &JsValue,
    ) -> Result<JsValue, JsValue>;
    pub(super) fn hold(record: &JsValue, disposer: &JsValue);
    pub(super) fn release(record: &JsValue, disposer: &JsValue);
    pub(super) fn abandon(record: &JsValue);
    #[wasm_bindgen(js_name = disposerOf)]
    pub(super) fn disposer_of(record: &JsValue) -> Function;
    #[wasm_bindgen(js_name = faultFacts)]
    pub(super) fn fault_facts() -> JsValue;
    #[wasm_bindgen(js_name = recoveryDue)]
    pub(super) fn recovery_due();
    #[cfg(feature = "fault-injection")]
    #[wasm_bindgen(js_name = skewClock)]
    pub(super) fn skew_clock_js(ms: f64);
}

/// Fault-injection builds only: move the recovery policy's clock on by `ms`.
#[cfg(feature = "fault-injection")]
pub fn skew_clock(ms: f64) {
    skew_clock_js(ms);
}

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = performance, js_name = now)]
    pub(super) fn monotonic_now() -> f64;
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

/// `value[key]`, or `None` when reading throws. Used off the per-query and
/// per-claim paths only (the key is decoded into a JavaScript string per read).
pub(super) fn get(value: &JsValue, key: &str) -> Option<JsValue> {
    if !value.is_object() && !value.is_function() {
        return None;
    }
    Reflect::get(value, &JsValue::from_str(key)).ok()
}

/// `list[index]`, or `undefined` when reading throws.
pub(super) fn at(list: &JsValue, index: u32) -> JsValue {
    Reflect::get_u32(list, index).unwrap_or(JsValue::UNDEFINED)
}

/// `value[key]` as a function, when it is one.
pub(super) fn get_fn(value: &JsValue, key: &str) -> Option<Function> {
    get(value, key)?.dyn_into::<Function>().ok()
}

/// `value[key]` as a Rust string, when it is a string.
pub(super) fn get_string(value: &JsValue, key: &str) -> Option<String> {
    get(value, key)?.as_string()
}

/// `value.length` as an index, when it is a non-negative number.
pub(super) fn length(value: &JsValue) -> Option<u32> {
    let n = get(value, "length")?.as_f64()?;
    Some(to_index(n))
}

/// A non-negative number as an index (clamped to `u32`), else 0.
pub(super) fn to_index(n: f64) -> u32 {
    if n.is_finite() && n >= 0.0 {
        // Clamped to u32's range first.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let i = n.min(f64::from(u32::MAX)) as u32;
        i
    } else {
        0
    }
}

/// `method.apply(this, args)`, with the host's exception as the error.
pub(super) fn call(method: &Function, this: &JsValue, args: &Array) -> Result<JsValue, JsValue> {
    method.apply(this, args)
}

/// `method(...args)` with `this`, through [`call`]: cold paths pass their
/// arguments as a list rather than reach `call2`, `call3`, … (one import each).
pub(super) fn call_with(
    method: &Function,
    this: &JsValue,
    args: &[&JsValue],
) -> Result<JsValue, JsValue> {
    call(method, this, &args.iter().copied().collect())
}

/// A fresh plain object of `entries` (defining data properties on it cannot fail).
pub(super) fn object(entries: &[(&str, &JsValue)]) -> JsValue {
    let o = Object::new();
    for (key, value) in entries {
        let _ = Reflect::set(&o, &JsValue::from_str(key), value);
    }
    o.into()
}

/// UTF-16 units of [`render`] read for a preview of `chars` characters: room for
/// every character of it escaped (an escape is 2 to 6 units, a preview is cut
/// long before that).
pub(super) fn head_units(chars: u32) -> u32 {
    chars.saturating_mul(2).saturating_add(2)
}

/// A head of [`render`] long enough for `chars` characters, and whether the
/// rendering is longer (JavaScript reads one unit more than it keeps).
pub(super) fn head(text: String, chars: u32) -> (String, bool) {
    let units = usize::try_from(head_units(chars)).unwrap_or(usize::MAX);
    let longer = crate::echo::longer_than_units(&text, units);
    (text, longer)
}

/// A prefix of [`render`] long enough for `chars` characters, and whether it was cut.
pub(super) fn render_head(value: &JsValue, chars: u32) -> (String, bool) {
    head(render_head_js(value, head_units(chars) + 1), chars)
}

/// [`render_head`] of `list[index]`, in one crossing.
pub(super) fn render_head_at(list: &JsValue, index: u32, chars: u32) -> (String, bool) {
    head(render_at(list, index, head_units(chars) + 1), chars)
}

/// A Rust value as plain JavaScript data (objects, arrays, `null` for `None`).
pub fn to_js(value: &impl Serialize) -> JsValue {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .unwrap_or(JsValue::UNDEFINED)
}

/// A real `Error` carrying `code` (and `field` for config errors), as JavaScript branches on it.
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

/// `ctx[method](...args)`, its disposer held by `record`.
pub(super) fn host_call(
    ctx: &JsValue,
    record: &JsValue,
    method: &str,
    args: &[&JsValue],
) -> Result<JsValue, Error> {
    let f = get_fn(ctx, method).ok_or(Error::HostShape {
        target: "the plugin's context",
        missing: vec!["ctx.provide, ctx.effect, ctx.inject and ctx.on"],
    })?;
    let disposer = call_with(&f, ctx, args).map_err(|_| Error::HostShape {
        target: "the plugin's context",
        missing: vec!["ctx.provide, ctx.effect, ctx.inject and ctx.on that accept the guard"],
    })?;
    hold(record, &disposer);
    Ok(disposer)
}
