//! A per-session bound on warn lines: at most 20 a minute, then one notice, then a count.
//!
//! A session's *window* opens at its first warn line when none is running and
//! lasts [`WINDOW_MS`]. Within it the first [`LINES_PER_WINDOW`] lines are
//! written; the next one is replaced by [`suppressed_notice`] and the rest are
//! skipped. Every line past the twentieth, the noticed one included, counts as
//! left out, and the session's first line after the window opens a new window
//! and carries that count, for the caller to write [`left_out_notice`] next to
//! it. Only lines are bounded: records and counts are the caller's, untouched.
//!
//! # The clock
//!
//! `now_ms` is meant to be a monotonic clock in milliseconds. A reading that is
//! not finite (NaN, ±∞) never ends a window; a session with no window running
//! opens one at the last finite reading seen (0 before any). A reading before
//! the running window's start (a clock set back) moves that start back to it:
//! the window stays open with its counts and ends [`WINDOW_MS`] after that
//! reading, so lines are never let through by a clock going backwards.
//!
//! # Memory
//!
//! At most [`MAX_SESSIONS`] windows are kept. Windows that ended with nothing
//! left out are pruned now and then (amortised over new sessions); that loses
//! nothing, since such a session's next line opens a fresh window either way.
//! When the table is full, the window opened longest ago is evicted: if it
//! ended with lines left out, that count is never reported, and if it was still
//! running (more than [`MAX_SESSIONS`] sessions warned within one window), its
//! session may write another [`LINES_PER_WINDOW`] lines in what remains of it.

use std::collections::VecDeque;

use crate::echo::escape;

/// Warn lines written per session per window before the rest are left out.
pub const LINES_PER_WINDOW: u32 = 20;

/// Length of a session's window, in milliseconds.
pub const WINDOW_MS: f64 = 60_000.0;

/// Most windows kept at once; past it the oldest is evicted.
pub const MAX_SESSIONS: usize = 4096;

/// New sessions between prunes while the table is small.
const MIN_PRUNE_INTERVAL: usize = 64;

/// What the caller does with one warn line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// Write the line. A `left_out` above zero says this line opens a new
    /// window after one that left that many out: write [`left_out_notice`] too.
    Write {
        /// Lines left out in the session's previous window.
        left_out: u64,
    },
    /// Leave the line out and write [`suppressed_notice`] in its place.
    Notice,
    /// Leave the line out.
    Skip,
}

/// One session's window.
#[derive(Debug)]
struct Window {
    /// When it opened (always finite).
    start: f64,
    /// Lines written in it so far.
    written: u32,
    /// Lines left out of it so far, the noticed one included.
    left_out: u64,
    /// Opening order: its entry in [`LogBound::order`] carries the same number.
    seq: u64,
}

impl Window {
    /// A window opened at `start` by its first, written, line.
    fn open(start: f64, seq: u64) -> Self {
        Window {
            start,
            written: 1,
            left_out: 0,
            seq,
        }
    }

    /// Whether a finite reading `now` falls after the window.
    fn ended(&self, now: f64) -> bool {
        now - self.start >= WINDOW_MS
    }

    /// Count a line inside the window.
    fn count(&mut self) -> Admit {
        if self.written < LINES_PER_WINDOW {
            self.written += 1;
            return Admit::Write { left_out: 0 };
        }
        self.left_out = self.left_out.saturating_add(1);
        if self.left_out == 1 {
            Admit::Notice
        } else {
            Admit::Skip
        }
    }
}

/// The windows by session: a `Vec` kept sorted by session, searched by
/// bisection. A new session's window is an insert that moves at most
/// [`MAX_SESSIONS`] entries, on a path that writes a log line anyway; it keeps a
/// third `HashMap` instantiation (with hashbrown's rehashing) out of the `.wasm`.
#[derive(Debug)]
struct Windows {
    entries: Vec<(String, Window)>,
}

impl Windows {
    const fn new() -> Self {
        Self {
            entries: Vec::new(),
        }
    }

    fn find(&self, session: &str) -> Result<usize, usize> {
        self.entries
            .binary_search_by(|(key, _)| key.as_str().cmp(session))
    }

