//! The client-query state machine: deadlines, refusal grace and endings, on plain types.
//!
//! A guarded query is a *flight*. It waits until one of four things happens:
//! the registry settles it (a valid answer, or the caller's cancellation), its
//! deadline passes, the refusal grace after the first page refusal passes, or
//! its guard is disposed. Only the first counts; the rest find the flight gone.
//!
//! Every waiting flight has an entry in one min-heap of due times, so a single
//! host timer armed for [`Flights::next_due`] serves them all. Entries of
//! finished flights are left in the heap and skipped by generation; once they
//! outnumber the live ones the heap is rebuilt, so memory follows the number of
//! flights in the air, not the number ever flown.
//!
//! What every client query runs (a key's conversions, [`Flights::begin`],
//! [`Flights::settle`]) is inlined, and the heap's rebuild kept out of line: in
//! the guard it runs in V8's baseline tier, which pays for every call
//! (`begin` in `src/interop/inspect.rs`).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::error::{Error, Refusal};

/// Index of a flight in the table; reused once the flight ends.
pub type Slot = u32;

/// Generations wrap below 2^20, so a key fits an `f64` exactly.
const GENERATION_MASK: u32 = (1 << 20) - 1;

/// Names one flight: its slot, and which use of the slot it is. A key of a
/// landed flight never matches the slot's next flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FlightKey {
    /// The slot.
    pub slot: Slot,
    generation: u32,
}

impl FlightKey {
    /// The key as a JavaScript number.
    #[inline(always)]
    pub fn to_f64(self) -> f64 {
        f64::from(self.generation) * 4_294_967_296.0 + f64::from(self.slot)
    }

    /// A key back from a JavaScript number; `None` for anything no key maps to.
    #[inline(always)]
    pub fn from_f64(n: f64) -> Option<Self> {
        if !(n.is_finite() && n >= 0.0 && n.fract() == 0.0 && n < 9_007_199_254_740_992.0) {
            return None;
        }
        // Checked above: a non-negative integer below 2^53.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let n = n as u64;
        let generation = u32::try_from(n >> 32).ok()?;
        (generation <= GENERATION_MASK).then_some(Self {
            slot: (n & 0xffff_ffff) as Slot,
            generation,
        })
    }
}

/// Milliseconds on the host's monotonic clock (`performance.now()`).
pub type Millis = f64;

/// A due time on the heap, in whole microseconds, so it orders totally.
type Micros = u64;

#[inline(always)]
fn micros(at: Millis) -> Micros {
    if at.is_nan() || at <= 0.0 {
        0
    } else {
        // Saturating float-to-int conversion is exactly what is wanted here.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let us = (at * 1000.0).ceil() as u64;
        us
    }
}

/// A timer may fire this early (ms) and still count its flight as due: Node
/// rounds delays to whole milliseconds.
const EARLY_MS: Millis = 1.0;

/// How a flight ended, when the guard (not the registry) ended it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// No page answered within the deadline.
    Deadline,
    /// A page refused and no valid answer followed within the grace.
    Refused(Refusal),
    /// The guard went away while the flight waited.
    Disposed,
}

impl Ending {
    /// How a flight ends at its due time: refused if a page refused it, else at its deadline.
    fn at_due(refusal: Option<Refusal>) -> Self {
        refusal.map_or(Self::Deadline, Self::Refused)
    }

    /// The report kind of this ending.
    pub const fn kind(&self) -> &'static str {
        match self {
            Ending::Deadline => "deadline",
            Ending::Refused(_) => "refused",
            Ending::Disposed => "disposed",
        }
    }
}

/// What a flight knows about its query. The provider and method names stay on the
/// JavaScript side until an error needs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Query {
    /// The guard that owns the flight.
    pub guard: u32,
    /// The flight's deadline.
    pub deadline_ms: u32,
    /// The flight's refusal grace.
    pub grace_ms: u32,
}

/// Where a flight stands: waiting, or ended by the guard, at its due time or by
/// disposal. An expired flight's ending follows from its `refusal`: a page's
/// refusal ends it as refused, none as a deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Waiting,
    Expired,
    Disposed,
}

/// One flight. Its request id and asking agent stay on the JavaScript side, which
/// finds a flight's key by its request id: nothing of it is a string here. The
/// rare part, a page's refusal, is boxed: a slot of the table is 32 bytes.
#[derive(Debug)]
struct Flight {
    query: Query,
    generation: u32,
    deadline_at: Millis,
    refusal: Option<Box<Refusal>>,
    stage: Stage,
}

