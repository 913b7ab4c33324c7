//! Which sightings of a bad inbox entry are the same value, on plain types.
//!
//! The guard meets one bad value up to four times: at its durable write (the
//! `session/event` observer), while it is pending (the pre-step sweep, once per
//! step), when it is claimed (the claim wrapper), and in the claimed batch at the
//! guard's pre-step entry. A record is written each time (the places differ), but
//! `counts().observed` counts values: a sighting of a value seen before is an
//! [`Seen::Again`], marked with the first sighting's value id.
//!
//! Values are told apart by a fingerprint (their kind and the head of their
//! rendering, what a preview is made of) within their session, and followed as
//! the inbox moves them: written → pending → claimed. Two equal values pending at
//! once are two values (each keeps its own entry). What is followed is bounded
//! ([`MAX_TRACKED`] values across sessions; the oldest make way), so a session
//! that ends with values pending costs nothing for long. The entries are one
//! plain list of numbers, scanned: only bad entries ever reach it, and a list
//! is a fraction of a map's size in the `.wasm`. Sessions and fingerprints are
//! kept as 64-bit hashes ([`hash`]): two distinct ones share a hash with a
//! chance far below one in a billion for the values a process ever holds.

/// What a value is told apart by: a hash of its kind and the head of its rendering.
pub type Fingerprint = u64;

/// FNV-1a over `parts`, each followed by a separator byte (so `["ab", "c"]` and
/// `["a", "bc"]` differ).
pub fn hash(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in part.iter().chain(&[0xff]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// Values followed at once, across sessions.
pub const MAX_TRACKED: usize = 4096;

/// A sighting of a bad value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// A value not seen before, with its new id.
    New(u64),
    /// The value with this id, seen before.
    Again(u64),
}

impl Seen {
    /// The value's id.
    pub const fn id(self) -> u64 {
        match self {
            Seen::New(id) | Seen::Again(id) => id,
        }
    }

    /// Whether this is the first sighting of the value.
    pub const fn is_new(self) -> bool {
        matches!(self, Seen::New(_))
    }
}

/// Where a followed value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// Written or seen pending, not claimed yet.
    Pending,
    /// In the session's last claimed batch.
    Claimed,
}

#[derive(Debug)]
struct Entry {
    session: u64,
    fp: Fingerprint,
    id: u64,
    place: Place,
}

/// The values followed, oldest first.
#[derive(Debug, Default)]
pub struct Sightings {
    entries: Vec<Entry>,
    next_id: u64,
}

impl Sightings {
    /// A new, empty tracker.
    pub fn new() -> Self {
        Self::default()
    }

