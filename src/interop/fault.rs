//! Entry points into wasm, by name, and (in the `fault-injection` build only) real traps at them.
//!
//! Every entry from JavaScript passes [`check`] with its point. In the normal
//! build that is nothing. Built with the `fault-injection` feature, the package
//! also exports `injectFault(point)`: the next entry at that point executes an
//! `unreachable` instruction, a real wasm trap, so the tests can prove that the
//! JavaScript side fails open whatever the guard does.

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
    /// A service, the provider, or an effect of the plugin's own.
    Plugin,
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
            Point::Plugin => "plugin",
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
}

/// Trap here if a fault is armed for `point` (fault-injection builds only).
#[inline]
pub(super) fn check(point: Point) {
    #[cfg(feature = "fault-injection")]
    armed::check(point);
    #[cfg(not(feature = "fault-injection"))]
    let _ = point;
}

/// Arm a trap for the next entry at the point named `name`.
#[cfg(feature = "fault-injection")]
pub fn inject(name: &str) -> Result<(), crate::error::Error> {
    const POINTS: [Point; 9] = [
        Point::Claim,
        Point::PreStep,
        Point::Created,
        Point::SessionEvent,
        Point::Begin,
        Point::Settle,
        Point::Tick,
        Point::Resolve,
        Point::Apply,
    ];
    let point =
        POINTS
            .into_iter()
            .find(|p| p.name() == name)
            .ok_or(crate::error::Error::InvalidInput {
            field: "point",
            value: format!("\"{name}\""),
            expected:
                "one of claim, preStep, created, sessionEvent, begin, settle, tick, resolve, apply",
        })?;
    armed::arm(point);
    Ok(())
}