impl Flight {
    const fn waits(&self) -> bool {
        matches!(self.stage, Stage::Waiting)
    }

    /// How the guard ended the flight; `None` while it waits.
    fn ending(&self) -> Option<Ending> {
        match self.stage {
            Stage::Waiting => None,
            Stage::Expired => Some(Ending::at_due(self.refusal.as_deref().cloned())),
            Stage::Disposed => Some(Ending::Disposed),
        }
    }
}

/// A flight taken off the table, with what the guard decided about it, if anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Landed {
    /// The query.
    pub query: Query,
    /// `Some` when the guard ended the flight; `None` when the registry settled it.
    pub ending: Option<Ending>,
}

impl Landed {
    /// The error the caller receives when the guard ended the flight.
    pub fn error(&self, provider: &str, method: &str) -> Option<Error> {
        Some(self.ending.as_ref()?.error(&self.query, provider, method))
    }
}

impl Ending {
    /// The error the caller of `query` (`provider.method`) receives for this ending.
    pub fn error(&self, query: &Query, provider: &str, method: &str) -> Error {
        let (provider, method) = (provider.to_owned(), method.to_owned());
        match self.clone() {
            Ending::Deadline => Error::InspectDeadline {
                provider,
                method,
                deadline_ms: query.deadline_ms,
            },
            Ending::Refused(refusal) => Error::InspectRefused {
                provider,
                method,
                refusal,
            },
            Ending::Disposed => Error::GuardDisposed { provider, method },
        }
    }
}

/// What a refusal changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusalEffect {
    /// Not a waiting flight of this agent (unknown id, late, other agent): nothing changed.
    Ignored,
    /// Remembered as the flight's first refusal; its due time may have moved earlier.
    First,
    /// The flight already had a refusal; the first one is kept.
    Repeated,
}

/// All flights in the air, and the heap of their due times.
#[derive(Debug)]
pub struct Flights {
    table: Vec<Option<Flight>>,
    free: Vec<Slot>,
    generations: Vec<u32>,
    heap: BinaryHeap<Reverse<(Micros, Slot, u32)>>,
    live: usize,
}

impl Default for Flights {
    fn default() -> Self {
        Self::new()
    }
}

impl Flights {
    /// An empty table (a `const fn`: a thread-local of one needs no lazy start).
    pub const fn new() -> Self {
        Self {
            table: Vec::new(),
            free: Vec::new(),
            generations: Vec::new(),
            heap: BinaryHeap::new(),
            live: 0,
        }
    }