    fn get(&self, session: &str) -> Option<&Window> {
        let i = self.find(session).ok()?;
        self.entries.get(i).map(|(_, w)| w)
    }

    fn get_mut(&mut self, session: &str) -> Option<&mut Window> {
        let i = self.find(session).ok()?;
        self.entries.get_mut(i).map(|(_, w)| w)
    }

    /// Open `session`'s window (the caller found it has none).
    fn insert(&mut self, session: &str, window: Window) {
        match self.find(session) {
            Ok(i) => {
                if let Some(entry) = self.entries.get_mut(i) {
                    entry.1 = window;
                }
            }
            Err(i) => self.entries.insert(i, (session.to_owned(), window)),
        }
    }

    fn remove(&mut self, session: &str) {
        if let Ok(i) = self.find(session) {
            self.entries.remove(i);
        }
    }

    fn retain(&mut self, keep: impl Fn(&Window) -> bool) {
        self.entries.retain(|(_, w)| keep(w));
    }

    fn len(&self) -> usize {
        self.entries.len()
    }

    #[cfg(test)]
    fn contains_key(&self, session: &str) -> bool {
        self.find(session).is_ok()
    }

    #[cfg(test)]
    fn keys(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(key, _)| key.as_str())
    }
}

/// The per-session bound on warn lines (see the module docs).
#[derive(Debug)]
pub struct LogBound {
    /// The windows by session.
    windows: Windows,
    /// Sessions by the opening order of their window, oldest first. An entry
    /// whose number is no longer its session's window's is stale: skipped on
    /// eviction and dropped when stale entries outnumber live ones.
    order: VecDeque<(u64, String)>,
    /// The next window's opening order.
    next_seq: u64,
    /// The last finite reading.
    latest: f64,
    /// Sessions added since the last prune.
    since_prune: usize,
}

impl Default for LogBound {
    fn default() -> Self {
        Self::new()
    }
}

impl LogBound {
    /// No window open yet (a `const fn`: the instance's bound is a `const`
    /// thread-local, with no lazy state to check on each access).
    pub const fn new() -> Self {
        Self {
            windows: Windows::new(),
            order: VecDeque::new(),
            next_seq: 0,
            latest: 0.0,
            since_prune: 0,
        }
    }

    /// Decide what to do with a warn line of `session` at `now_ms`.
    pub fn admit(&mut self, session: &str, now_ms: f64) -> Admit {
        let finite = now_ms.is_finite();
        if finite {
            self.latest = now_ms;
        }
        let seq = self.next_seq;
        if let Some(w) = self.windows.get_mut(session) {
            if !(finite && w.ended(now_ms)) {
                if now_ms < w.start {
                    w.start = now_ms;
                }
                return w.count();
            }
            // The window ended: open the next one, last in the eviction order.
            let old = std::mem::replace(w, Window::open(now_ms, seq));
            self.next_seq += 1;
            self.order.push_back((seq, session.to_owned()));
            self.compact();
            return Admit::Write {
                left_out: old.left_out,
            };
        }
        self.make_room();
        let start = if finite { now_ms } else { self.latest };
        self.windows.insert(session, Window::open(start, seq));
        self.order.push_back((seq, session.to_owned()));
        self.next_seq += 1;
        Admit::Write { left_out: 0 }
    }

    /// Make room for one more window: prune now and then, evict when full.
    fn make_room(&mut self) {
        self.since_prune += 1;
        if self.since_prune >= MIN_PRUNE_INTERVAL.max(self.windows.len() / 2) {
            self.since_prune = 0;
            self.prune();
        }
        while self.windows.len() >= MAX_SESSIONS {
            let Some((seq, oldest)) = self.order.pop_front() else {
                break;
            };
            if is_live(&self.windows, seq, &oldest) {
                self.windows.remove(&oldest);
            }
        }
    }

    /// Drop stale entries from the eviction order once they outnumber live ones.
    fn compact(&mut self) {
        if self.order.len() > 2 * self.windows.len() + MIN_PRUNE_INTERVAL {
            let windows = &self.windows;
            self.order.retain(|(seq, s)| is_live(windows, *seq, s));
        }
    }

