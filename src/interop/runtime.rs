//! The owner of everything long-lived in one instance: guard state, the closures JavaScript calls, the timers.
//!
//! The closures are made once per wasm instance, not per call or per patch:
//! every wrapper, listener, service method and effect is a small JavaScript
//! function that calls [`Runtime::route`] through `dispatch` with a token naming
//! what it serves (an id and a [`Role`]), so a wrapper read before disposal still
//! works afterwards (it forwards to the method it replaced). A client query
//! reaches the guard through closures made once too, `begin`, `settle` and
//! `tick`, which carry numbers only; a claimed batch that needs the guard comes
//! through `claim`, with numbers, the batch and the session id. `configure`
//! hands all of them to the JavaScript side, which calls the current instance's:
//! after a fault the instance is replaced (see `supervisor.js`), and what the
//! faulted one made forwards.
//!
//! One Node `Timeout` serves every deadline ([`DeadlineTimer`], timer.rs): it
//! lives here, beside the flights that decide it, and this runtime arms,
//! refreshes, holds and lets it go. The rule for when it keeps the process alive
//! is [`Runtime::hold_while_waiting`]: exactly while a guarded query waits.
//!
//! The recovery after a fault waits on a gloo [`Timeout`] owned by the fresh
//! instance's runtime (dropping it clears it): armed once per fault, off every
//! per-query path. Its callback only tells the JavaScript side (`recoveryDue`):
//! the recovery may replace this instance, so it runs once the callback's frame
//! is gone.
//!
//! The state is in `RefCell`s, and no call into JavaScript is made while one is
//! borrowed (JavaScript may call straight back in: cordis runs an effect's body
//! inside `ctx.effect`, the host's splice emits a `session/event` the observer
//! takes), except Node's timer functions on the deadline timer's own cell, which
//! never call back synchronously. A borrow conflict is therefore a broken invariant, never a state to
//! work around: it traps ([`exclusive`]), and the guard fails open and recovers
//! as on any fault, instead of going on with a step skipped (a deadline tick
//! that ended nothing and never re-armed would leave every waiting query
//! waiting for good).

use std::cell::{Cell, RefCell};

use gloo_timers::callback::Timeout;
use js_sys::{Array, Function};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::fault::{self, Point};
use super::timer::DeadlineTimer;
use super::{
    configure, inbox, inspect, make_insert_observer, make_listener, make_method, make_pre_step,
    monotonic_now, plugin, raise, recovery_due, to_js_error,
};
use crate::error::Error;
use crate::recovery::Plan;
use crate::throttle::LogBound;

/// What a trampoline serves; the low bits of its token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    /// `registry.resolveClientQuery` called without a bound agent.
    Unbound,
    /// `registry.resolveClientQuery` refused an answer (`previous` carries its result).
    Refused,
    /// An inbox's `claim`.
    Claim,
    /// The `agent/pre-step` entry.
    PreStep,
    /// The `agent/created` listener.
    Created,
    /// The `session/event` observer.
    SessionEvent,
    /// `inspectClientGuard.reports()`.
    Reports,
    /// `inspectClientGuard.counts()`.
    InspectCounts,
    /// `inspectClientGuard.reset()`.
    InspectReset,
    /// `inboxInputGuard.violations()`.
    Violations,
    /// `inboxInputGuard.counts()`.
    InboxCounts,
    /// `inboxInputGuard.reset()`.
    InboxReset,
    /// `status()` of either service.
    Status,
    /// The mount's records effect (returns its disposer).
    Records,
    /// The records effect's disposer.
    RecordsDispose,
    /// The inbox half's effect (returns its disposer).
    Inbox,
    /// The inbox half's disposer.
    InboxDispose,
    /// `ctx.inject(['cordisInspect'], …)`: the registry appeared.
    Registry,
    /// The registry attachment's effect (returns its disposer).
    Attach,
    /// The registry attachment's disposer.
    Detach,
    /// The `HarnessGuard` provider's `query(method, input, { agent })`.
    Provider,
    /// `ctx.inject(['commands'], …)`: the command registry appeared.
    Commands,
    /// The `/harness-guard` command's handler.
    Command,
    /// The disposer `installInspectClientGuard` returns.
    Uninstall,
    /// The mount's `internal/update` hook: a live config change, applied in place.
    Update,
    /// The `internal/config` listener: a live config change, checked before cordis validates it.
    ConfigCheck,
    /// `ctx.inject(['settings'], …)`: the settings service appeared (token: the settings link).
    Settings,
    /// A settings link's resolved value changed, or the link went away.
    SettingsChange,
}

