//! The owner of everything long-lived: guard state, the closures JavaScript calls, the deadline timer.
//!
//! The closures are made once per wasm instance, not per call or per patch:
//! every wrapper, listener, service method and effect is a small JavaScript
//! function that calls [`Runtime::route`] through `dispatch` with a token naming
//! what it serves (an id and a [`Role`]), so a wrapper read before disposal still
//! works afterwards (it forwards to the method it replaced). A client query
//! reaches the guard through three more closures made once, `admit`, `begin` and
//! `settle`, which carry numbers and the request's ids only.
//!
//! One timer serves every deadline: a gloo [`Timeout`] owned here, armed for the
//! earliest due flight, re-armed when that changes, and dropped (cleared) when
//! nothing waits. While a guarded query waits it is ref'd, so a process whose
//! only work is that query lives until the deadline fires. Its callback only
//! calls the JavaScript ticker, which enters `tick` with a catch around it and
//! delivers the endings with no wasm frame beneath the registry. Work already
//! due (the rest of a burst ended in chunks) is scheduled with `setImmediate`:
//! a 0 ms timeout waits at least 1 ms, which idled the loop between chunks.

use std::cell::{Cell, RefCell};

use gloo_timers::callback::Timeout;
use js_sys::{Array, Function};
use serde::Serialize;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::fault::{self, Point};
use super::{
    clear_immediate, configure, inbox, inspect, make_claim_wrapper, make_insert_observer,
    make_method, make_pre_step, make_query_wrapper, make_resolve_wrapper, make_ticker,
    monotonic_now, plugin, raise, set_immediate, to_js, to_js_error,
};
use crate::config::MAX_TIMER_MS;
use crate::error::Error;
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
    /// The disposer `installInspectClientGuard` returns.
    Uninstall,
}

const ROLES: [Role; 21] = [
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
    Role::Records,
    Role::RecordsDispose,
    Role::Inbox,
    Role::InboxDispose,
    Role::Registry,
    Role::Attach,
    Role::Detach,
    Role::Provider,
    Role::Uninstall,
];

const ROLE_BITS: u32 = 5;

/// The longest the deadline timer sleeps before it looks again (ms).
const MAX_SLEEP_MS: f64 = 1000.0;

fn token(id: u32, role: Role) -> u32 {
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
            _ => Point::Plugin,
        }
    }
}

type Dispatch = dyn Fn(u32, JsValue, JsValue, Array) -> JsValue;
type Begin = dyn Fn(u32, f64, Option<String>, Option<String>, bool) -> f64;

/// The process-wide runtime; reached through [`with`].
pub(super) struct Runtime {
    inspect_state: RefCell<inspect::State>,
    inbox_state: RefCell<inbox::State>,
    plugin_state: RefCell<plugin::State>,
    log_bound: RefCell<LogBound>,
    next_id: Cell<u32>,
    dispatch: Closure<Dispatch>,
    /// A client query with a signal: `(guard, isSignal, aborted) → whether the guard takes it`.
    admit: Closure<dyn Fn(u32, bool, bool) -> bool>,
    /// The registry's call returned: `(guard, startedAt, requestId, agentId,
    /// isPromise) → key`, or -1 to leave it unguarded.
    begin: Closure<Begin>,
    /// A flight's registry promise settled first: `(key)`.
    settle: Closure<dyn Fn(f64)>,
    /// Owned here and never read: `ticker` calls it, so it lives as long as the runtime.
    #[allow(dead_code)]
    tick: Closure<dyn Fn() -> Array>,
    /// The timer callback: runs `tick` and performs the work it returns.
    ticker: Function,
    timer: RefCell<Timer>,
    /// The string `"client"`, compared by `===` without copying the argument.
    client: JsValue,
}

#[derive(Default)]
struct Timer {
    handle: Option<Handle>,
    armed_for: Option<f64>,
}

/// What the one timer is, when armed.
enum Handle {
    /// A gloo `Timeout` for a due time ahead; dropping it clears it.
    Timeout(#[allow(dead_code)] Timeout),
    /// A `setImmediate` for work already due.
    Immediate(JsValue),
}

impl Handle {
    /// Arm for `delay_ms` from now (whole ms, 0 for work already due).
    fn arm(ticker: &Function, delay_ms: f64) -> Self {
        if delay_ms <= 0.0 {
            if let Ok(handle) = set_immediate(ticker) {
                return Self::Immediate(handle);
            }
        }
        // Whole milliseconds within Node's timer range (validated config keeps
        // deadlines there; a due time is never further away than its deadline).
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let delay = delay_ms.clamp(0.0, f64::from(MAX_TIMER_MS)) as u32;
        let ticker = ticker.clone();
        Self::Timeout(Timeout::new(delay, move || {
            // The ticker catches everything itself; nothing unwinds into this frame.
            let _ = ticker.call0(&JsValue::UNDEFINED);
        }))
    }