    /// Drop the windows that ended, as of the last finite reading, with nothing left out.
    fn prune(&mut self) {
        let now = self.latest;
        self.windows.retain(|w| w.left_out > 0 || !w.ended(now));
        self.compact();
    }

    /// The live entries of the eviction order, oldest first (tests only).
    #[cfg(test)]
    fn live_order(&self) -> Vec<&str> {
        self.order
            .iter()
            .filter(|(seq, s)| is_live(&self.windows, *seq, s))
            .map(|(_, s)| s.as_str())
            .collect()
    }
}

/// Whether the eviction-order entry `(seq, session)` is its session's running window.
fn is_live(windows: &Windows, seq: u64, session: &str) -> bool {
    windows.get(session).is_some_and(|w| w.seq == seq)
}

/// The line written in place of a session's first left-out line.
pub fn suppressed_notice(session: &str) -> String {
    format!(
        "further warn lines for session {} are left out for the rest of the minute (more than {LINES_PER_WINDOW} in a minute)",
        escape(session)
    )
}

/// The line saying how many lines of a session's previous window were left out.
pub fn left_out_notice(session: &str, n: u64) -> String {
    let (lines, were) = if n == 1 {
        ("line", "was")
    } else {
        ("lines", "were")
    };
    format!(
        "{n} warn {lines} for session {} {were} left out (more than {LINES_PER_WINDOW} in a minute)",
        escape(session)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: Admit = Admit::Write { left_out: 0 };

    /// Admit `n` lines of `session` at `now`.
    fn run(b: &mut LogBound, session: &str, now: f64, n: usize) -> Vec<Admit> {
        (0..n).map(|_| b.admit(session, now)).collect()
    }

    #[test]
    fn twenty_lines_then_a_notice_then_skips() {
        let mut b = LogBound::default();
        let got = run(&mut b, "s", 0.0, 25);
        assert_eq!(got[..20], [W; 20]);
        assert_eq!(got[20], Admit::Notice);
        assert_eq!(got[21..], [Admit::Skip; 4]);
    }

    #[test]
    fn the_first_line_after_the_window_carries_the_count_left_out() {
        let mut b = LogBound::default();
        run(&mut b, "s", 1000.0, 20);
        for i in 0..7 {
            b.admit("s", 1000.0 + f64::from(i) * 1000.0);
        }
        assert_eq!(b.admit("s", 60_999.9), Admit::Skip);
        assert_eq!(b.admit("s", 61_000.0), Admit::Write { left_out: 8 });
        // The new window starts over and reports nothing once it ends clean.
        assert_eq!(run(&mut b, "s", 61_000.0, 19), [W; 19]);
        assert_eq!(b.admit("s", 121_000.0), W);
    }

    #[test]
    fn a_window_with_twenty_lines_or_fewer_reports_nothing() {
        let mut b = LogBound::default();
        assert_eq!(run(&mut b, "s", 0.0, 20), [W; 20]);
        assert_eq!(b.admit("s", 60_000.0), W);
    }

    #[test]
    fn the_window_opens_at_the_first_line_not_on_a_fixed_grid() {
        let mut b = LogBound::default();
        b.admit("s", 50_000.0);
        assert_eq!(run(&mut b, "s", 109_999.0, 20)[19], Admit::Notice);
        assert_eq!(b.admit("s", 110_000.0), Admit::Write { left_out: 1 });
    }

    #[test]
    fn sessions_are_bounded_independently() {
        let mut b = LogBound::default();
        run(&mut b, "a", 0.0, 30);
        assert_eq!(run(&mut b, "b", 1.0, 20), [W; 20]);
        assert_eq!(b.admit("b", 1.0), Admit::Notice);
        assert_eq!(b.admit("a", 60_000.0), Admit::Write { left_out: 10 });
        assert_eq!(b.admit("b", 60_000.0), Admit::Skip);
        assert_eq!(b.admit("b", 60_001.0), Admit::Write { left_out: 2 });
    }

    #[test]
    fn a_non_finite_reading_never_ends_a_window() {
        let mut b = LogBound::default();
        run(&mut b, "s", 0.0, 20);
        assert_eq!(b.admit("s", f64::NAN), Admit::Notice);
        assert_eq!(b.admit("s", f64::INFINITY), Admit::Skip);
        assert_eq!(b.admit("s", f64::NEG_INFINITY), Admit::Skip);
        assert_eq!(b.admit("s", 60_000.0), Admit::Write { left_out: 3 });
    }

    #[test]
    fn a_non_finite_reading_opens_a_window_at_the_last_finite_one() {
        let mut b = LogBound::default();
        assert_eq!(b.admit("s", f64::NAN), W);
        assert_eq!(b.windows.get("s").map(|w| w.start), Some(0.0));
        b.admit("other", 5000.0);
        assert_eq!(b.admit("t", f64::NAN), W);
        assert_eq!(b.windows.get("t").map(|w| w.start), Some(5000.0));
        run(&mut b, "t", f64::NAN, 20);
        assert_eq!(b.admit("t", 64_999.0), Admit::Skip);
        assert_eq!(b.admit("t", 65_000.0), Admit::Write { left_out: 2 });
    }

    #[test]
    fn a_clock_set_back_keeps_the_window_open_from_the_earlier_reading() {
        let mut b = LogBound::default();
        run(&mut b, "s", 100_000.0, 20);
        assert_eq!(b.admit("s", 10_000.0), Admit::Notice);
        // The window now ends one window length after the earlier reading.
        assert_eq!(b.admit("s", 69_999.0), Admit::Skip);
        assert_eq!(b.admit("s", 70_000.0), Admit::Write { left_out: 2 });
    }

    #[test]
    fn windows_that_ended_clean_are_pruned_and_others_kept() {
        let mut b = LogBound::default();
        run(&mut b, "flooded", 0.0, 21);
        for i in 0..100 {
            b.admit(&format!("quiet-{i}"), 0.0);
        }
        for i in 0..200 {
            b.admit(&format!("later-{i}"), 60_000.0);
        }
        assert!(!b.windows.keys().any(|k| k.starts_with("quiet-")));
        assert!(b.windows.contains_key("flooded"));
        assert_eq!(b.windows.len(), b.live_order().len());
        assert_eq!(b.admit("flooded", 60_000.0), Admit::Write { left_out: 1 });
    }

    #[test]
    fn the_table_is_capped_and_the_oldest_window_goes_first() {
        let mut b = LogBound::default();
        run(&mut b, "first", 0.0, 25);
        for i in 1..MAX_SESSIONS {
            b.admit(&i.to_string(), 0.0);
        }
        assert_eq!(b.windows.len(), MAX_SESSIONS);
        b.admit("newcomer", 1.0);
        assert_eq!(b.windows.len(), MAX_SESSIONS);
        assert_eq!(b.live_order().len(), MAX_SESSIONS);
        // Evicted: its running window and the 5 it had left out are forgotten.
        assert!(!b.windows.contains_key("first"));
        assert_eq!(b.admit("first", 2.0), W);
        assert!(!b.windows.contains_key("1"));
        for _ in 0..3 * MAX_SESSIONS {
            b.admit(&b.next_seq.to_string(), 3.0);
            assert!(b.windows.len() <= MAX_SESSIONS);
            assert!(b.order.len() <= 2 * MAX_SESSIONS + MIN_PRUNE_INTERVAL);
        }
        assert_eq!(b.windows.len(), b.live_order().len());
    }

    #[test]
    fn windows_reopened_again_and_again_leave_a_bounded_eviction_order() {
        let mut b = LogBound::default();
        for i in 0..10_000u32 {
            b.admit("again", f64::from(i) * WINDOW_MS);
            assert!(b.order.len() <= 2 + MIN_PRUNE_INTERVAL + 1);
        }
        assert_eq!(b.live_order(), ["again"]);
    }

    #[test]
    fn stale_entries_are_dropped_once_they_pass_twice_the_live_ones() {
        let mut b = LogBound::default();
        let (mut most, mut after) = (0, usize::MAX);
        for i in 0..200u32 {
            b.admit(
                ["a", "b", "c"][i as usize % 3],
                f64::from(i / 3) * WINDOW_MS,
            );
            most = most.max(b.order.len());
            if most > b.order.len() {
                after = after.min(b.order.len());
            }
        }
        // Each reopening leaves one stale entry; three windows stay live.
        assert_eq!(most, 2 * 3 + MIN_PRUNE_INTERVAL);
        assert_eq!(after, 3, "compacted to the live entries");
    }

    #[test]
    fn ended_windows_are_pruned_once_the_new_ones_reach_half_the_table() {
        let mut b = LogBound::default();
        for i in 0..300 {
            b.admit(&format!("quiet-{i}"), 0.0);
        }
        b.since_prune = 0;
        // At 60 s all 300 have ended; new sessions come one at a time.
        let pruned_at = (1..=400).find(|k| {
            b.admit(&format!("later-{k}"), WINDOW_MS);
            !b.windows.keys().any(|key| key.starts_with("quiet-"))
        });
        // The k-th new session prunes when k reaches half of the 299 + k windows.
        assert_eq!(pruned_at, Some(298));
    }

    #[test]
    fn a_reopened_window_moves_to_the_back_of_the_eviction_order() {
        let mut b = LogBound::default();
        b.admit("a", 0.0);
        b.admit("b", 1.0);
        b.admit("a", 60_000.0);
        assert_eq!(b.live_order(), ["b", "a"]);
    }

    #[test]
    fn the_notices_name_the_session_escaped_and_the_count() {
        assert_eq!(
            suppressed_notice("s-1\n\u{1b}[2J"),
            "further warn lines for session s-1\\n\\u001b[2J are left out for the rest of the minute (more than 20 in a minute)"
        );
        assert_eq!(
            left_out_notice("s-1", 480),
            "480 warn lines for session s-1 were left out (more than 20 in a minute)"
        );
        assert_eq!(
            left_out_notice("\u{202e}x", 1),
            "1 warn line for session \\u202ex was left out (more than 20 in a minute)"
        );
        assert_eq!(
            left_out_notice("s", u64::MAX),
            "18446744073709551615 warn lines for session s were left out (more than 20 in a minute)"
        );
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod properties {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::*;

    /// The bound as the module docs state it, without pruning or a cap.
    #[derive(Default)]
    struct Model {
        windows: HashMap<String, (f64, u32, u64)>,
        latest: f64,
    }

    impl Model {
        fn admit(&mut self, session: &str, now: f64) -> Admit {
            if now.is_finite() {
                self.latest = now;
            }
            let start = if now.is_finite() { now } else { self.latest };
            let fresh = (start, 1, 0);
            match self.windows.get_mut(session) {
                None => {
                    self.windows.insert(session.to_owned(), fresh);
                    Admit::Write { left_out: 0 }
                }
                Some(w) if now.is_finite() && now - w.0 >= WINDOW_MS => {
                    let left_out = w.2;
                    *w = fresh;
                    Admit::Write { left_out }
                }
                Some(w) => {
                    if now < w.0 {
                        w.0 = now;
                    }
                    if w.1 < LINES_PER_WINDOW {
                        w.1 += 1;
                        Admit::Write { left_out: 0 }
                    } else {
                        w.2 += 1;
                        if w.2 == 1 {
                            Admit::Notice
                        } else {
                            Admit::Skip
                        }
                    }
                }
            }
        }
    }

    /// Session names, made once.
    fn name(i: usize) -> &'static str {
        static NAMES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
        NAMES
            .get_or_init(|| (0..300).map(|i| format!("s-{i}")).collect())
            .get(i)
            .map_or("s-?", String::as_str)
    }

    /// Lines as (session, milliseconds since the previous line), in bursts:
    /// one session writes one line or a flood of them, after a pause or a long
    /// gap. A few hot sessions come back often, the rest come and go, so windows
    /// overflow, end clean, and get pruned in between.
    fn lines(sessions: usize) -> impl Strategy<Value = Vec<(usize, f64)>> {
        let session = prop_oneof![1 => 0..sessions.min(3), 2 => 0..sessions];
        let burst = prop_oneof![3 => 1..3usize, 1 => 15..30usize];
        let gap = prop_oneof![
            4 => Just(0.0),
            4 => 0.0..3000.0f64,
            1 => 55_000.0..130_000.0f64,
        ];
        proptest::collection::vec((session, burst, gap), 0..160).prop_map(|bursts| {
            bursts
                .into_iter()
                .flat_map(|(s, n, gap)| (0..n).map(move |i| (s, if i == 0 { gap } else { 1.0 })))
                .collect()
        })
    }

    /// A clock reading: mostly sane, sometimes backwards, non-finite or huge.
    fn reading() -> impl Strategy<Value = f64> {
        prop_oneof![
            8 => -200_000.0..400_000.0f64,
            1 => Just(f64::NAN),
            1 => Just(f64::INFINITY),
            1 => Just(f64::NEG_INFINITY),
            1 => Just(f64::MAX),
            1 => Just(-f64::MAX),
        ]
    }

    proptest! {
        // Each case is up to 200 lines, so 500 cases are some 50,000 lines per property.
        #![proptest_config(ProptestConfig::with_cases(500))]

        #[test]
        fn at_most_twenty_lines_and_a_notice_per_window_and_every_line_accounted(
            lines in lines(4),
        ) {
            let mut b = LogBound::default();
            let mut now = 0.0;
            // Per session: (window start, lines written or noticed in it).
            let mut windows: HashMap<usize, (f64, u32)> = HashMap::new();
            let (mut left_out, mut reported) = (0u64, 0u64);
            for (s, gap) in lines {
                now += gap;
                let admit = b.admit(name(s), now);
                let w = windows.entry(s).or_insert((now, 0));
                if now - w.0 >= WINDOW_MS {
                    *w = (now, 0);
                } else {
                    prop_assert!(
                        !matches!(admit, Admit::Write { left_out } if left_out > 0),
                        "a count reported inside a window"
                    );
                }
                match admit {
                    Admit::Write { left_out: n } => {
                        reported += n;
                        w.1 += 1;
                    }
                    Admit::Notice => {
                        prop_assert_eq!(w.1, LINES_PER_WINDOW);
                        left_out += 1;
                        w.1 += 1;
                    }
                    Admit::Skip => {
                        prop_assert_eq!(w.1, LINES_PER_WINDOW + 1);
                        left_out += 1;
                    }
                }
                prop_assert!(w.1 <= LINES_PER_WINDOW + 1);
            }
            // A line per session after every window has ended reports what is still owed.
            now += WINDOW_MS;
            for s in windows.keys() {
                if let Admit::Write { left_out: n } = b.admit(name(*s), now) {
                    reported += n;
                }
            }
            prop_assert_eq!(reported, left_out);
        }

        #[test]
        fn pruning_loses_nothing_below_the_cap(lines in lines(300)) {
            let (mut b, mut model) = (LogBound::default(), Model::default());
            let mut now = 0.0;
            for (s, gap) in lines {
                now += gap;
                let s = name(s);
                prop_assert_eq!(b.admit(s, now), model.admit(s, now));
                prop_assert_eq!(b.windows.len(), b.live_order().len());
                prop_assert!(b.order.len() <= 2 * b.windows.len() + MIN_PRUNE_INTERVAL + 1);
            }
        }

        #[test]
        fn any_clock_follows_the_stated_rules_and_accounts_every_line(
            lines in proptest::collection::vec((0..3usize, reading()), 0..150),
        ) {
            let (mut b, mut model) = (LogBound::default(), Model::default());
            let (mut left_out, mut reported) = (0u64, 0u64);
            for (s, now) in lines {
                let s = name(s);
                let admit = b.admit(s, now);
                prop_assert_eq!(admit, model.admit(s, now));
                match admit {
                    Admit::Write { left_out: n } => reported += n,
                    Admit::Notice | Admit::Skip => left_out += 1,
                }
            }
            // Set the clock back as far as it goes, then forward as far: every window ends.
            for s in 0..3 {
                let s = name(s);
                for now in [-f64::MAX, f64::MAX] {
                    match b.admit(s, now) {
                        Admit::Write { left_out: n } => reported += n,
                        Admit::Notice | Admit::Skip => left_out += 1,
                    }
                }
            }
            prop_assert_eq!(reported, left_out);
        }
    }
}
