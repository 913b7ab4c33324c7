//! harness-guard: guards for the DeepSeek Harness cordis host, compiled to WebAssembly.
//!
//! Two failures wedge or kill agent sessions, and this crate guards both:
//! `platform: "client"` inspect queries that no page answers (a deadline, the
//! page's refusal surfaced, an unbound agent refused), and inbox entries that
//! are not messages (repaired, quarantined or reported at the claim). What the
//! guards saw is offered to the model as the read-only host inspect provider
//! `HarnessGuard`.
//!
//! The pure core ([`config`], [`flights`], [`inbox`], [`sightings`], [`ledger`],
//! [`provider`], [`command`], [`recovery`], [`echo`], [`throttle`], [`error`],
//! [`idmap`]) works on plain Rust types and is tested
//! natively. The boundary (`interop`) does the cordis wiring and patches the
//! live host objects; the `#[wasm_bindgen]` exports below only hand their
//! inputs to it and map errors to coded JavaScript `Error`s.
//!
//! ```js
//! // The plugin module (the package's main entry) calls, once at import:
//! //   bindHost(host)             // host: { state, createUserMessage, validateJsonSchemaValue? }
//! // and once per mount:
//! //   apply(ctx, config, host)
//! ```
#![deny(missing_docs, missing_debug_implementations)]

/// `impl Serialize` for a struct as a map of the entries given, in order:
/// `serialize_as_map!(Type |v| { "key" => &v.field, … })`, each value a reference
/// to what is written. The records, counts, status and config serialize as maps
/// rather than through a derive: a derived `Serialize` takes serde's struct path,
/// which serde-wasm-bindgen serves through a cache of field names (a `HashMap`, with
/// hashbrown's code) that costs the `.wasm` more than these impls do. A struct with
/// optional entries writes its impl out.
macro_rules! serialize_as_map {
    ($ty:ty |$v:ident| { $($key:literal => $value:expr),+ $(,)? }) => {
        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeMap;
                let $v = self;
                let mut map = serializer.serialize_map(None)?;
                $(map.serialize_entry($key, $value)?;)+
                map.end()
            }
        }
    };
}

pub mod command;
pub mod config;
pub mod echo;
pub mod error;
pub mod flights;
pub mod idmap;
pub mod inbox;
pub mod ledger;
pub mod provider;
pub mod recovery;
pub mod sightings;
pub mod throttle;

#[cfg(target_arch = "wasm32")]
mod interop;

#[cfg(target_arch = "wasm32")]
pub use exports::*;

#[cfg(target_arch = "wasm32")]
mod exports {
    use js_sys::{Array, Function};
    use wasm_bindgen::prelude::*;

    use crate::config;
    use crate::interop::{self, to_js_error};

    /// Mount harness-guard on a cordis context: the services, both halves and
    /// the `HarnessGuard` provider, each a labelled effect of `ctx`. `host` is the
    /// plugin module's `{ state, createUserMessage, validateJsonSchemaValue? }`.
    /// An invalid `config` throws `HARNESS_GUARD_INVALID_CONFIG` with nothing installed.
    #[wasm_bindgen]
    pub fn apply(ctx: JsValue, config: JsValue, host: JsValue) -> Result<(), JsValue> {
        interop::apply(&ctx, &config, &host).map_err(|e| to_js_error(&e))
    }

    /// Hand the plugin module's `host` to the boundary's JavaScript side (once, at import).
    #[wasm_bindgen(js_name = bindHost)]
    pub fn bind_host(host: JsValue) {
        interop::bind_host(&host);
    }

    /// Apply a mount (or a programmatic install) again on this instance, from its
    /// record: the recovery after a fault of an earlier instance.
    #[wasm_bindgen]
    pub fn reapply(record: JsValue) -> Result<(), JsValue> {
        interop::reapply(&record).map_err(|e| to_js_error(&e))
    }

    // The ways into a started instance (but a claim's, a closure: see
    // runtime.rs). The JavaScript side calls them as the instance's own wasm
    // exports, handed over when it starts (`configure` in trampolines.js), not
    // through the glue: they take numbers and host values only, so nothing needs
    // converting, and each instance hands over its own.