    fn fresh(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// Values followed now, across sessions.
    pub fn tracked(&self) -> usize {
        self.entries.len()
    }

    fn push(&mut self, session: u64, fp: Fingerprint, id: u64, place: Place) {
        if self.entries.len() == MAX_TRACKED {
            self.entries.remove(0);
        }
        self.entries.push(Entry {
            session,
            fp,
            id,
            place,
        });
    }

    /// Take the oldest entry of `session` with `fp` at `place`: its id.
    fn take(&mut self, session: u64, fp: Fingerprint, place: Place) -> Option<u64> {
        let i = self
            .entries
            .iter()
            .position(|e| e.place == place && e.session == session && e.fp == fp)?;
        Some(self.entries.remove(i).id)
    }

    /// A bad value's durable write: always a new value, now pending.
    pub fn written(&mut self, session: &str, fp: Fingerprint) -> Seen {
        let id = self.fresh();
        self.push(hash(&[session.as_bytes()]), fp, id, Place::Pending);
        Seen::New(id)
    }

    /// One sweep of a session's pending lists: `found` is every bad value pending
    /// now, each with whether it stays pending after the sweep (it was not
    /// repaired or dropped). Values followed as pending but not found left the
    /// lists some other way, and are forgotten.
    pub fn swept(&mut self, session: &str, found: &[(Fingerprint, bool)]) -> Vec<Seen> {
        let session = hash(&[session.as_bytes()]);
        let seen: Vec<Seen> = found
            .iter()
            .map(|&(fp, _)| match self.take(session, fp, Place::Pending) {
                Some(id) => Seen::Again(id),
                None => Seen::New(self.fresh()),
            })
            .collect();
        self.entries
            .retain(|e| !(e.place == Place::Pending && e.session == session));
        for (&(fp, stays), sighting) in found.iter().zip(&seen) {
            if stays {
                self.push(session, fp, sighting.id(), Place::Pending);
            }
        }
        seen
    }

    /// A batch claimed: `found` is its bad values, in order. `by_claim`: seen by
    /// the claim wrapper (the values leave the pending lists, and become the
    /// session's last claimed batch); else seen in the claimed batch at the
    /// pre-step entry (a value of the last claimed batch is seen again).
    pub fn claimed(&mut self, session: &str, found: &[Fingerprint], by_claim: bool) -> Vec<Seen> {
        let session = hash(&[session.as_bytes()]);
        let seen: Vec<Seen> = found
            .iter()
            .map(|&fp| {
                let again = if by_claim {
                    self.take(session, fp, Place::Pending)
                } else {
                    self.take(session, fp, Place::Claimed)
                        .or_else(|| self.take(session, fp, Place::Pending))
                };
                match again {
                    Some(id) => Seen::Again(id),
                    None => Seen::New(self.fresh()),
                }
            })
            .collect();
        if by_claim {
            self.entries
                .retain(|e| !(e.place == Place::Claimed && e.session == session));
            for (&fp, sighting) in found.iter().zip(&seen) {
                self.push(session, fp, sighting.id(), Place::Claimed);
            }
        }
        seen
    }

    /// Forget every value (the records were reset).
    pub fn reset(&mut self) {
        self.entries.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp(s: &str) -> Fingerprint {
        hash(&[s.as_bytes()])
    }

    #[test]
    fn the_hash_tells_parts_apart() {
        assert_ne!(hash(&[b"ab", b"c"]), hash(&[b"a", b"bc"]));
        assert_ne!(hash(&[b"s1"]), hash(&[b"s2"]));
        assert_eq!(hash(&[b"x"]), hash(&[b"x"]));
    }

    #[test]
    fn the_hash_is_fnv_1a_over_each_part_and_its_separator() {
        assert_eq!(
            hash(&[]),
            0xcbf2_9ce4_8422_2325,
            "no parts: the offset basis"
        );
        // FNV-1a 64 of the bytes "a" 0xff, and of "ab" 0xff "c" 0xff.
        assert_eq!(hash(&[b"a"]), 0x089b_c907_b544_c769);
        assert_eq!(hash(&[b"ab", b"c"]), 0x20ba_9b30_25a8_b421);
    }

    #[test]
    fn a_value_written_swept_claimed_and_seen_at_pre_step_is_one_value() {
        let mut t = Sightings::new();
        let first = t.written("s", fp("string:a bare string"));
        assert!(first.is_new());
        let swept = t.swept("s", &[(fp("string:a bare string"), true)]);
        assert_eq!(swept, [Seen::Again(first.id())]);
        assert!(!swept[0].is_new(), "seen again");
        let swept = t.swept("s", &[(fp("string:a bare string"), true)]);
        assert_eq!(swept, [Seen::Again(first.id())], "a second step's sweep");
        let claimed = t.claimed("s", &[fp("string:a bare string")], true);
        assert_eq!(claimed, [Seen::Again(first.id())]);
        let at_entry = t.claimed("s", &[fp("string:a bare string")], false);
        assert_eq!(at_entry, [Seen::Again(first.id())]);
        assert_eq!(
            t.tracked(),
            0,
            "nothing is followed once the value was seen at the entry"
        );
    }

    #[test]
    fn two_equal_values_are_two_values() {
        let mut t = Sightings::new();
        let a = t.written("s", fp("x"));
        let b = t.written("s", fp("x"));
        assert_ne!(a.id(), b.id());
        let claimed = t.claimed("s", &[fp("x"), fp("x"), fp("x")], true);
        assert_eq!(claimed[0], Seen::Again(a.id()));
        assert_eq!(claimed[1], Seen::Again(b.id()));
        assert!(
            claimed[2].is_new(),
            "a third one never went through the inbox"
        );
    }

    #[test]
    fn sessions_are_kept_apart() {
        let mut t = Sightings::new();
        let a = t.written("s1", fp("x"));
        let other = t.claimed("s2", &[fp("x")], true);
        assert!(other[0].is_new());
        let same = t.claimed("s1", &[fp("x")], true);
        assert_eq!(same, [Seen::Again(a.id())]);
    }

    #[test]
    fn a_value_repaired_while_pending_leaves_the_pending_lists() {
        let mut t = Sightings::new();
        let a = t.written("s", fp("x"));
        assert_eq!(t.swept("s", &[(fp("x"), false)]), [Seen::Again(a.id())]);
        assert!(
            t.claimed("s", &[fp("x")], true)[0].is_new(),
            "a later one is new"
        );
    }

    #[test]
    fn a_value_that_left_the_lists_otherwise_is_forgotten() {
        let mut t = Sightings::new();
        t.written("s", fp("x"));
        t.written("other", fp("x"));
        assert_eq!(t.swept("s", &[]), []);
        assert_eq!(t.tracked(), 1, "only the other session's value is left");
    }

    #[test]
    fn a_sweep_or_a_claim_forgets_only_its_own_session() {
        let mut t = Sightings::new();
        let pending = t.written("other", fp("x"));
        let claimed = t.claimed("other", &[fp("y")], true)[0];
        let mine = t.written("s", fp("z"));
        assert_eq!(t.swept("s", &[(fp("z"), true)]), [Seen::Again(mine.id())]);
        assert!(t.claimed("s", &[fp("w")], true)[0].is_new());
        assert_eq!(
            t.swept("s", &[(fp("z"), true)]),
            [Seen::Again(mine.id())],
            "a claim without it leaves it pending"
        );
        assert_eq!(
            t.claimed("other", &[fp("y")], false),
            [Seen::Again(claimed.id())],
            "the other session's last claimed batch"
        );
        assert_eq!(
            t.swept("other", &[(fp("x"), true)]),
            [Seen::Again(pending.id())],
            "the other session's pending value"
        );
    }

    #[test]
    fn the_last_claimed_batch_is_replaced_by_the_next() {
        let mut t = Sightings::new();
        let a = t.claimed("s", &[fp("x")], true)[0];
        assert!(a.is_new());
        let b = t.claimed("s", &[fp("y")], true)[0];
        assert!(b.is_new());
        assert!(
            t.claimed("s", &[fp("x")], false)[0].is_new(),
            "x's batch is gone"
        );
        assert_eq!(t.claimed("s", &[fp("y")], false), [Seen::Again(b.id())]);
    }

    #[test]
    fn what_is_followed_stays_bounded() {
        let mut t = Sightings::new();
        for i in 0..(MAX_TRACKED + 500) {
            t.written(&format!("s{}", i % 600), fp("x"));
        }
        assert_eq!(t.tracked(), MAX_TRACKED);
        t.reset();
        assert_eq!(t.tracked(), 0);
    }
}
