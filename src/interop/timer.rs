//! The one deadline timer: Node's `setTimeout`, its `Timeout` and `setImmediate`, bound and held here.
//!
//! One Node `Timeout` serves every deadline and refusal grace of an instance. It
//! is armed for the earliest due flight, never further than [`MAX_SLEEP_MS`]
//! ahead, so most arms ask for the same delay and the timer is refreshed
//! (`refresh()`) rather than cleared and made again. It keeps the process alive
//! exactly while a guarded query waits ([`DeadlineTimer::hold`]): a process whose
//! only pending work is a guarded query lives until its deadline, and one whose
//! queries all settled can exit. Between queries it stays set, let go, for the
//! next query to refresh, until it fires once more and finds nothing due. Work
//! already due (the rest of a burst ended in chunks) runs on the next turn of the
//! loop, through `setImmediate`.
//!
//! The callback is JavaScript's (`onDeadline` in flights.js): it enters `tick` and
//! delivers the endings with no wasm frame beneath the registry. The handles are
//! also noted on the JavaScript side (`keepTimers`), for a fault only: a faulted
//! instance is never entered again, so it cannot clear its own timers.
//!
//! Node's timer functions never call back into JavaScript synchronously, so the
//! timer is driven while the runtime's cell holding it is borrowed. Making and
//! clearing a timer catches (a `setTimeout` replaced by something that throws
//! leaves the deadline unarmed rather than unwinding wasm); the methods of a
//! `Timeout` it made do not throw.

use js_sys::Function;
use wasm_bindgen::prelude::*;

/// The longest the deadline timer sleeps before it looks again (ms): the delay
/// most arms ask for, so the one Node `Timeout` is refreshed rather than remade.
pub(super) const MAX_SLEEP_MS: f64 = 1000.0;

#[wasm_bindgen]
extern "C" {
    /// Node's `Timeout`, as `setTimeout` returns it.
    #[wasm_bindgen(js_name = Timeout)]
    type NodeTimeout;
    #[wasm_bindgen(js_name = setTimeout, catch)]
    fn set_timeout(callback: &Function, delay_ms: f64) -> Result<NodeTimeout, JsValue>;
    #[wasm_bindgen(js_name = clearTimeout, catch)]
    fn clear_timeout(timeout: &NodeTimeout) -> Result<(), JsValue>;
    // A `Timeout` setTimeout made never throws from these: no `catch` (its
    // try/catch in the glue is on the per-query path).
    #[wasm_bindgen(method)]
    fn refresh(this: &NodeTimeout);
    #[wasm_bindgen(method, js_name = ref)]
    fn hold(this: &NodeTimeout);
    #[wasm_bindgen(method)]
    fn unref(this: &NodeTimeout);
    #[wasm_bindgen(method, js_name = hasRef)]
    fn has_ref(this: &NodeTimeout) -> bool;

    /// Node's `Immediate`, as `setImmediate` returns it.
    #[wasm_bindgen(js_name = Immediate)]
    type NodeImmediate;
    #[wasm_bindgen(js_name = setImmediate, catch)]
    fn set_immediate(callback: &Function) -> Result<NodeImmediate, JsValue>;
    #[wasm_bindgen(js_name = clearImmediate, catch)]
    fn clear_immediate(immediate: &NodeImmediate) -> Result<(), JsValue>;
}

#[wasm_bindgen(module = "/src/interop/flights.js")]
extern "C" {
    /// The timer's callback: enters `tick`, then delivers the endings.
    #[wasm_bindgen(thread_local_v2, js_name = onDeadline)]
    static ON_DEADLINE: Function;
    #[wasm_bindgen(js_name = keepTimers)]
    fn keep_timers(timeout: Option<&NodeTimeout>, immediate: Option<&NodeImmediate>);
}

/// The deadline timer of one instance.
pub(super) struct DeadlineTimer {
    /// The one `Timeout`, kept across arms (refreshed, not remade), and its delay.
    timeout: Option<(NodeTimeout, f64)>,
    /// Work already due, for the next turn of the loop.
    immediate: Option<NodeImmediate>,
    /// When the timer fires, while it is set (ms on the monotonic clock).
    armed_for: Option<f64>,
    /// Whether it keeps the process alive: exactly while a guarded query waits.
    held: bool,
}

