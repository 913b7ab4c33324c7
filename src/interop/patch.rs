//! Patching a method by marker, and restoring it only while the slot still holds our wrapper.

use js_sys::{Function, Object, Reflect, WeakRef};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::{get, own_descriptor, patched_marker};

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = Reflect, js_name = defineProperty, catch)]
    fn define_property(
        target: &JsValue,
        key: &JsValue,
        descriptor: &Object,
    ) -> Result<bool, JsValue>;
    #[wasm_bindgen(js_namespace = Reflect, js_name = deleteProperty, catch)]
    fn delete_property(target: &JsValue, key: &JsValue) -> Result<bool, JsValue>;
}

/// The owner named in every marker this build writes.
pub(super) const OWNER: &str = concat!("cordis-plugin-harness-guard@", env!("CARGO_PKG_VERSION"));

/// Whether `method` is a wrapper some harness-guard installed (any copy, any version).
pub(super) fn is_patched(method: &JsValue) -> bool {
    method.is_function()
        && Reflect::get(method, &patched_marker())
            .map(|m| m.is_object())
            .unwrap_or(false)
}

/// One replaced method. Dropping it restores the slot, if the slot still holds our wrapper.
#[derive(Debug)]
#[must_use = "dropping a PatchHandle restores the original method at once"]
pub(super) struct PatchHandle {
    /// Held weakly: a patch never keeps an inbox (or a registry) alive.
    target: WeakRef<Object>,
    key: JsValue,
    wrapper: Function,
    /// The own property descriptor before the patch; `None` when the method was inherited.
    own: Option<JsValue>,
}

impl PatchHandle {
    /// Replace `target[key]` (which must currently be a function) with `make(previous)`.
    ///
    /// Returns `Ok(None)` when the slot already holds a harness-guard wrapper, so
    /// installing twice never wraps twice.
    pub(super) fn install(
        target: &JsValue,
        key: &str,
        make: impl FnOnce(&JsValue) -> Function,
    ) -> Result<Option<Self>, JsValue> {
        let key_js = JsValue::from_str(key);
        let previous = Reflect::get(target, &key_js)?;
        if !previous.is_function() {
            return Err(js_sys::TypeError::new(&format!("{key} is not a function")).into());
        }
        if is_patched(&previous) {
            return Ok(None);
        }
        let own = own_descriptor(target, &key_js)?;
        let own = (!own.is_undefined()).then_some(own);
        let wrapper = make(&previous);
        let marker = Object::new();
        Reflect::set(&marker, &"original".into(), &previous)?;
        Reflect::set(&marker, &"owner".into(), &OWNER.into())?;
        define_property(
            &wrapper,
            &patched_marker(),
            &descriptor(&marker.into(), false),
        )?;
        let enumerable = own
            .as_ref()
            .and_then(|d| get(d, "enumerable"))
            .and_then(|e| e.as_bool())
            .unwrap_or(false);
        if !define_property(target, &key_js, &descriptor(&wrapper, enumerable))? {
            return Err(js_sys::TypeError::new(&format!("{key} cannot be replaced")).into());
        }
        Ok(Some(Self {
            target: WeakRef::new(target.unchecked_ref::<Object>()),
            key: key_js,
            wrapper,
            own,
        }))
    }

    /// Whether the patched object is still alive.
    pub(super) fn is_alive(&self) -> bool {
        self.target.deref().is_some()
    }

    /// Put the previous method back, if our wrapper is still the own value of the slot.
    fn restore(&self) {
        let Some(target) = self.target.deref() else {
            return;
        };
        let target: JsValue = target.into();
        let current = own_descriptor(&target, &self.key)
            .ok()
            .and_then(|d| get(&d, "value"));
        if current.as_ref() != Some(self.wrapper.as_ref()) {
            // Someone patched over us (or removed us): leave their patch alone. Our
            // wrapper, if still in their chain, forwards once its guard is gone.
            return;
        }
        let _ = match &self.own {
            Some(own) => define_property(&target, &self.key, own.unchecked_ref()),
            None => delete_property(&target, &self.key),
        };
    }
}

impl Drop for PatchHandle {
    fn drop(&mut self) {
        self.restore();
    }
}

fn descriptor(value: &JsValue, enumerable: bool) -> Object {
    let d = Object::new();
    let _ = Reflect::set(&d, &"value".into(), value);
    let _ = Reflect::set(&d, &"writable".into(), &JsValue::TRUE);
    let _ = Reflect::set(&d, &"configurable".into(), &JsValue::TRUE);
    let _ = Reflect::set(&d, &"enumerable".into(), &JsValue::from_bool(enumerable));
    d
}