    /// Flights currently in the table (waiting or ended but not yet landed).
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether no flight is in the table.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Start a flight at `now`; it is due at `now + deadline_ms`.
    #[inline(always)]
    pub fn begin(&mut self, query: Query, now: Millis) -> FlightKey {
        let deadline_at = now + f64::from(query.deadline_ms);
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => {
                self.table.push(None);
                self.generations.push(0);
                // The table never holds more than u32::MAX flights: each one is a
                // pending JS promise, and memory gives out long before.
                #[allow(clippy::cast_possible_truncation)]
                let slot = (self.table.len() - 1) as Slot;
                slot
            }
        };
        let generation = self.bump(slot);
        if let Some(cell) = self.table.get_mut(slot as usize) {
            *cell = Some(Flight {
                query,
                generation,
                deadline_at,
                refusal: None,
                stage: Stage::Waiting,
            });
        }
        self.live += 1;
        self.heap
            .push(Reverse((micros(deadline_at), slot, generation)));
        FlightKey { slot, generation }
    }

    #[inline(always)]
    fn bump(&mut self, slot: Slot) -> u32 {
        match self.generations.get_mut(slot as usize) {
            Some(g) => {
                *g = g.wrapping_add(1) & GENERATION_MASK;
                *g
            }
            None => 0,
        }
    }

    fn flight_mut(&mut self, slot: Slot) -> Option<&mut Flight> {
        self.table.get_mut(slot as usize)?.as_mut()
    }

    fn flight_at(&mut self, key: FlightKey) -> Option<&mut Flight> {
        self.flight_mut(key.slot)
            .filter(|f| f.generation == key.generation)
    }

    /// Whether `key` names a flight in the table (waiting, or ended but not landed).
    pub fn contains(&self, key: FlightKey) -> bool {
        matches!(self.table.get(key.slot as usize), Some(Some(f)) if f.generation == key.generation)
    }

    /// The query of a flight still waiting (not ended by the guard), if any.
    pub fn waiting(&self, key: FlightKey) -> Option<&Query> {
        match self.table.get(key.slot as usize) {
            Some(Some(f)) if f.generation == key.generation && f.waits() => Some(&f.query),
            _ => None,
        }
    }

    /// A page refused a flight's request (or its answer failed validation) at `now`.
    ///
    /// Only a refusal from the asking agent's session counts (`from_asker`), as the
    /// registry itself only accepts answers from it, and only one before the
    /// deadline. The first refusal is kept; the flight becomes due at
    /// `min(deadline, now + grace)`.
    pub fn refuse(
        &mut self,
        key: FlightKey,
        from_asker: bool,
        refusal: Refusal,
        now: Millis,
    ) -> RefusalEffect {
        let Some(flight) = self.flight_at(key) else {
            return RefusalEffect::Ignored;
        };
        if !flight.waits() || !from_asker {
            return RefusalEffect::Ignored;
        }
        // The deadline passed first (the timer is only late): it decides.
        if now > flight.deadline_at {
            return RefusalEffect::Ignored;
        }
        if flight.refusal.is_some() {
            return RefusalEffect::Repeated;
        }
        flight.refusal = Some(Box::new(refusal));
        let due = (now + f64::from(flight.query.grace_ms)).min(flight.deadline_at);
        let entry = Reverse((micros(due), key.slot, flight.generation));
        self.heap.push(entry);
        RefusalEffect::First
    }

    /// The earliest due time of a waiting flight, in ms; stale heap entries are dropped.
    pub fn next_due(&mut self) -> Option<Millis> {
        loop {
            let &Reverse((due, slot, generation)) = self.heap.peek()?;
            if self.is_current(slot, generation) {
                // Micros fit an f64 exactly for any realistic uptime.
                #[allow(clippy::cast_precision_loss)]
                return Some(due as f64 / 1000.0);
            }
            self.heap.pop();
        }
    }

    fn is_current(&self, slot: Slot, generation: u32) -> bool {
        matches!(
            self.table.get(slot as usize),
            Some(Some(f)) if f.generation == generation && f.waits()
        )
    }

    /// End every waiting flight that is due at `now`; returns their keys and endings.
    pub fn expire(&mut self, now: Millis) -> Vec<(FlightKey, Ending)> {
        let ended = self.expire_at_most(now, usize::MAX);
        ended
            .into_iter()
            .filter_map(|key| Some((key, self.ending(key)?)))
            .collect()
    }

    /// End at most `limit` of the flights due at `now`, earliest first, and return
    /// their keys (each one's ending is decided when it lands: [`Flights::land`]);
    /// the rest stay due, so [`Flights::next_due`] still reports them.
    pub fn expire_at_most(&mut self, now: Millis, limit: usize) -> Vec<FlightKey> {
        let horizon = micros(now + EARLY_MS);
        let mut ended = Vec::new();
        while let Some(&Reverse((due, slot, generation))) = self.heap.peek() {
            if due > horizon || ended.len() >= limit {
                break;
            }
            self.heap.pop();
            if !self.is_current(slot, generation) {
                continue;
            }
            if let Some(flight) = self.flight_mut(slot) {
                flight.stage = Stage::Expired;
                ended.push(FlightKey { slot, generation });
            }
        }
        ended
    }

    /// End every waiting flight of a guard as [`Ending::Disposed`]; returns their slots.
    pub fn abandon(&mut self, guard: u32) -> Vec<FlightKey> {
        let mut ended = Vec::new();
        for (slot, cell) in self.table.iter_mut().enumerate() {
            if let Some(flight) = cell {
                if flight.query.guard == guard && flight.waits() {
                    flight.stage = Stage::Disposed;
                    // The table is indexed by Slot, so every index fits one.
                    #[allow(clippy::cast_possible_truncation)]
                    ended.push(FlightKey {
                        slot: slot as Slot,
                        generation: flight.generation,
                    });
                }
            }
        }
        ended
    }

    /// How the guard ended the flight of `key`, while it is on the table: `None`
    /// while it waits, and for a key that is not (or no longer) there.
    pub fn ending(&self, key: FlightKey) -> Option<Ending> {
        match self.table.get(key.slot as usize) {
            Some(Some(f)) if f.generation == key.generation => f.ending(),
            _ => None,
        }
    }

    /// Take a flight off the table: its ending has been delivered, or it settled.
    pub fn land(&mut self, key: FlightKey) -> Option<Landed> {
        let flight = self.take(key)?;
        Some(Landed {
            query: flight.query,
            ending: flight.ending(),
        })
    }

    /// Take a flight the registry settled first off the table (its ending,
    /// `None` while it waits, is not read); `false` when it is not there.
    #[inline(always)]
    pub fn settle(&mut self, key: FlightKey) -> bool {
        self.take(key).is_some()
    }

    /// The flight of `key`, off the table: its slot freed, the heap kept bounded.
    #[inline(always)]
    fn take(&mut self, key: FlightKey) -> Option<Flight> {
        let slot = key.slot;
        let cell = self.table.get_mut(slot as usize)?;
        if cell.as_ref()?.generation != key.generation {
            return None;
        }
        let flight = cell.take()?;
        self.free.push(slot);
        self.live -= 1;
        if self.heap.len() > 64 && self.heap.len() > 4 * self.live {
            self.compact();
        }
        Some(flight)
    }

    /// Rebuild the heap once it holds more than 64 entries and more than four per
    /// live flight (checked by `take`): stale entries stay bounded, and
    /// compaction is amortised O(1).
    #[cold]
    #[inline(never)]
    fn compact(&mut self) {
        let table = &self.table;
        let heap = std::mem::take(&mut self.heap);
        self.heap = heap
            .into_iter()
            .filter(|Reverse((_, slot, generation))| {
                matches!(
                    table.get(*slot as usize),
                    Some(Some(f)) if f.generation == *generation && f.waits()
                )
            })
            .collect();
    }

    /// Heap entries held, live or stale (for tests of the compaction bound).
    #[cfg(test)]
    fn heap_len(&self) -> usize {
        self.heap.len()
    }
}

