//! The JavaScript boundary: the cordis wiring, the guards on live host objects, and the bindings beneath them.
//!
//! Everything that touches `JsValue` lives below this module, in one
//! direction: [`runtime`] is the root of an instance's life (its start, the
//! routing of every call JavaScript makes into it, the recovery timer); below it
//! the mount ([`plugin`]: `apply`, the services, effects and injections), which
//! installs the guards ([`inspect`] on the registry, [`inbox`] on agents) and the
//! settings link ([`settings`]); all of them take what they share from
//! [`instance`] (tokens and roles, trampolines, ids, the warn-line bound) and
//! the bindings from [`js`]. No module imports one above it.
//!
//! No call into JavaScript is made while a `RefCell` borrow is held, because
//! JavaScript may call straight back in (a conflict traps: see
//! `instance::exclusive`); but calls that never call back: Node's timer
//! functions and `keepTimers` on the deadline timer's own cell, and
//! serde-wasm-bindgen building a record's plain value from a ledger.

mod de;
mod fault;
mod inbox;
mod inspect;
mod instance;
mod js;
mod patch;
mod plugin;
mod runtime;
mod settings;
mod timer;

pub use de::raw_config;
#[cfg(feature = "fault-injection")]
pub use fault::inject as inject_fault;
#[cfg(feature = "fault-injection")]
pub use js::skew_clock;
pub use js::{original_of, to_js, to_js_error};
pub use runtime::{
    apply, begin, bind_host, cancel_recovery, dispatch, in_flight, install_inspect_client_guard,
    reapply, recovery_plan, schedule_recovery, settle, tick,
};
