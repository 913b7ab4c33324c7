//! Entry points into wasm, by name, and (in the `fault-injection` build only) real traps at them.
//!
//! Every entry from JavaScript passes [`check`] with its point. In the normal
//! build that is nothing. Built with the `fault-injection` feature, the package
//! also exports `injectFault(point)`: the next entry at that point executes an
//! `unreachable` instruction, a real wasm trap, so the tests can prove that the
//! JavaScript side fails open whatever the guard does. Some points are reached
//! below the top level, with wasm frames of the guard already on the stack:
//! `effect` inside `apply` (cordis runs an effect's body at once), `recover`
//! under the recovery's backoff timer, `service` from a callback the guard
//! calls (an `onReport` that reads a service).

/// Where JavaScript enters the guard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Point {
    /// An inbox's `claim` wrapper.
    Claim,
    /// The `agent/pre-step` entry.
    PreStep,
    /// The `agent/created` listener.
    Created,
    /// The `session/event` observer.
    SessionEvent,
    /// A client query's flight beginning (`begin`).
    Begin,
    /// A client query's registry promise settling first.
    Settle,
    /// The deadline timer.
    Tick,
    /// The `resolveClientQuery` wrapper.
    Resolve,
    /// The plugin's `apply` and the programmatic install.
    Apply,
    /// An effect, injection or disposer of the plugin's own (cordis runs the
    /// first ones inside `apply`), and the programmatic install's `dispose()`.
    Effect,
    /// A service method, the `HarnessGuard` provider, or the command.
    Service,
    /// The recovery applying a mount again on a fresh instance (`reapply`).
    Recover,
    /// Fault-injection builds only: the next deadline tick finds the flight
    /// table already borrowed, as a re-entrant call would (a broken invariant).
    #[cfg(feature = "fault-injection")]
    Conflict,
    /// Fault-injection builds only: a trap in a tick's endings, after a flight
    /// was landed and before its ending was delivered.
    #[cfg(feature = "fault-injection")]
    Ending,
}

impl Point {
    /// The point's name, as logs and `injectFault` spell it.
    pub(super) const fn name(self) -> &'static str {
        match self {
            Point::Claim => "claim",
            Point::PreStep => "preStep",
            Point::Created => "created",
            Point::SessionEvent => "sessionEvent",
            Point::Begin => "begin",
            Point::Settle => "settle",
            Point::Tick => "tick",
            Point::Resolve => "resolve",
            Point::Apply => "apply",
            Point::Effect => "effect",
            Point::Service => "service",
            Point::Recover => "recover",
            #[cfg(feature = "fault-injection")]
            Point::Conflict => "conflict",
            #[cfg(feature = "fault-injection")]
            Point::Ending => "ending",
        }
    }
}

#[cfg(feature = "fault-injection")]
mod armed {
    use std::cell::Cell;

    use super::Point;

    thread_local! {
        static ARMED: Cell<Option<Point>> = const { Cell::new(None) };
    }

    pub(super) fn check(point: Point) {
        if ARMED.with(|a| a.get()) == Some(point) {
            ARMED.with(|a| a.set(None));
            core::arch::wasm32::unreachable();
        }
    }

    pub(super) fn arm(point: Point) {
        ARMED.with(|a| a.set(Some(point)));
    }

    pub(super) fn take(point: Point) -> bool {
        let armed = ARMED.with(|a| a.get()) == Some(point);
        if armed {
            ARMED.with(|a| a.set(None));
        }
        armed
    }
}

/// Fault-injection builds only: when [`Point::Conflict`] is armed, `cell`
/// borrowed for as long as the returned guard lives (the deadline tick then
/// meets a borrow conflict, as it would under a re-entrant call).
#[cfg(feature = "fault-injection")]
pub(super) fn conflict<T>(cell: &std::cell::RefCell<T>) -> Option<std::cell::RefMut<'_, T>> {
    armed::take(Point::Conflict)
        .then(|| cell.try_borrow_mut().ok())
        .flatten()
}

/// Trap here if a fault is armed for `point` (fault-injection builds only).
#[inline]
pub(super) fn check(point: Point) {
    #[cfg(feature = "fault-injection")]
    armed::check(point);
    #[cfg(not(feature = "fault-injection"))]
    let _ = point;
}

/// A broken invariant (a borrow conflict): trap. The JavaScript side fails open
/// and recovers on a fresh instance, as on any fault of the guard.
pub(super) fn broken() -> ! {
    core::arch::wasm32::unreachable()
}

/// Arm a trap for the next entry at the point named `name`.
#[cfg(feature = "fault-injection")]
pub fn inject(name: &str) -> Result<(), crate::error::Error> {
    const POINTS: [Point; 14] = [
        Point::Claim,
        Point::PreStep,
        Point::Created,
        Point::SessionEvent,
        Point::Begin,
        Point::Settle,
        Point::Tick,
        Point::Resolve,
        Point::Apply,
        Point::Effect,
        Point::Service,
        Point::Recover,
        Point::Conflict,
        Point::Ending,
    ];
    let point =
        POINTS
            .into_iter()
            .find(|p| p.name() == name)
            .ok_or(crate::error::Error::InvalidInput {
                field: "point",
                value: format!("\"{name}\""),
                expected:
                    "one of claim, preStep, created, sessionEvent, begin, settle, tick, resolve, \
                       apply, effect, service, recover, conflict, ending",
            })?;
    armed::arm(point);
    Ok(())
}
