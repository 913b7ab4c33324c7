//! When the guard tries again after a fault of its own, on plain types.
//!
//! After a fault the guard stands down and a fresh WebAssembly instance waits to
//! take over. Like an Erlang/OTP supervisor restarting a failed child with a
//! bounded intensity, it recovers at most [`MAX_RECOVERIES`] times in any
//! [`WINDOW_MS`]; past that it stays down until the process restarts. Each
//! recovery waits a backoff that doubles with the recoveries already in the
//! window (like Envoy's `FAIL_RELOAD` with its reload backoff): from
//! [`FIRST_BACKOFF_MS`] for the first to [`LONGEST_BACKOFF_MS`] for the last the
//! bound allows, 1, 2, 4, 8 and 16 s. The bound is the only cap the backoff needs.
//!
//! The times are the host's monotonic clock in milliseconds; the JavaScript side
//! keeps them across instances (an instance's memory does not survive a fault).

/// Recoveries allowed in one window.
pub const MAX_RECOVERIES: usize = 5;
/// The window, in ms: ten minutes.
pub const WINDOW_MS: f64 = 600_000.0;
/// The backoff before the first recovery in a window, in ms.
pub const FIRST_BACKOFF_MS: f64 = 1_000.0;
/// The longest backoff ever taken, in ms: the one before the last recovery the
/// bound allows ([`FIRST_BACKOFF_MS`] doubled `MAX_RECOVERIES - 1` times).
// MAX_RECOVERIES is 5: the shift cannot overflow, nor the cast lose anything.
#[allow(clippy::cast_possible_truncation)]
pub const LONGEST_BACKOFF_MS: f64 = FIRST_BACKOFF_MS * (1u32 << (MAX_RECOVERIES - 1)) as f64;

/// The bound in words, as the guard's lines say it: `5 times in 10 minutes`.
pub fn bound_text() -> String {
    format!(
        "{MAX_RECOVERIES} times in {} minutes",
        crate::config::render_number(WINDOW_MS / 60_000.0)
    )
}

/// What to do after a fault.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Plan {
    /// Recover after this many ms.
    Retry {
        /// The backoff.
        after_ms: f64,
    },
    /// The guard recovered [`MAX_RECOVERIES`] times within the window: stay down.
    GiveUp,
}

/// The plan after a fault at `now`, given the times of the recoveries so far.
pub fn plan(recoveries: &[f64], now: f64) -> Plan {
    let in_window = recoveries
        .iter()
        .filter(|&&at| at.is_finite() && now - at < WINDOW_MS)
        .count();
    if in_window >= MAX_RECOVERIES {
        return Plan::GiveUp;
    }
    // Fewer than MAX_RECOVERIES in the window: at most MAX_RECOVERIES - 1 doublings.
    #[allow(clippy::cast_possible_truncation)]
    let doublings = in_window as u32;
    Plan::Retry {
        after_ms: FIRST_BACKOFF_MS * f64::from(1u32 << doublings),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_fault_waits_a_second() {
        assert_eq!(plan(&[], 0.0), Plan::Retry { after_ms: 1000.0 });
    }

    #[test]
    fn the_backoff_doubles_with_recoveries_in_the_window() {
        let mut recoveries = Vec::new();
        let mut waits = Vec::new();
        let mut now = 0.0;
        while let Plan::Retry { after_ms } = plan(&recoveries, now) {
            waits.push(after_ms);
            now += after_ms;
            recoveries.push(now);
            now += 10.0;
        }
        assert_eq!(waits, [1000.0, 2000.0, 4000.0, 8000.0, 16000.0]);
        assert_eq!(recoveries.len(), MAX_RECOVERIES);
    }

    #[test]
    fn recoveries_older_than_the_window_do_not_count() {
        let recoveries = [0.0, 1.0, 2.0, 3.0, 4.0];
        assert_eq!(plan(&recoveries, 599_999.0), Plan::GiveUp);
        assert_eq!(
            plan(&recoveries, 600_004.0),
            Plan::Retry { after_ms: 1000.0 }
        );
        assert_eq!(
            plan(&recoveries, 600_002.5),
            Plan::Retry { after_ms: 4000.0 },
            "two of five fell out of the window"
        );
    }

    #[test]
    fn the_longest_backoff_is_the_one_before_the_last_recovery_allowed() {
        let waits: Vec<f64> = (0..MAX_RECOVERIES)
            .map(|n| match plan(&vec![0.0; n], 1.0) {
                Plan::Retry { after_ms } => after_ms,
                Plan::GiveUp => panic!("gave up after {n}"),
            })
            .collect();
        assert_eq!(
            waits.iter().copied().fold(0.0, f64::max),
            LONGEST_BACKOFF_MS
        );
        assert_eq!(waits.last(), Some(&LONGEST_BACKOFF_MS));
        assert_eq!(LONGEST_BACKOFF_MS, 16_000.0);
        assert_eq!(plan(&[0.0; MAX_RECOVERIES], 1.0), Plan::GiveUp);
    }

    #[test]
    fn the_bound_in_words() {
        assert_eq!(bound_text(), "5 times in 10 minutes");
    }

    #[test]
    fn unreadable_times_are_not_recoveries() {
        assert_eq!(plan(&[f64::NAN; 5], 0.0), Plan::Retry { after_ms: 1000.0 });
    }
}
