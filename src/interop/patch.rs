//! Patching a method by marker: an RAII handle over a patch record of the JavaScript side.
//!
//! The wrapper, its marker (`Symbol.for('harness-guard.patched')` → `{ original,
//! owner }`) and the record of what the slot held are made in `patches.js` (for
//! `patchClaim` in claims.js, `patchQuery` and `patchResolve` in flights.js),
//! which also keeps every record by target and key: a fresh instance that patches
//! a slot where a faulted one left its wrapper re-points that wrapper instead of
//! stacking another. Dropping the handle takes the patch off (the slot gets its
//! method back while it still holds our wrapper; a later patch over ours is left
//! alone).

use wasm_bindgen::prelude::*;

use super::js::{patch_alive, unpatch};

/// One replaced method. Dropping it restores the slot, if the slot still holds our wrapper.
#[derive(Debug)]
#[must_use = "dropping a PatchHandle restores the original method at once"]
pub(super) struct PatchHandle {
    record: JsValue,
}

impl PatchHandle {
    /// Patch through `install` (one of the JavaScript side's `patch*`), which returns the
    /// patch record, `undefined` when the slot holds a live harness-guard wrapper
    /// already (installing twice never wraps twice), or throws when the slot holds
    /// no function or refuses the wrapper.
    pub(super) fn install(
        install: impl FnOnce() -> Result<JsValue, JsValue>,
    ) -> Result<Option<Self>, JsValue> {
        let record = install()?;
        Ok((!record.is_undefined()).then_some(Self { record }))
    }

    /// Whether the patched object is still alive (records are held weakly).
    pub(super) fn is_alive(&self) -> bool {
        patch_alive(&self.record)
    }
}

impl Drop for PatchHandle {
    fn drop(&mut self) {
        unpatch(&self.record);
    }
}