const ROLES: [Role; 28] = [
    Role::Unbound,
    Role::Refused,
    Role::Claim,
    Role::PreStep,
    Role::Created,
    Role::SessionEvent,
    Role::Reports,
    Role::InspectCounts,
    Role::InspectReset,
    Role::Violations,
    Role::InboxCounts,
    Role::InboxReset,
    Role::Status,
    Role::Records,
    Role::RecordsDispose,
    Role::Inbox,
    Role::InboxDispose,
    Role::Registry,
    Role::Attach,
    Role::Detach,
    Role::Provider,
    Role::Commands,
    Role::Command,
    Role::Uninstall,
    Role::Update,
    Role::ConfigCheck,
    Role::Settings,
    Role::SettingsChange,
];

const ROLE_BITS: u32 = 5;

/// The token of `role` of `id`, as a trampoline carries it.
pub(super) fn token(id: u32, role: Role) -> u32 {
    (id << ROLE_BITS) | role as u32
}

impl Role {
    fn of(token: u32) -> Option<Self> {
        ROLES
            .get((token & ((1 << ROLE_BITS) - 1)) as usize)
            .copied()
    }

    /// The entry point a role is, for fault logs and fault injection.
    pub(super) const fn point(self) -> Point {
        match self {
            Role::Unbound | Role::Refused => Point::Resolve,
            Role::Claim => Point::Claim,
            Role::PreStep => Point::PreStep,
            Role::Created => Point::Created,
            Role::SessionEvent => Point::SessionEvent,
            Role::Records
            | Role::RecordsDispose
            | Role::Inbox
            | Role::InboxDispose
            | Role::Registry
            | Role::Attach
            | Role::Detach
            | Role::Commands
            | Role::Uninstall
            | Role::Update
            | Role::ConfigCheck
            | Role::Settings
            | Role::SettingsChange => Point::Effect,
            Role::Reports
            | Role::InspectCounts
            | Role::InspectReset
            | Role::Violations
            | Role::InboxCounts
            | Role::InboxReset
            | Role::Status
            | Role::Provider
            | Role::Command => Point::Service,
        }
    }
}

type Dispatch = dyn Fn(u32, JsValue, JsValue, Array) -> JsValue;
/// `(token, batch, split, nextTurn, codes, flags, session) → whether to claim again`
/// (`flags`: [`inbox::flag`]).
type Claim = dyn Fn(u32, JsValue, f64, f64, Vec<u32>, u32, Option<String>) -> bool;
type Begin = dyn Fn(u32, f64, bool) -> f64;

/// The runtime of this instance; reached through [`with`].
pub(super) struct Runtime {
    inspect_state: RefCell<inspect::State>,
    inbox_state: RefCell<inbox::State>,
    plugin_state: RefCell<plugin::State>,
    log_bound: RefCell<LogBound>,
    next_id: Cell<u32>,
    /// Owned here and never read: JavaScript calls them (see `configure`), so
    /// they live as long as the runtime.
    _entries: Entries,
    /// The one deadline timer.
    deadline: RefCell<DeadlineTimer>,
    /// The recovery's backoff, while the guard is down and waits to recover.
    recovery: RefCell<Option<Timeout>>,
}