    /// A trampoline's call: `token` names what it serves (see trampolines.js).
    #[wasm_bindgen]
    pub fn dispatch(token: u32, previous: &JsValue, this: &JsValue, args: &Array) -> JsValue {
        interop::dispatch(token, previous, this, args)
    }

    /// A client query the registry made wait: its flight's key, or -1 (see flights.js).
    #[wasm_bindgen]
    pub fn begin(guard: u32, started_at: f64, unannounced: bool) -> f64 {
        interop::begin(guard, started_at, unannounced)
    }

    /// The registry settled the flight of `key` first.
    #[wasm_bindgen]
    pub fn settle(key: f64) {
        interop::settle(key);
    }

    /// The deadline timer fired: `[key, code, message, …]`, the endings to deliver.
    #[wasm_bindgen]
    pub fn tick() -> Array {
        interop::tick()
    }

    /// After a fault: `[giveUp, afterMs]`, given the monotonic times of the
    /// recoveries so far and now (see [`crate::recovery`]).
    #[wasm_bindgen(js_name = recoveryPlan)]
    pub fn recovery_plan(recent: &[f64], now: f64) -> Array {
        interop::recovery_plan(recent, now)
    }

    /// Recover after `after_ms` (a gloo `Timeout` owned by this instance's runtime).
    #[wasm_bindgen(js_name = scheduleRecovery)]
    pub fn schedule_recovery(after_ms: f64) {
        interop::schedule_recovery(after_ms);
    }

    /// Drop a waiting recovery.
    #[wasm_bindgen(js_name = cancelRecovery)]
    pub fn cancel_recovery() {
        interop::cancel_recovery();
    }

    /// Validate the plugin config; returns it normalized with every default filled in.
    /// An invalid value throws an `Error` with `code: 'HARNESS_GUARD_INVALID_CONFIG'`
    /// and `field`, naming the field, the value and the allowed range.
    #[wasm_bindgen(js_name = parseConfig)]
    pub fn parse_config(raw: JsValue) -> Result<JsValue, JsValue> {
        let config = config::parse(&interop::raw_config(&raw)).map_err(|e| to_js_error(&e))?;
        Ok(interop::to_js(&config))
    }

    /// Guard a registry without a plugin row; returns `dispose()`.
    #[wasm_bindgen(js_name = installInspectClientGuard)]
    pub fn install_inspect_client_guard(
        registry: JsValue,
        options: JsValue,
        host: JsValue,
    ) -> Result<Function, JsValue> {
        interop::install_inspect_client_guard(&registry, &options, &host)
            .map_err(|e| to_js_error(&e))
    }

    /// The object under `Symbol.for('cordis.original')`, else the value itself.
    #[wasm_bindgen(js_name = originalOf)]
    pub fn original_of(value: JsValue) -> JsValue {
        interop::original_of(&value)
    }

    /// Diagnostics: `[flights in the air, whether the deadline timer holds the
    /// process (a flight waits), whether it is set at all]`.
    #[wasm_bindgen(js_name = inFlight)]
    pub fn in_flight() -> Array {
        interop::in_flight()
    }

    /// Fault-injection builds only: move the recovery policy's clock on by `ms`,
    /// so a test can recover more often than the policy's window allows.
    #[cfg(feature = "fault-injection")]
    #[wasm_bindgen(js_name = skewClock)]
    pub fn skew_clock(ms: f64) {
        interop::skew_clock(ms);
    }

    /// Fault-injection builds only: the next entry into wasm at `point` traps.
    #[cfg(feature = "fault-injection")]
    #[wasm_bindgen(js_name = injectFault)]
    pub fn inject_fault(point: &str) -> Result<(), JsValue> {
        interop::inject_fault(point).map_err(|e| to_js_error(&e))
    }
}

/// The allocator of the wasm build (see Cargo.toml for why).
#[cfg(target_arch = "wasm32")]
#[global_allocator]
static TALC: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();