    fn clear(self) {
        if let Self::Immediate(handle) = &self {
            let _ = clear_immediate(handle);
        }
        // A `Timeout` clears itself as it drops here.
    }
}

/// The constants the JavaScript side works with, handed over once (see `configure` in helpers.js).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Constants {
    next_step: &'static str,
    spliced_event: &'static str,
    inserted: &'static str,
    failed_code: &'static str,
    failed_message: String,
    failed_line: &'static str,
    refusal_code: &'static str,
    refusal_message: String,
    shape: &'static crate::inbox::ShapeLayout,
}

thread_local! {
    static RUNTIME: Runtime = Runtime::new();
}

/// Run `f` with the runtime.
pub(super) fn with<R>(f: impl FnOnce(&Runtime) -> R) -> R {
    RUNTIME.with(f)
}

impl Runtime {
    fn new() -> Self {
        configure(&to_js(&Constants {
            next_step: "nextStep",
            spliced_event: "agent/inbox/spliced",
            inserted: "inserted",
            failed_code: Error::GuardFailed.code(),
            failed_message: Error::GuardFailed.to_string(),
            failed_line: "harness-guard stood down after an internal fault: every wrapper now forwards to the \
                          method it replaced, waiting client queries were cancelled, and later ones run unguarded \
                          until the process restarts",
            refusal_code: Error::StoodDown.code(),
            refusal_message: Error::StoodDown.to_string(),
            shape: &crate::inbox::SHAPE_LAYOUT,
        }));
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
        let admit = Closure::<dyn Fn(u32, bool, bool) -> bool>::new(
            |guard: u32, is_signal: bool, aborted: bool| {
                with(|rt| inspect::admit(rt, guard, is_signal, aborted))
            },
        );
        let begin = Closure::<Begin>::new(
            |guard: u32,
             started_at: f64,
             request_id: Option<String>,
             agent_id: Option<String>,
             is_promise: bool| {
                fault::check(Point::Begin);
                with(|rt| inspect::begin(rt, guard, started_at, request_id, agent_id, is_promise))
            },
        );
        let settle = Closure::<dyn Fn(f64)>::new(|key: f64| {
            fault::check(Point::Settle);
            with(|rt| inspect::settle(rt, key));
        });
        let tick = Closure::<dyn Fn() -> Array>::new(|| {
            fault::check(Point::Tick);
            with(inspect::tick)
        });
        let ticker = make_ticker(tick.as_ref().unchecked_ref());
        Self {
            inspect_state: RefCell::default(),
            inbox_state: RefCell::default(),
            plugin_state: RefCell::default(),
            log_bound: RefCell::default(),
            next_id: Cell::new(1),
            dispatch,
            admit,
            begin,
            settle,
            tick,
            ticker,
            timer: RefCell::default(),
            client: JsValue::from_str("client"),
        }
    }

    /// Run `f` on the inspect guards and their flights. `None` when the state is
    /// already borrowed: JavaScript called back in while Rust was using it, and
    /// the caller falls back to doing nothing (never to a panic).
    pub(super) fn inspect<R>(&self, f: impl FnOnce(&mut inspect::State) -> R) -> Option<R> {
        self.inspect_state
            .try_borrow_mut()
            .ok()
            .map(|mut s| f(&mut s))
    }

    /// Run `f` on the inbox guards; `None` when already borrowed (see [`Runtime::inspect`]).
    pub(super) fn inbox<R>(&self, f: impl FnOnce(&mut inbox::State) -> R) -> Option<R> {
        self.inbox_state
            .try_borrow_mut()
            .ok()
            .map(|mut s| f(&mut s))
    }

    /// Run `f` on the plugin's mounts; `None` when already borrowed (see [`Runtime::inspect`]).
    pub(super) fn plugin<R>(&self, f: impl FnOnce(&mut plugin::State) -> R) -> Option<R> {
        self.plugin_state
            .try_borrow_mut()
            .ok()
            .map(|mut s| f(&mut s))
    }

    /// Whether a warn line about `session` may be written now (see [`LogBound`]),
    /// with the notice that goes with it.
    pub(super) fn admit_line(&self, session: &str) -> crate::throttle::Admit {
        self.log_bound
            .try_borrow_mut()
            .map_or(crate::throttle::Admit::Write { left_out: 0 }, |mut b| {
                b.admit(session, monotonic_now())
            })
    }

    /// A fresh id for a guard, a mount or an attachment.
    pub(super) fn next_id(&self) -> u32 {
        let id = self.next_id.get();
        self.next_id
            .set(id.wrapping_add(1).max(1) & (u32::MAX >> ROLE_BITS));
        id
    }

    /// A JavaScript function served by `role` of `id`. After a fault it forwards
    /// to `previous` when that is a function, else answers with a copy of
    /// `fallback` (by its first argument when `by_first`).
    pub(super) fn method(
        &self,
        id: u32,
        role: Role,
        previous: &JsValue,
        fallback: &JsValue,
        by_first: bool,
    ) -> Function {
        make_method(
            self.dispatch_fn(),
            token(id, role),
            role.point().name(),
            previous,
            fallback,
            by_first,
        )
    }

