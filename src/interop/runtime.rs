//! The owner of everything long-lived: guard state, the closures JavaScript calls, the deadline timer.
//!
//! The closures are made once per wasm instance, not per call or per patch:
//! every wrapper and listener is a small JavaScript function that calls
//! [`Runtime::dispatch`] with a token naming its guard and role, so a wrapper
//! read before disposal still works afterwards (it forwards to the method it
//! replaced). A client query reaches the guard through two more closures made
//! once, `begin` and `settle`, which carry numbers and the request's ids only.
//!
//! One host timer serves every deadline: it is armed for the earliest due
//! flight, re-armed when that changes, and cleared when nothing waits. While a
//! guarded query waits the timer is ref'd, so a process whose only work is that
//! query lives until the deadline fires. Work already due (the rest of a burst
//! ended in chunks) is scheduled with `setImmediate`, which also keeps the
//! process alive and runs after pending I/O.

use std::cell::{Cell, RefCell};

use js_sys::{Array, Function};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::{
    clear_immediate, clear_timeout, inbox, inspect, make_claim_wrapper, make_insert_observer,
    make_pre_step, make_query_wrapper, make_resolve_wrapper, make_ticker, make_wrapper,
    monotonic_now, set_immediate, set_timeout,
};

/// What a wrapper or listener is for; the low bits of its token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    /// `registry.resolveClientQuery` called without a bound agent.
    Unbound = 0,
    /// `registry.resolveClientQuery` refused an answer (`previous` carries its result).
    Refused = 1,
    /// An inbox's `claim`.
    Claim = 2,
    /// The `agent/pre-step` entry.
    PreStep = 3,
    /// The `agent/created` listener.
    Created = 4,
    /// The `session/event` observer.
    SessionEvent = 5,
}

const ROLE_BITS: u32 = 3;

fn token(guard: u32, role: Role) -> u32 {
    (guard << ROLE_BITS) | role as u32
}

impl Role {
    fn of(token: u32) -> Option<Self> {
        Some(match token & ((1 << ROLE_BITS) - 1) {
            0 => Role::Unbound,
            1 => Role::Refused,
            2 => Role::Claim,
            3 => Role::PreStep,
            4 => Role::Created,
            5 => Role::SessionEvent,
            _ => return None,
        })
    }
}

type Dispatch = dyn Fn(u32, JsValue, JsValue, Array) -> Result<JsValue, JsValue>;
type Begin = dyn Fn(u32, f64, Option<String>, Option<String>) -> f64;

/// The process-wide runtime; reached through [`with`].
pub(super) struct Runtime {
    inspect_state: RefCell<inspect::State>,
    inbox_state: RefCell<inbox::State>,
    next_guard: Cell<u32>,
    dispatch: Closure<Dispatch>,
    /// A client query's registry call returned a promise: `(guard, startedAt,
    /// requestId, agentId) → key`, or -1 to leave it unguarded.
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
    pub(super) client: JsValue,
}

#[derive(Default)]
struct Timer {
    handle: Option<Handle>,
    armed_for: Option<f64>,
}

/// What the one timer is, when armed.
enum Handle {
    /// A `setTimeout` for a due time ahead.
    Timeout(JsValue),
    /// A `setImmediate` for work already due: a 0 ms timeout waits at least 1 ms,
    /// which would idle the loop between chunks of overdue endings.
    Immediate(JsValue),
}

impl Handle {
    /// Arm for `delay_ms` from now (whole ms, 0 for work already due).
    fn arm(callback: &Function, delay_ms: f64) -> Option<Self> {
        if delay_ms <= 0.0 {
            if let Ok(handle) = set_immediate(callback) {
                return Some(Self::Immediate(handle));
            }
        }
        set_timeout(callback, delay_ms).ok().map(Self::Timeout)
    }

