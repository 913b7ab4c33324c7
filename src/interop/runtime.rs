//! The root of an instance's life: its start, the routing of every call JavaScript makes into it, and its recovery timer.
//!
//! An instance starts at the first export called (`apply`, an install, the
//! shim's hand-over) and hands the JavaScript side the constants it needs and
//! the ways in (`configure` in trampolines.js): this instance's own wasm
//! exports, which take numbers and host values only, so JavaScript calls them
//! with no glue between, and the claim entry, a closure made once. Every wrapper,
//! listener, service method and effect is a trampoline that calls [`dispatch`]
//! with a token naming what it serves (an id and a [`Role`]); [`route`] takes it
//! down to the mount (plugin.rs), a guard (inspect.rs, inbox.rs) or the settings
//! link. A client query reaches the guard through entries of its own, [`begin`],
//! [`settle`] and [`tick`], which carry numbers only; a claimed batch that needs
//! the guard comes through the claim entry, with numbers, the batch, its shape
//! codes and the session id. After a fault the instance is replaced (see
//! supervisor.js), and what the faulted one made forwards.
//!
//! Nothing below imports this module: the mount, the guards and the settings
//! link take what they share from instance.rs and keep their own state. So a
//! call can be followed from [`apply`] down, never back up.
//!
//! The recovery after a fault waits on a gloo [`Timeout`] owned here, in the
//! fresh instance (dropping it clears it): armed once per fault, off every
//! per-query path. Its callback only tells the JavaScript side (`recoveryDue`):
//! the recovery may replace this instance, so it runs once the callback's frame
//! is gone.

use std::cell::RefCell;

use gloo_timers::callback::Timeout;
use js_sys::{Array, Function};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::fault::{self, Point};
use super::instance::{self, exclusive, Role};
use super::js::{bind_shim, configure, get, raise, recovery_due, to_index, to_js_error};
use super::{inbox, inspect, plugin};
use crate::error::Error;
use crate::recovery::Plan;

/// An inbox entry: `(token, list, a, b, codes, flags, session, target) → bool`, a
/// list of the host's with two numbers, its shape codes, [`inbox::flag`]s and two
/// strings. Both inbox entries have this type, so they share one piece of glue.
type InboxEntry =
    dyn Fn(u32, JsValue, f64, f64, Vec<u32>, u32, Option<String>, Option<String>) -> bool;

/// What lives as long as the instance: the inbox entries, and the recovery's timer.
struct Runtime {
    /// The entry of a claimed batch that needs the guard (`patchClaim` in
    /// claims.js). Owned here and never read: JavaScript calls it.
    _claim: Closure<InboxEntry>,
    /// The entry of an inbox write that inserted something other than usable
    /// messages (`makeInsertObserver` in trampolines.js). Owned here, never read.
    _observed: Closure<InboxEntry>,
    /// The recovery's backoff, while the guard is down and waits to recover.
    recovery: RefCell<Option<Timeout>>,
}

/// The owner named in every marker this build writes.
fn patch_owner() -> &'static str {
    concat!("cordis-plugin-harness-guard@", env!("CARGO_PKG_VERSION"))
}

/// The constants the JavaScript side works with, handed over once per instance
/// (see `configure` in trampolines.js and `life.K` in supervisor.js): key and text
/// pairs set on one object (a loop over them is a fraction of the `.wasm` a
/// derived `Serialize` of the same fields was).
fn constants() -> JsValue {
    let failed_message = Error::GuardFailed.to_string();
    let bound = crate::recovery::bound_text();
    let gave_up_line = format!(
        "it recovered {bound} and faulted again, so it stays down (every wrapper forwards) \
         until the process restarts"
    );
    let refusal_message = format!(
        "harness-guard recovered {bound} and faulted again: it is not mounted again until \
         the process restarts"
    );
    let texts: [(&str, &str); 15] = [
        ("nextTurn", "next-turn"),
        ("splicedEvent", "agent/inbox/spliced"),
        ("inserted", "inserted"),
        ("client", "client"),
        ("resolvedEvent", "cordis/inspect-query-resolved"),
        ("owner", patch_owner()),
        ("failedKey", "failed"),
        ("failedCode", Error::GuardFailed.code()),
        ("failedMessage", &failed_message),
        (
            "failedLine",
            "harness-guard stood down after an internal fault: every wrapper now forwards to the \
             method it replaced and waiting client queries were cancelled",
        ),
        ("recoversLine", "it recovers on a fresh instance"),
        ("gaveUpLine", &gave_up_line),
        (
            "recoveredLine",
            "harness-guard recovered on a fresh instance: both halves are guarding again",
        ),
        ("refusalCode", Error::StoodDown.code()),
        ("refusalMessage", &refusal_message),
    ];
    let object = js_sys::Object::new();
    for (key, text) in texts {
        let _ = js_sys::Reflect::set(&object, &JsValue::from_str(key), &JsValue::from_str(text));
    }
    let numbers = |entries: &[(&str, u32)]| {
        let table = js_sys::Object::new();
        for (key, n) in entries {
            let _ = js_sys::Reflect::set(&table, &JsValue::from_str(key), &JsValue::from(*n));
        }
        JsValue::from(table)
    };
    for (key, value) in [
        ("messageCode", JsValue::from(crate::inbox::MESSAGE_CODE)),
        (
            "inboxFlags",
            numbers(&[
                ("foreign", inbox::flag::FOREIGN),
                ("forTurn", inbox::flag::FOR_TURN),
                ("unread", inbox::flag::UNREAD),
                ("clean", inbox::flag::CLEAN),
                ("seq", inbox::flag::SEQ),
            ]),
        ),
        (
            "repair",
            numbers(&[
                ("repaired", inbox::Repair::Repaired as u32),
                ("refused", inbox::Repair::Refused as u32),
                ("unmade", inbox::Repair::Unmade as u32),
            ]),
        ),
    ] {
        let _ = js_sys::Reflect::set(&object, &JsValue::from_str(key), &value);
    }
    object.into()
}