    /// An inbox's `claim` wrapper: a batch of usable messages only never reaches the guard.
    pub(super) fn claim_wrapper(&self, guard: u32, previous: &JsValue) -> Function {
        make_claim_wrapper(
            self.dispatch_fn(),
            token(guard, Role::Claim),
            previous,
            crate::inbox::MESSAGE_CODE,
        )
    }

    /// The `session/event` observer: only inbox writes that inserted something other
    /// than usable messages reach the guard.
    pub(super) fn insert_observer(&self, guard: u32) -> Function {
        make_insert_observer(
            self.dispatch_fn(),
            token(guard, Role::SessionEvent),
            crate::inbox::MESSAGE_CODE,
        )
    }

    /// The `agent/pre-step` entry: the guard sees the event, the trampoline calls `next`.
    pub(super) fn pre_step(&self, guard: u32) -> Function {
        make_pre_step(self.dispatch_fn(), token(guard, Role::PreStep))
    }

    /// The `query` wrapper: only client queries reach the guard, once to be admitted,
    /// once the registry (which the wrapper calls itself) returned, and once more
    /// when the registry's promise settles first.
    pub(super) fn query_wrapper(&self, guard: u32, previous: &JsValue) -> Function {
        make_query_wrapper(
            self.admit.as_ref().unchecked_ref(),
            self.begin.as_ref().unchecked_ref(),
            self.settle.as_ref().unchecked_ref(),
            guard,
            previous,
            &self.client,
        )
    }

    /// The `resolveClientQuery` wrapper: only unbound-agent answers and answers the
    /// registry refused reach the guard.
    pub(super) fn resolve_wrapper(&self, guard: u32, previous: &JsValue) -> Function {
        make_resolve_wrapper(
            self.dispatch_fn(),
            token(guard, Role::Unbound),
            token(guard, Role::Refused),
            previous,
        )
    }

    fn dispatch_fn(&self) -> &Function {
        self.dispatch.as_ref().unchecked_ref()
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
            Role::Unbound => inspect::unbound(self, id, previous, this, args),
            Role::Refused => Ok(inspect::refused(self, id, previous, args)),
            Role::Claim => inbox::claim(self, id, previous, this, args),
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

    /// Arm the one timer for `due` (ms on the monotonic clock), or clear it for `None`.
    ///
    /// An armed timer due no later than `due` is kept: when it fires, the flights
    /// still waiting re-arm it. The timer never sleeps longer than
    /// [`MAX_SLEEP_MS`] at a time, so one armed before a fault (which JavaScript
    /// cannot clear without entering wasm) keeps the process alive a second at most.
    pub(super) fn arm(&self, due: Option<f64>) {
        let mut old = None;
        let mut schedule = None;
        let now = monotonic_now();
        {
            let Ok(mut timer) = self.timer.try_borrow_mut() else {
                return;
            };
            match (due, timer.armed_for) {
                (None, _) => {
                    old = timer.handle.take();
                    timer.armed_for = None;
                }
                (Some(due), Some(armed)) if armed <= due && timer.handle.is_some() => {}
                (Some(due), _) => {
                    let fire_at = due.min(now + MAX_SLEEP_MS);
                    old = timer.handle.take();
                    timer.armed_for = Some(fire_at);
                    schedule = Some(fire_at);
                }
            }
        }
        if let Some(handle) = old {
            handle.clear();
        }
        if let Some(fire_at) = schedule {
            let delay = (fire_at - now).max(0.0).ceil();
            let handle = Handle::arm(&self.ticker, delay);
            if let Ok(mut timer) = self.timer.try_borrow_mut() {
                timer.handle = Some(handle);
            }
        }
    }

    /// The timer fired: it is no longer armed.
    pub(super) fn fired(&self) {
        let fired = self.timer.try_borrow_mut().ok().and_then(|mut timer| {
            timer.armed_for = None;
            timer.handle.take()
        });
        // Dropped outside the borrow: a fired gloo `Timeout` clears nothing, but
        // it is still a call into JavaScript.
        drop(fired);
    }

    /// Whether the deadline timer is armed (for tests and diagnostics).
    pub(super) fn timer_armed(&self) -> bool {
        self.timer
            .try_borrow()
            .map(|t| t.handle.is_some())
            .unwrap_or(true)
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

/// Flights in the air across every inspect guard, and whether the deadline timer is armed.
pub fn in_flight() -> Array {
    with(|rt| {
        let flights = rt.inspect(|s| s.in_flight()).unwrap_or(0);
        Array::of2(
            &JsValue::from(u32::try_from(flights).unwrap_or(u32::MAX)),
            &JsValue::from(rt.timer_armed()),
        )
    })
}