    fn clear(self) {
        match self {
            Self::Timeout(handle) => clear_timeout(&handle),
            Self::Immediate(handle) => {
                let _ = clear_immediate(&handle);
            }
        }
    }
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
        let dispatch: Closure<Dispatch> = Closure::new(
            |token: u32, previous: JsValue, this: JsValue, args: Array| {
                with(|rt| rt.route(token, &previous, &this, &args))
            },
        );
        let begin = Closure::<Begin>::new(
            |guard: u32, started_at: f64, request_id: Option<String>, agent_id: Option<String>| {
                with(|rt| inspect::begin(rt, guard, started_at, request_id, agent_id))
            },
        );
        let settle = Closure::<dyn Fn(f64)>::new(|key: f64| with(|rt| inspect::settle(rt, key)));
        let tick = Closure::<dyn Fn() -> Array>::new(|| with(inspect::tick));
        let ticker = make_ticker(tick.as_ref().unchecked_ref());
        Self {
            inspect_state: RefCell::default(),
            inbox_state: RefCell::default(),
            next_guard: Cell::new(1),
            dispatch,
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

    /// A fresh guard id.
    pub(super) fn next_guard(&self) -> u32 {
        let id = self.next_guard.get();
        self.next_guard
            .set(id.wrapping_add(1) & (u32::MAX >> ROLE_BITS));
        id
    }

    /// A JavaScript function that forwards `(this, args)` to this guard's `role`.
    pub(super) fn wrapper(&self, guard: u32, role: Role, previous: &JsValue) -> Function {
        make_wrapper(self.dispatch_fn(), token(guard, role), previous)
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

    /// The `agent/pre-step` entry: the guard sees the event, the wrapper calls `next`.
    pub(super) fn pre_step(&self, guard: u32) -> Function {
        make_pre_step(self.dispatch_fn(), token(guard, Role::PreStep))
    }

    /// The `query` wrapper: only client queries with a live signal reach the guard,
    /// once the registry (which the wrapper calls itself) returned its promise, and
    /// again when that promise settles first.
    pub(super) fn query_wrapper(&self, guard: u32, previous: &JsValue) -> Function {
        make_query_wrapper(
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
        let guard = token >> ROLE_BITS;
        match Role::of(token) {
            Some(Role::Unbound) => inspect::unbound(self, guard, previous, this, args),
            Some(Role::Refused) => Ok(inspect::refused(self, guard, previous, args)),
            Some(Role::Claim) => inbox::claim(self, guard, previous, this, args),
            Some(Role::PreStep) => {
                inbox::pre_step(self, guard, args);
                Ok(JsValue::UNDEFINED)
            }
            Some(Role::Created) => {
                inbox::created(self, guard, &args.get(0));
                Ok(JsValue::UNDEFINED)
            }
            Some(Role::SessionEvent) => {
                inbox::session_event(self, guard, &args.get(0), &args.get(1));
                Ok(JsValue::UNDEFINED)
            }
            None => forward(previous, this, args),
        }
    }

    /// Arm the one timer for `due` (ms on the monotonic clock), or clear it for `None`.
    ///
    /// An armed timer due no later than `due` is kept: when it fires, the flights
    /// still waiting re-arm it.
    pub(super) fn arm(&self, due: Option<f64>) {
        let mut old = None;
        let mut schedule = None;
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
                    old = timer.handle.take();
                    timer.armed_for = Some(due);
                    schedule = Some(due);
                }
            }
        }
        if let Some(handle) = old {
            handle.clear();
        }
        if let Some(due) = schedule {
            let delay = (due - monotonic_now()).max(0.0).ceil();
            let handle = Handle::arm(&self.ticker, delay);
            if let Ok(mut timer) = self.timer.try_borrow_mut() {
                if handle.is_none() {
                    timer.armed_for = None;
                }
                timer.handle = handle;
            }
        }
    }

    /// The timer fired: it is no longer armed.
    pub(super) fn fired(&self) {
        if let Ok(mut timer) = self.timer.try_borrow_mut() {
            timer.handle = None;
            timer.armed_for = None;
        }
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

/// Which half an [`Installation`] belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Half {
    Inspect,
    Inbox,
}

/// One installed guard. `dispose()` (or dropping it) undoes every effect of the install.
#[wasm_bindgen]
#[derive(Debug)]
#[must_use = "dropping an Installation disposes the guard at once"]
pub struct Installation {
    half: Half,
    guard: u32,
    live: bool,
}

impl Installation {
    pub(super) fn inspect(guard: u32) -> Self {
        Self {
            half: Half::Inspect,
            guard,
            live: true,
        }
    }

    pub(super) fn inbox(guard: u32) -> Self {
        Self {
            half: Half::Inbox,
            guard,
            live: true,
        }
    }

    /// An installation that installed nothing (the target was already guarded).
    pub(super) fn inert() -> Self {
        Self {
            half: Half::Inbox,
            guard: 0,
            live: false,
        }
    }
}

#[wasm_bindgen]
impl Installation {
    /// Undo the install: restore methods by marker, remove listeners, clear timers,
    /// and reject every guarded query still in flight. Idempotent.
    pub fn dispose(&mut self) {
        if !std::mem::replace(&mut self.live, false) {
            return;
        }
        match self.half {
            Half::Inspect => with(|rt| inspect::dispose(rt, self.guard)),
            Half::Inbox => with(|rt| inbox::dispose(rt, self.guard)),
        }
    }

    /// Whether this installation is still in effect.
    #[wasm_bindgen(getter)]
    pub fn active(&self) -> bool {
        self.live
    }

    /// Flights in the air across every inspect guard, and whether the deadline timer is armed.
    #[wasm_bindgen(js_name = inFlight)]
    pub fn in_flight() -> Array {
        with(|rt| {
            let flights = rt.inspect(|s| s.in_flight()).unwrap_or(0);
            Array::of2(
                &JsValue::from(flights as u32),
                &JsValue::from(rt.timer_armed()),
            )
        })
    }
}

impl Drop for Installation {
    fn drop(&mut self) {
        self.dispose();
    }
}