/// What the guard reads of an ended flight on the JavaScript side: its provider
/// and method names, its request id and the agent that asked (each `None` when
/// not a string).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlightText<'a> {
    /// The provider asked.
    pub provider: Option<&'a str>,
    /// The method asked.
    pub method: Option<&'a str>,
    /// The registry's request id.
    pub request_id: Option<&'a str>,
    /// The asking agent (its session).
    pub agent_id: Option<&'a str>,
}

/// A field's length in [`unpack_texts`]: not a string.
pub const NO_TEXT: i32 = -1;
/// A flight's first length in [`unpack_texts`], left as it was made: the flight is gone.
pub const GONE: i32 = -2;

/// The texts of a chunk of ended flights as `flightTexts` (flights.js) hands
/// them over, so that a chunk crosses once: the texts of every flight
/// concatenated in `packed`, and four lengths per flight in UTF-8 bytes, in
/// order provider, method, request id, agent ([`NO_TEXT`] for a field that is
/// not a string; [`GONE`] first for a flight that is gone). One item per
/// flight: `None` for one that is gone. A length that does not fit `packed`
/// reads as no text.
pub fn unpack_texts<'a>(
    packed: &'a str,
    lengths: &'a [i32],
) -> impl Iterator<Item = Option<FlightText<'a>>> + 'a {
    let mut offset: usize = 0;
    lengths.chunks_exact(4).map(move |lengths| {
        let &[provider, method, request_id, agent_id] = lengths else {
            return None;
        };
        if provider == GONE {
            return None;
        }
        let mut text = |length: i32| {
            let length = usize::try_from(length).ok()?;
            let text = packed.get(offset..offset.checked_add(length)?)?;
            offset += length;
            Some(text)
        };
        Some(FlightText {
            provider: text(provider),
            method: text(method),
            request_id: text(request_id),
            agent_id: text(agent_id),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts<'a>(packed: &'a str, lengths: &'a [i32]) -> Vec<Option<FlightText<'a>>> {
        unpack_texts(packed, lengths).collect()
    }

    fn text<'a>(
        provider: Option<&'a str>,
        method: Option<&'a str>,
        request_id: Option<&'a str>,
        agent_id: Option<&'a str>,
    ) -> Option<FlightText<'a>> {
        Some(FlightText {
            provider,
            method,
            request_id,
            agent_id,
        })
    }

    #[test]
    fn texts_unpack_by_utf8_length() {
        let got = texts(
            "Benchreadinspect-1agent-1",
            &[
                5, 4, 9, 7, GONE, 0, 0, 0, NO_TEXT, NO_TEXT, NO_TEXT, NO_TEXT,
            ],
        );
        let bench = text(
            Some("Bench"),
            Some("read"),
            Some("inspect-1"),
            Some("agent-1"),
        );
        assert_eq!(got, vec![bench, None, text(None, None, None, None)]);
        // An empty text, a four-byte and a two-byte character, and U+FFFD
        // (three bytes) where JavaScript had a lone surrogate.
        let got = texts("😀é\u{fffd}x", &[0, 4, 5, 1]);
        assert_eq!(
            got,
            vec![text(Some(""), Some("😀"), Some("é\u{fffd}"), Some("x"))]
        );
    }

    #[test]
    fn lengths_that_do_not_fit_read_as_no_text() {
        // Past the end, splitting a character, a length short of four: none panics.
        assert_eq!(
            texts("ab", &[3, 2, NO_TEXT, NO_TEXT]),
            vec![text(None, Some("ab"), None, None)]
        );
        assert_eq!(
            texts("😀", &[2, 4, NO_TEXT, -7]),
            vec![text(None, Some("😀"), None, None)]
        );
        // No text takes no bytes: the text after it starts where it would have.
        assert_eq!(
            texts("ab", &[NO_TEXT, 2, NO_TEXT, NO_TEXT]),
            vec![text(None, Some("ab"), None, None)]
        );
        assert_eq!(texts("ab", &[2, 1]), vec![]);
        assert_eq!(texts("", &[]), vec![]);
    }

    fn query(guard: u32, deadline_ms: u32, grace_ms: u32) -> Query {
        Query {
            guard,
            deadline_ms,
            grace_ms,
        }
    }

    fn page(reason: &str) -> Refusal {
        Refusal::Page {
            reason: reason.into(),
            message: format!("{reason} message"),
        }
    }

    #[test]
    fn a_flight_is_due_at_its_deadline_and_ends_once() {
        let mut f = Flights::new();
        let s = f.begin(query(1, 100, 10), 1000.0);
        assert_eq!(f.next_due(), Some(1100.0));
        assert!(f.expire(1098.0).is_empty(), "not due 2 ms early");
        assert_eq!(
            f.expire(1099.5),
            vec![(s, Ending::Deadline)],
            "due within a ms"
        );
        assert!(f.expire(5000.0).is_empty(), "ended flights never end twice");
        assert_eq!(f.next_due(), None);
        let landed = f.land(s).unwrap();
        assert_eq!(landed.ending, Some(Ending::Deadline));
        assert!(matches!(
            landed.error("Theme", "listTokens"),
            Some(Error::InspectDeadline {
                deadline_ms: 100,
                ..
            })
        ));
        assert!(f.land(s).is_none(), "lands once");
        assert!(f.is_empty());
    }

    #[test]
    fn a_settled_flight_never_expires() {
        let mut f = Flights::new();
        let s = f.begin(query(1, 100, 10), 0.0);
        let landed = f.land(s).unwrap();
        assert_eq!(landed.ending, None);
        assert_eq!(landed.error("Theme", "listTokens"), None);
        assert!(f.expire(1e9).is_empty());
        assert_eq!(f.next_due(), None);
    }

    #[test]
    fn settling_takes_a_waiting_flight_off_once() {
        let mut f = Flights::new();
        let s = f.begin(query(1, 100, 10), 0.0);
        let other = f.begin(query(1, 200, 10), 0.0);
        assert!(f.settle(s));
        assert!(!f.settle(s), "a second settle finds it gone");
        assert!(f.land(s).is_none() && !f.contains(s));
        assert_eq!(f.len(), 1);
        assert_eq!(f.next_due(), Some(200.0), "only the other flight is due");
        let reused = f.begin(query(1, 300, 10), 0.0);
        assert_eq!(reused.slot, s.slot);
        assert!(!f.settle(s), "a stale key settles nothing");
        assert!(f.contains(reused));
        assert_eq!(
            f.expire(1e9),
            vec![(other, Ending::Deadline), (reused, Ending::Deadline)]
        );
    }

    #[test]
    fn each_flight_keeps_its_own_refusal_as_others_land_or_settle() {
        let mut f = Flights::new();
        let keys: Vec<_> = (0..4)
            .map(|_| f.begin(query(1, 15_000, 1000), 0.0))
            .collect();
        for (i, &key) in keys.iter().enumerate() {
            assert_eq!(
                f.refuse(key, true, page(&format!("reason-{i}")), 10.0),
                RefusalEffect::First
            );
        }
        // The first refusal's place goes to the last one; then a valid answer
        // settles a refused flight within its grace.
        let ended = f.expire(1010.0);
        assert_eq!(ended.len(), 4);
        assert_eq!(
            f.land(keys[0]).unwrap().ending,
            Some(Ending::Refused(page("reason-0")))
        );
        assert!(f.settle(keys[2]));
        assert_eq!(
            f.land(keys[3]).unwrap().ending,
            Some(Ending::Refused(page("reason-3")))
        );
        assert_eq!(
            f.land(keys[1]).unwrap().ending,
            Some(Ending::Refused(page("reason-1")))
        );
        assert!(f.is_empty());
    }

    #[test]
    fn first_refusal_moves_the_due_time_to_the_grace() {
        let mut f = Flights::new();
        let s = f.begin(query(1, 15_000, 1000), 0.0);
        assert_eq!(
            f.refuse(s, true, page("provider-missing"), 200.0),
            RefusalEffect::First
        );
        assert_eq!(
            f.refuse(s, true, page("method-missing"), 300.0),
            RefusalEffect::Repeated
        );
        assert_eq!(f.next_due(), Some(1200.0));
        let ended = f.expire(1200.0);
        assert_eq!(
            ended,
            vec![(s, Ending::Refused(page("provider-missing")))],
            "first refusal kept"
        );
        let err = f.land(s).unwrap().error("Theme", "listTokens").unwrap();
        assert_eq!(err.code(), "INSPECT_CLIENT_REFUSED");
        assert!(err
            .to_string()
            .contains("provider-missing: provider-missing message"));
    }

    #[test]
    fn grace_never_extends_past_the_deadline() {
        let mut f = Flights::new();
        let s = f.begin(query(1, 1000, 1000), 0.0);
        f.refuse(s, true, page("provider-error"), 900.0);
        assert_eq!(f.next_due(), Some(1000.0));
        assert_eq!(
            f.expire(1000.0),
            vec![(s, Ending::Refused(page("provider-error")))]
        );
    }

    #[test]
    fn a_refusal_after_the_deadline_or_from_another_agent_is_ignored() {
        let mut f = Flights::new();
        let s = f.begin(query(1, 100, 10), 0.0);
        assert_eq!(
            f.refuse(s, false, page("x"), 1.0),
            RefusalEffect::Ignored,
            "another agent's page"
        );
        let unknown = FlightKey::from_f64(s.to_f64() + 1.0).unwrap();
        assert_eq!(
            f.refuse(unknown, true, page("x"), 1.0),
            RefusalEffect::Ignored
        );
        assert_eq!(f.expire(100.0), vec![(s, Ending::Deadline)]);
        assert_eq!(f.refuse(s, true, page("x"), 101.0), RefusalEffect::Ignored);
        f.land(s);
        assert_eq!(f.refuse(s, true, page("x"), 102.0), RefusalEffect::Ignored);
        assert!(f.waiting(s).is_none());
    }

    #[test]
    fn a_refusal_at_the_deadline_itself_is_the_reason_given() {
        let mut f = Flights::new();
        let s = f.begin(query(1, 100, 10), 0.0);
        assert_eq!(
            f.refuse(s, true, page("provider-missing"), 100.0),
            RefusalEffect::First
        );
        assert_eq!(
            f.expire(100.0),
            vec![(s, Ending::Refused(page("provider-missing")))]
        );
    }

    #[test]
    fn an_ending_belongs_to_its_own_generation_of_a_slot() {
        let mut f = Flights::new();
        let old = f.begin(query(1, 100, 10), 0.0);
        assert!(f.settle(old));
        let new = f.begin(query(1, 100, 10), 0.0);
        assert_eq!(new.slot, old.slot, "the slot is reused");
        assert_eq!(f.expire(100.0), vec![(new, Ending::Deadline)]);
        assert_eq!(f.ending(new), Some(Ending::Deadline));
        assert_eq!(f.ending(old), None, "a stale key names no ending");
    }

    #[test]
    fn a_valid_answer_within_the_grace_wins() {
        let mut f = Flights::new();
        let s = f.begin(query(1, 15_000, 1000), 0.0);
        f.refuse(s, true, Refusal::InvalidOutput { detail: None }, 10.0);
        let landed = f.land(s).unwrap();
        assert_eq!(
            landed.ending, None,
            "settled by the registry: no guard error"
        );
        assert!(f.expire(2000.0).is_empty());
    }

    #[test]
    fn disposal_ends_only_the_guards_own_waiting_flights() {
        let mut f = Flights::new();
        let a = f.begin(query(1, 100, 10), 0.0);
        let b = f.begin(query(2, 100, 10), 0.0);
        let c = f.begin(query(1, 50, 10), 0.0);
        assert_eq!(f.expire(50.0), vec![(c, Ending::Deadline)]);
        let mut ended = f.abandon(1);
        ended.sort_unstable();
        assert_eq!(ended, vec![a], "c already ended; b is another guard's");
        assert_eq!(f.land(a).unwrap().ending, Some(Ending::Disposed));
        assert_eq!(f.next_due(), Some(100.0), "b still waits");
        assert_eq!(f.expire(100.0), vec![(b, Ending::Deadline)]);
    }

    #[test]
    fn expiry_in_chunks_leaves_the_rest_due() {
        let mut f = Flights::new();
        let keys: Vec<_> = (0..5)
            .map(|i| f.begin(query(1, 100, 10), f64::from(i)))
            .collect();
        let first = f.expire_at_most(200.0, 2);
        assert_eq!(first, keys[..2].to_vec(), "earliest first");
        assert_eq!(f.next_due(), Some(102.0), "the rest are still due");
        assert_eq!(f.expire_at_most(200.0, 2).len(), 2);
        assert_eq!(f.expire_at_most(200.0, 2).len(), 1);
        assert!(f.expire_at_most(200.0, 2).is_empty());
        assert_eq!(f.next_due(), None);
    }

    #[test]
    fn earliest_deadline_first_across_different_deadlines() {
        let mut f = Flights::new();
        let slow = f.begin(query(1, 500, 10), 0.0);
        let fast = f.begin(query(2, 100, 10), 0.0);
        assert_eq!(f.next_due(), Some(100.0));
        assert_eq!(f.expire(100.0), vec![(fast, Ending::Deadline)]);
        assert_eq!(f.next_due(), Some(500.0));
        assert_eq!(f.expire(500.0), vec![(slow, Ending::Deadline)]);
    }

    #[test]
    fn slots_are_reused_and_stale_heap_entries_are_bounded() {
        let mut f = Flights::new();
        for i in 0..100_000 {
            let s = f.begin(query(1, 15_000, 1000), f64::from(i));
            if i % 2 == 0 {
                f.land(s);
            } else {
                f.settle(s);
            }
        }
        assert!(f.is_empty());
        assert!(
            f.heap_len() <= 65,
            "heap keeps {} stale entries",
            f.heap_len()
        );
        assert_eq!(f.table.len(), 1, "one slot reused throughout");
        assert_eq!(f.next_due(), None);
    }

    #[test]
    fn keys_round_trip_through_f64_and_stale_keys_do_nothing() {
        let mut f = Flights::new();
        let k1 = f.begin(query(1, 10, 5), 0.0);
        assert_eq!(FlightKey::from_f64(k1.to_f64()), Some(k1));
        f.land(k1);
        let k2 = f.begin(query(1, 10, 5), 0.0);
        assert_eq!(k1.slot, k2.slot);
        assert_ne!(k1, k2);
        assert!(f.land(k1).is_none(), "a stale key lands nothing");
        assert!(!f.contains(k1) && f.contains(k2));
        assert!(f.land(k2).is_some());
        for bad in [-1.0, 0.5, f64::NAN, f64::INFINITY, 1e300] {
            assert_eq!(FlightKey::from_f64(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_reused_slot_is_not_ended_by_its_previous_flights_entries() {
        let mut f = Flights::new();
        let s1 = f.begin(query(1, 10, 5), 0.0);
        f.land(s1);
        let s2 = f.begin(query(1, 1000, 5), 0.0);
        assert_eq!(s1.slot, s2.slot);
        assert!(
            f.expire(10.0).is_empty(),
            "the first flight's deadline is stale"
        );
        assert_eq!(f.expire(1000.0), vec![(s2, Ending::Deadline)]);
    }

    #[test]
    fn hostile_clock_values_do_not_panic() {
        let mut f = Flights::new();
        let s = f.begin(query(1, 1, 0), f64::NAN);
        assert_eq!(f.expire(f64::NAN).len(), 1);
        f.land(s);
        let s = f.begin(query(1, 1, 0), -5.0);
        assert_eq!(f.expire(0.0), vec![(s, Ending::Deadline)]);
    }

    #[test]
    fn a_reused_slot_gets_a_new_generation_each_time_and_every_key_round_trips() {
        let mut f = Flights::new();
        let _other = f.begin(query(1, 10, 5), 0.0);
        let mut seen = Vec::new();
        for _ in 0..4 {
            let k = f.begin(query(1, 10, 5), 0.0);
            assert_eq!(k.slot, 1, "the freed slot is reused");
            assert_eq!(
                FlightKey::from_f64(k.to_f64()),
                Some(k),
                "{k:?} round-trips"
            );
            assert!(!seen.contains(&k), "{k:?} names a new flight");
            seen.push(k);
            f.land(k);
        }
    }

    #[test]
    fn generations_stop_below_2_pow_20() {
        let largest = f64::from(GENERATION_MASK) * 4_294_967_296.0 + 7.0;
        assert_eq!(
            FlightKey::from_f64(largest),
            Some(FlightKey {
                slot: 7,
                generation: GENERATION_MASK
            })
        );
        assert_eq!(
            FlightKey::from_f64(f64::from(1u32 << 20) * 4_294_967_296.0),
            None
        );
        let mut f = Flights::new();
        f.generations.push(GENERATION_MASK);
        assert_eq!(f.bump(0), 0, "the generation wraps to 0");
    }

    #[test]
    fn len_counts_the_flights_in_the_table() {
        let mut f = Flights::new();
        assert!(f.is_empty());
        let a = f.begin(query(1, 10, 5), 0.0);
        let b = f.begin(query(1, 10, 5), 0.0);
        assert_eq!((f.len(), f.is_empty()), (2, false));
        f.land(a);
        assert_eq!(f.len(), 1);
        f.land(b);
        assert_eq!((f.len(), f.is_empty()), (0, true));
    }

    #[test]
    fn a_key_names_its_waiting_flight_only() {
        let mut f = Flights::new();
        let a = f.begin(query(7, 100, 5), 0.0);
        assert_eq!(f.waiting(a).copied(), Some(query(7, 100, 5)));
        // Ended by the guard but not landed yet: no longer waiting.
        assert_eq!(f.refuse(a, true, page("x"), 0.0), RefusalEffect::First);
        assert_eq!(f.expire(5.0), vec![(a, Ending::Refused(page("x")))]);
        assert!(f.waiting(a).is_none());
        assert!(f.contains(a), "ended, not landed");
        // Landed, and its slot reused by another flight.
        f.land(a);
        let b = f.begin(query(7, 100, 5), 0.0);
        assert_eq!(b.slot, a.slot);
        assert!(
            f.waiting(a).is_none(),
            "the old key does not name the new flight"
        );
        assert_eq!(
            f.refuse(a, true, page("x"), 0.0),
            RefusalEffect::Ignored,
            "nor can it refuse it"
        );
        assert!(f.waiting(b).is_some());
    }

    #[test]
    fn a_slot_of_the_table_stays_a_few_words() {
        // The refusal is boxed: unboxed, its two strings would more than double
        // every slot (32 bytes on wasm32, 40 here), waiting or not.
        let words = 3 * std::mem::size_of::<f64>() + 2 * std::mem::size_of::<usize>();
        assert!(std::mem::size_of::<Option<Flight>>() <= words);
    }

    #[test]
    fn endings_name_their_kind() {
        assert_eq!(Ending::Deadline.kind(), "deadline");
        assert_eq!(Ending::Refused(page("x")).kind(), "refused");
        assert_eq!(Ending::Disposed.kind(), "disposed");
    }

    #[test]
    fn stale_entries_under_a_waiting_flight_are_compacted() {
        // One flight due first stays on top of the heap, so peeking never drops
        // the stale entries that landed flights leave beneath it.
        let mut f = Flights::new();
        let first = f.begin(query(1, 10, 5), 0.0);
        for _ in 0..10_000 {
            let s = f.begin(query(1, 15_000, 5), 0.0);
            f.land(s);
            assert_eq!(f.next_due(), Some(10.0));
        }
        assert!(f.heap_len() <= 65, "heap keeps {} entries", f.heap_len());
        assert_eq!(f.expire(10.0), vec![(first, Ending::Deadline)]);
    }

    #[test]
    fn compaction_waits_until_stale_entries_dominate() {
        // Amortised O(1): no rebuild while the heap holds at most 64 entries, or
        // at most four per live flight.
        let churn = |f: &mut Flights, n: usize| {
            for _ in 0..n {
                let s = f.begin(query(1, 15_000, 5), 0.0);
                f.land(s);
            }
        };
        let mut f = Flights::new();
        let _first = f.begin(query(1, 10, 5), 0.0);
        churn(&mut f, 63);
        assert_eq!(f.heap_len(), 64, "no rebuild at 64 entries");
        churn(&mut f, 1);
        assert_eq!(
            f.heap_len(),
            1,
            "rebuilt past 64: only the live flight stays"
        );

        let mut f = Flights::new();
        for _ in 0..100 {
            f.begin(query(1, 10, 5), 0.0);
        }
        churn(&mut f, 300);
        assert_eq!(
            f.heap_len(),
            400,
            "no rebuild at four entries per live flight"
        );
        churn(&mut f, 1);
        assert_eq!(f.heap_len(), 100, "rebuilt past four per live flight");
    }
}