thread_local! {
    static RUNTIME: Runtime = Runtime::new();
}

/// Start this instance, once: hand the JavaScript side the constants it works
/// with and this instance's exports it enters through. Every export that
/// starts the guard's work calls it first.
fn start() {
    RUNTIME.with(|_| ());
}

impl Runtime {
    #[inline(never)]
    fn new() -> Self {
        let claim = Closure::<InboxEntry>::new(claim);
        let observed = Closure::<InboxEntry>::new(observed);
        configure(
            &constants(),
            &js_sys::JSON::parse(crate::inbox::SHAPE_LAYOUT_JSON).unwrap_or(JsValue::UNDEFINED),
            &wasm_bindgen::exports(),
            claim.as_ref(),
            observed.as_ref(),
        );
        Self {
            _claim: claim,
            _observed: observed,
            recovery: RefCell::new(None),
        }
    }
}

/// A trampoline's call (`enter` in trampolines.js), with the token naming what it
/// serves. A refusal or a host's throw is raised: handed to the JavaScript side,
/// which throws it once the guard has left wasm.
pub fn dispatch(token: u32, previous: &JsValue, this: &JsValue, args: &Array) -> JsValue {
    match route(token, previous, this, args) {
        Ok(value) => value,
        Err(error) => {
            raise(&error);
            JsValue::UNDEFINED
        }
    }
}

/// An inbox's claimed batch that needs the guard (`patchClaim` in claims.js):
/// `codes` its entries' shape codes, `flags` [`inbox::flag`]s; no `target`.
/// Returns whether to claim again. (A closure, not an export: its glue converts
/// the codes and the session id in JavaScript; converted in wasm, a batch with a
/// bad entry measured 0.4–1.2% slower per claim.)
#[allow(clippy::too_many_arguments)]
fn claim(
    token: u32,
    batch: JsValue,
    split: f64,
    next_turn: f64,
    codes: Vec<u32>,
    flags: u32,
    session: Option<String>,
    _target: Option<String>,
) -> bool {
    fault::check(Point::Claim);
    let claimed = inbox::Claimed {
        batch,
        split: (split >= 0.0).then(|| to_index(split)),
        next_turn: to_index(next_turn),
        codes: inbox::Codes::of(codes, flags),
        foreign: flags & inbox::flag::FOREIGN != 0,
        for_turn: flags & inbox::flag::FOR_TURN != 0,
        session,
    };
    inbox::claim(token >> instance::ROLE_BITS, claimed)
}

/// An inbox write that inserted something other than usable messages, as the
/// `session/event` observer read it (`makeInsertObserver` in trampolines.js):
/// the list, where it went (`start`, and `seq` when [`inbox::flag::SEQ`] is set),
/// its entries' shape codes, the session's id and the pending list written.
/// Read in JavaScript, where the observer has them: read from wasm, they were
/// a call out of wasm each, and several for most. Returns nothing to do (`false`).
#[allow(clippy::too_many_arguments)]
fn observed(
    token: u32,
    list: JsValue,
    start: f64,
    seq: f64,
    codes: Vec<u32>,
    flags: u32,
    session: Option<String>,
    target: Option<String>,
) -> bool {
    fault::check(Point::SessionEvent);
    let inserted = inbox::Inserted {
        list,
        codes,
        start,
        seq: (flags & inbox::flag::SEQ != 0).then_some(seq),
        target,
        session,
    };
    inbox::session_event(token >> instance::ROLE_BITS, inserted);
    false
}

/// The registry's call of a client query returned waiting: the flight's key, or
/// -1 to leave it unguarded (see [`inspect::begin`]).
#[inline(always)]
pub fn begin(guard: u32, started_at: f64, unannounced: bool) -> f64 {
    fault::check(Point::Begin);
    inspect::begin(guard, started_at, unannounced)
}