impl std::fmt::Debug for DeadlineTimer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeadlineTimer")
            .field("armed_for", &self.armed_for)
            .field("held", &self.held)
            .finish_non_exhaustive()
    }
}

impl DeadlineTimer {
    /// A timer not set yet (its `Timeout` is made at the first arm).
    pub(super) const fn new() -> Self {
        Self {
            timeout: None,
            immediate: None,
            armed_for: None,
            held: false,
        }
    }

    /// Arm the timer for `due` (ms on the monotonic clock, `now` its reading),
    /// unless it is set to fire by then: when it fires, the flights still waiting
    /// arm it again. It never sleeps longer than [`MAX_SLEEP_MS`].
    #[inline(always)]
    pub(super) fn arm(&mut self, due: f64, now: impl FnOnce() -> f64) {
        if self.armed_for.is_some_and(|armed| armed <= due) {
            return;
        }
        self.arm_at(due, now());
    }

    /// [`DeadlineTimer::arm`] when the timer is not set to fire by `due`.
    #[inline(never)]
    fn arm_at(&mut self, due: f64, now: f64) {
        let fire_at = due.min(now + MAX_SLEEP_MS);
        let delay = (fire_at - now).max(0.0).ceil();
        self.armed_for = Some(fire_at);
        let mut changed = false;
        if let Some(immediate) = self.immediate.take() {
            let _ = clear_immediate(&immediate);
            changed = true;
        }
        if delay <= 0.0 {
            self.immediate = ON_DEADLINE.with(set_immediate).ok();
            changed = true;
        } else if !self.refreshed(delay) {
            if let Some((old, _)) = self.timeout.take() {
                let _ = clear_timeout(&old);
            }
            self.timeout = ON_DEADLINE
                .with(|callback| set_timeout(callback, delay))
                .ok()
                .map(|timeout| (timeout, delay));
            if !self.held {
                self.let_go();
            }
            changed = true;
        }
        if changed {
            self.note();
        }
    }

    /// Refresh the `Timeout` when it was made with `delay`: one call, no new timer.
    fn refreshed(&self, delay: f64) -> bool {
        match &self.timeout {
            Some((timeout, made_with)) if *made_with == delay => {
                timeout.refresh();
                true
            }
            _ => false,
        }
    }

    /// The rule for keeping the process alive: held exactly while `waiting` (a
    /// guarded query waits). A change is one call on the `Timeout`; no change, none.
    #[inline(always)]
    pub(super) fn hold(&mut self, waiting: bool) {
        if waiting == self.held {
            return;
        }
        self.held = waiting;
        if waiting {
            if let Some((timeout, _)) = &self.timeout {
                timeout.hold();
            }
        } else {
            self.let_go();
        }
    }

    #[inline(always)]
    fn let_go(&self) {
        if let Some((timeout, _)) = &self.timeout {
            timeout.unref();
        }
    }

    /// The timer fired: it is no longer set (its `Timeout` stays, to be refreshed).
    pub(super) fn fired(&mut self) {
        self.armed_for = None;
        if self.immediate.take().is_some() {
            self.note();
        }
    }

    /// Clear the timer: nothing is left waiting (a disposal).
    pub(super) fn clear(&mut self) {
        self.armed_for = None;
        if let Some((timeout, _)) = self.timeout.take() {
            let _ = clear_timeout(&timeout);
        }
        if let Some(immediate) = self.immediate.take() {
            let _ = clear_immediate(&immediate);
        }
        self.note();
    }

    /// Whether the timer is set at all.
    pub(super) fn is_set(&self) -> bool {
        self.armed_for.is_some()
    }

    /// Whether the timer keeps the process alive, as Node reports it.
    pub(super) fn keeps_alive(&self) -> bool {
        self.is_set()
            && self
                .timeout
                .as_ref()
                .is_some_and(|(timeout, _)| timeout.has_ref())
    }

    /// Tell the JavaScript side which handles to clear should this instance fault.
    fn note(&self) {
        keep_timers(
            self.timeout.as_ref().map(|(timeout, _)| timeout),
            self.immediate.as_ref(),
        );
    }
}