/// The closures JavaScript enters this instance through (kept alive, never read).
#[allow(dead_code)]
struct Entries {
    dispatch: Closure<Dispatch>,
    /// An inbox's claimed batch that needs the guard (see `patchClaim`).
    claim: Closure<Claim>,
    /// The registry's call returned: `(guard, startedAt, unannounced) → key`, or
    /// -1 to leave it unguarded.
    begin: Closure<Begin>,
    /// A flight's registry promise settled first: `(key)`.
    settle: Closure<dyn Fn(f64)>,
    /// The deadline timer fired: returns the endings to deliver.
    tick: Closure<dyn Fn() -> Array>,
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
        ("owner", super::patch_owner()),
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
            "claimFlags",
            numbers(&[
                ("foreign", inbox::flag::FOREIGN),
                ("forTurn", inbox::flag::FOR_TURN),
                ("unread", inbox::flag::UNREAD),
                ("clean", inbox::flag::CLEAN),
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

/// Run `f` with the runtime.
pub(super) fn with<R>(f: impl FnOnce(&Runtime) -> R) -> R {
    RUNTIME.with(f)
}

impl Runtime {
    #[inline(never)]
    fn new() -> Self {
        let dispatch: Closure<Dispatch> = Closure::new(
            |token: u32, previous: JsValue, this: JsValue, args: Array| match with(|rt| {
                rt.route(token, &previous, &this, &args)
            }) {
                Ok(value) => value,
                Err(error) => {
                    raise(&error);
                    JsValue::UNDEFINED
                }
            },
        );
        let claim = Closure::<Claim>::new(
            |token: u32,
             batch: JsValue,
             split: f64,
             next_turn: f64,
             codes: Vec<u32>,
             flags: u32,
             session: Option<String>| {
                fault::check(Point::Claim);
                with(|rt| {
                    let claimed = inbox::Claimed {
                        batch,
                        split: (split >= 0.0).then(|| super::to_index(split)),
                        next_turn: super::to_index(next_turn),
                        codes: inbox::Codes::of(codes, flags),
                        foreign: flags & inbox::flag::FOREIGN != 0,
                        for_turn: flags & inbox::flag::FOR_TURN != 0,
                        session,
                    };
                    inbox::claim(rt, token >> ROLE_BITS, claimed)
                })
            },
        );
        let begin = Closure::<Begin>::new(|guard: u32, started_at: f64, unannounced: bool| {
            fault::check(Point::Begin);
            with(|rt| inspect::begin(rt, guard, started_at, unannounced))
        });
        let settle = Closure::<dyn Fn(f64)>::new(|key: f64| {
            fault::check(Point::Settle);
            with(|rt| inspect::settle(rt, key));
        });
        let tick = Closure::<dyn Fn() -> Array>::new(|| {
            fault::check(Point::Tick);
            with(|rt| {
                #[cfg(feature = "fault-injection")]
                let _held = fault::conflict(&rt.inspect_state);
                inspect::tick(rt)
            })
        });
        configure(
            &constants(),
            &js_sys::JSON::parse(crate::inbox::SHAPE_LAYOUT_JSON).unwrap_or(JsValue::UNDEFINED),
            &super::object(
                &crate::inbox::REPAIR_SOURCE
                    .map(|(key, value)| (key, JsValue::from_str(value)))
                    .each_ref()
                    .map(|(k, v)| (*k, v)),
            ),
            &[
                dispatch.as_ref(),
                claim.as_ref(),
                begin.as_ref(),
                settle.as_ref(),
                tick.as_ref(),
            ]
            .into_iter()
            .collect(),
        );
        Self {
            inspect_state: RefCell::default(),
            inbox_state: RefCell::default(),
            plugin_state: RefCell::default(),
            log_bound: RefCell::default(),
            next_id: Cell::new(1),
            _entries: Entries {
                dispatch,
                claim,
                begin,
                settle,
                tick,
            },
            deadline: RefCell::default(),
            recovery: RefCell::new(None),
        }
    }

    /// Run `f` on the inspect guards and their flights (see [`exclusive`]).
    pub(super) fn inspect<R>(&self, f: impl FnOnce(&mut inspect::State) -> R) -> R {
        exclusive(&self.inspect_state, f)
    }

    /// Run `f` on the inbox guards (see [`exclusive`]).
    pub(super) fn inbox<R>(&self, f: impl FnOnce(&mut inbox::State) -> R) -> R {
        exclusive(&self.inbox_state, f)
    }

    /// Run `f` on the plugin's mounts (see [`exclusive`]).
    pub(super) fn plugin<R>(&self, f: impl FnOnce(&mut plugin::State) -> R) -> R {
        exclusive(&self.plugin_state, f)
    }

    /// Whether a warn line about `session` may be written now (see [`LogBound`]),
    /// with the notice that goes with it.
    pub(super) fn admit_line(&self, session: &str) -> crate::throttle::Admit {
        exclusive(&self.log_bound, |b| b.admit(session, monotonic_now()))
    }

    /// A fresh id for a guard, a mount or an attachment: never 0 (no guard), and
    /// small enough to leave room for a role in a token.
    pub(super) fn next_id(&self) -> u32 {
        let id = self.next_id.get();
        self.next_id
            .set(crate::idmap::next_id(id, u32::MAX >> ROLE_BITS));
        id
    }

    /// A JavaScript function served by `role` of `id`. When it may not enter
    /// this instance it forwards to `previous` when that is a function, else
    /// answers with a copy of `fallback` (by its first argument when `by_first`).
    pub(super) fn method(
        &self,
        id: u32,
        role: Role,
        previous: &JsValue,
        fallback: &JsValue,
        by_first: bool,
    ) -> Function {
        make_method(
            token(id, role),
            role.point().name(),
            previous,
            fallback,
            by_first,
        )
    }

    /// The `session/event` observer: only inbox writes that inserted something other
    /// than usable messages reach the guard.
    pub(super) fn insert_observer(&self, guard: u32) -> Function {
        make_insert_observer(token(guard, Role::SessionEvent))
    }

    /// The `agent/pre-step` entry: the guard sees the event, the trampoline calls `next`.
    pub(super) fn pre_step(&self, guard: u32) -> Function {
        make_pre_step(token(guard, Role::PreStep))
    }

    /// A listener served by `role` of `id`: it never throws, and answers nothing.
    pub(super) fn listener(&self, id: u32, role: Role) -> Function {
        make_listener(token(id, role), role.point().name())
    }

    fn route(
        &self,
        token: u32,
        previous: &JsValue,
        this: &JsValue,
        args: &Array,
    ) -> Result<JsValue, JsValue> {
        let id = token >> ROLE_BITS;
        let Some(role) = Role::of(token) else {
            return forward(previous, this, args);
        };
        fault::check(role.point());
        let none = Ok(JsValue::UNDEFINED);
        match role {
            Role::Unbound => Ok(inspect::unbound(self, id, args)),
            Role::Refused => Ok(inspect::refused(self, id, previous, args)),
            Role::PreStep => {
                inbox::pre_step(self, id, &args.get(0));
                none
            }
            Role::Created => {
                inbox::created(self, id, &args.get(0));
                none
            }
            Role::SessionEvent => {
                inbox::session_event(self, id, &args.get(0), &args.get(1));
                none
            }
            Role::Uninstall => {
                inspect::dispose(self, id);
                none
            }
            _ => plugin::route(self, id, role, args).map_err(|e| to_js_error(&e)),
        }
    }

    /// Arm the deadline timer for `due` (ms on the monotonic clock; `now()` reads
    /// it), when nothing set fires by then (see [`DeadlineTimer::arm`]).
    pub(super) fn arm(&self, due: Option<f64>, now: impl FnOnce() -> f64) {
        if let Some(due) = due {
            exclusive(&self.deadline, |timer| timer.arm(due, now));
        }
    }

    /// The rule for keeping the process alive: the deadline timer holds it
    /// exactly while a guarded query waits, and lets it go with the last one, so
    /// a process whose only work is a guarded query lives until its deadline, and
    /// one whose queries all settled can exit.
    pub(super) fn hold_while_waiting(&self) {
        let waiting = self.inspect(|s| s.in_flight() > 0);
        exclusive(&self.deadline, |timer| timer.hold(waiting));
    }

    /// The timer fired: it is no longer set.
    pub(super) fn fired(&self) {
        exclusive(&self.deadline, DeadlineTimer::fired);
    }

    /// Clear the timer: a disposal left nothing waiting.
    pub(super) fn disarm(&self) {
        exclusive(&self.deadline, DeadlineTimer::clear);
    }

    /// Whether the deadline timer is set and keeps the process alive (Node's
    /// `hasRef()`), for tests and diagnostics.
    pub(super) fn timer_armed(&self) -> bool {
        shared(&self.deadline, DeadlineTimer::keeps_alive)
    }

    /// Whether the deadline timer is set at all (between queries it stays set,
    /// let go, until it fires once more and finds nothing due).
    pub(super) fn timer_set(&self) -> bool {
        shared(&self.deadline, DeadlineTimer::is_set)
    }

    /// Wait `after_ms`, then recover (the supervisor applies every live mount
    /// again, once this timer's callback returned).
    pub(super) fn schedule_recovery(&self, after_ms: f64) {
        // A backoff is at most LONGEST_BACKOFF_MS (16 s): well inside a u32 of ms.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let delay = after_ms.clamp(0.0, crate::recovery::LONGEST_BACKOFF_MS) as u32;
        let timeout = Timeout::new(delay, || {
            // The timer fired: it is no longer wanted. Dropped after the borrow.
            let fired = with(|rt| exclusive(&rt.recovery, Option::take));
            drop(fired);
            recovery_due();
        });
        let old = exclusive(&self.recovery, |r| r.replace(timeout));
        drop(old);
    }

    /// The recovery is no longer wanted (the last mount went away, or one recovers now).
    pub(super) fn cancel_recovery(&self) {
        let old = exclusive(&self.recovery, Option::take);
        drop(old);
    }
}

/// `f` on the value in `cell`. No call into JavaScript is made while a cell is
/// borrowed, so the cell is free whenever JavaScript calls in: a conflict is a
/// broken invariant, and it traps (the guard fails open, reports the fault and
/// recovers on a fresh instance) rather than skip the work.
pub(super) fn exclusive<T, R>(cell: &RefCell<T>, f: impl FnOnce(&mut T) -> R) -> R {
    match cell.try_borrow_mut() {
        Ok(mut value) => f(&mut value),
        Err(_) => fault::broken(),
    }
}

/// `f` on the value in `cell`, read only (see [`exclusive`]).
pub(super) fn shared<T, R>(cell: &RefCell<T>, f: impl FnOnce(&T) -> R) -> R {
    match cell.try_borrow() {
        Ok(value) => f(&value),
        Err(_) => fault::broken(),
    }
}

/// The recovery plan after a fault, as `[giveUp, afterMs]`.
pub fn recovery_plan(recent: &[f64], now: f64) -> Array {
    match crate::recovery::plan(recent, now) {
        Plan::GiveUp => Array::of2(&JsValue::TRUE, &JsValue::from(0)),
        Plan::Retry { after_ms } => Array::of2(&JsValue::FALSE, &JsValue::from(after_ms)),
    }
}

/// Call `previous` with the caller's `this` and arguments, unchanged.
pub(super) fn forward(
    previous: &JsValue,
    this: &JsValue,
    args: &Array,
) -> Result<JsValue, JsValue> {
    match previous.dyn_ref::<Function>() {
        Some(f) => f.apply(this, args),
        None => Err(js_sys::TypeError::new("harness-guard: the wrapped method is gone").into()),
    }
}

/// Flights in the air across every inspect guard, whether the deadline timer
/// keeps the process alive, and whether it is set at all.
pub fn in_flight() -> Array {
    with(|rt| {
        let flights = rt.inspect(|s| s.in_flight());
        Array::of3(
            &JsValue::from(u32::try_from(flights).unwrap_or(u32::MAX)),
            &JsValue::from(rt.timer_armed()),
            &JsValue::from(rt.timer_set()),
        )
    })
}