/// A flight's registry promise settled first (see [`inspect::settle`]).
#[inline(always)]
pub fn settle(key: f64) {
    fault::check(Point::Settle);
    inspect::settle(key);
}

/// The deadline timer fired: the endings to deliver (see [`inspect::tick`]).
pub fn tick() -> Array {
    fault::check(Point::Tick);
    inspect::tick()
}

/// A trampoline's call: decoded from its token and taken down to what serves it.
fn route(token: u32, previous: &JsValue, this: &JsValue, args: &Array) -> Result<JsValue, JsValue> {
    let Some((role, id)) = Role::of(token) else {
        return forward(previous, this, args);
    };
    fault::check(role.point());
    let none = Ok(JsValue::UNDEFINED);
    match role {
        Role::Unbound => Ok(inspect::unbound(id, args)),
        Role::Refused => Ok(inspect::refused(id, previous, args)),
        Role::PreStep => {
            inbox::pre_step(id, &args.get(0));
            none
        }
        Role::Created => {
            inbox::created(id, &args.get(0));
            none
        }
        Role::Uninstall => {
            inspect::dispose(id);
            none
        }
        _ => plugin::route(id, role, args).map_err(|e| to_js_error(&e)),
    }
}

/// Call `previous` with the caller's `this` and arguments, unchanged.
fn forward(previous: &JsValue, this: &JsValue, args: &Array) -> Result<JsValue, JsValue> {
    match previous.dyn_ref::<Function>() {
        Some(f) => f.apply(this, args),
        None => Err(js_sys::TypeError::new("harness-guard: the wrapped method is gone").into()),
    }
}

/// `apply(ctx, config, host)`: mount both halves (see [`plugin::apply`]).
pub fn apply(ctx: &JsValue, config: &JsValue, host: &JsValue) -> Result<(), Error> {
    start();
    plugin::apply(ctx, config, host)
}

/// Apply a mount or a programmatic install again, on this fresh instance, from
/// its record: the recovery after a fault (see [`plugin::reapply`]).
pub fn reapply(record: &JsValue) -> Result<(), Error> {
    start();
    plugin::reapply(record)
}

/// `installInspectClientGuard(registry, options)` (see [`inspect::install_programmatic`]).
pub fn install_inspect_client_guard(
    registry: &JsValue,
    options: &JsValue,
    host: &JsValue,
) -> Result<Function, Error> {
    start();
    inspect::install_programmatic(registry, options, host)
}

/// Share the plugin module's `host.state` with the JavaScript side, once this
/// instance (and with it the constants that side needs) exists: the plugin
/// module enters the guard through it from then on.
pub fn bind_host(host: &JsValue) {
    start();
    if let Some(state) = get(host, "state") {
        bind_shim(&state);
    }
}

/// Wait `after_ms`, then recover (the supervisor applies every live mount
/// again, once this timer's callback returned).
pub fn schedule_recovery(after_ms: f64) {
    // A backoff is at most LONGEST_BACKOFF_MS (16 s): well inside a u32 of ms.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let delay = after_ms.clamp(0.0, crate::recovery::LONGEST_BACKOFF_MS) as u32;
    let timeout = Timeout::new(delay, || {
        // The timer fired: it is no longer wanted. Dropped after the borrow.
        let fired = RUNTIME.with(|rt| exclusive(&rt.recovery, Option::take));
        drop(fired);
        recovery_due();
    });
    let old = RUNTIME.with(|rt| exclusive(&rt.recovery, |r| r.replace(timeout)));
    drop(old);
}

/// Drop a waiting recovery (the last mount went away, or one recovers now).
pub fn cancel_recovery() {
    let old = RUNTIME.with(|rt| exclusive(&rt.recovery, Option::take));
    drop(old);
}

/// The recovery plan after a fault, as `[giveUp, afterMs]`.
pub fn recovery_plan(recent: &[f64], now: f64) -> Array {
    let (give_up, after_ms) = match crate::recovery::plan(recent, now) {
        Plan::GiveUp => (true, 0.0),
        Plan::Retry { after_ms } => (false, after_ms),
    };
    list(&[JsValue::from(give_up), JsValue::from(after_ms)])
}

/// `values` as an array (one push per value: cold paths only, where an
/// `Array.of` import per arity would cost the `.wasm` more).
fn list(values: &[JsValue]) -> Array {
    values.iter().collect()
}

/// Flights in the air across every inspect guard, whether the deadline timer
/// keeps the process alive, and whether it is set at all.
pub fn in_flight() -> Array {
    let (flights, held, set) = inspect::in_flight();
    list(&[
        JsValue::from(u32::try_from(flights).unwrap_or(u32::MAX)),
        JsValue::from(held),
        JsValue::from(set),
    ])
}
