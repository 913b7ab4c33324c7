//! The inbox guard on live agents: `claim` wrapped, the pre-step entry, the durable-write observer.
//!
//! Four placements, each catching what the others cannot:
//! 1. every agent's `inbox.claim` is wrapped, so the batch is clean before any
//!    `agent/pre-step` listener runs, whatever their order;
//! 2. the guard's own pre-step entry repairs a batch claimed before the mount,
//!    in place (the loop's default result closes over that very array);
//! 3. the same entry sweeps the pending `nextStep`/`nextTurn` lists through the
//!    public `inbox.splice`;
//! 4. a `session/event` observer records each non-message at its durable write.
//!
//! A batch the host's own claim produced holds what the host's splice stored:
//! plain copies. Any other batch (another plugin's `claim` under ours, or one that
//! added to the batch after ours at the pre-step entry) may hold message-shaped
//! values the host cannot read as the guard did: those are judged by their plain
//! copy (see [`crate::inbox::judge_copy`]), and the copy is what the turn gets.

use std::borrow::Cow;
use std::cell::RefCell;
use std::rc::Rc;

use js_sys::{Array, Function, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::instance::{emit_at, exclusive, shared, token, Instance, Role};
use super::js::{
    at, call_with, drop_at, get, get_fn, get_string, hold, is_array, length, monotonic_now, object,
    patch_claim, plain_copy, release, render_head, render_head_at, repair_at, repair_message,
    safe_string, shape, shapes, stale_patches, to_index, vouched,
};
use super::patch::PatchHandle;
use crate::config::{InboxConfig, Mode};
use crate::echo::{escape, preview};
use crate::idmap::IdMap;
use crate::inbox::{
    classify, decide, judge_copy, repair_summary, Action, Class, Probe, MESSAGE_CODE,
};
use crate::ledger::{Ledger, Violation};
use crate::sightings::{Fingerprint, Seen, Sightings};

struct Guard {
    cx: Rc<Ctx>,
    patches: Vec<PatchHandle>,
    pruned_at: usize,
    unlisten: Vec<Function>,
}

/// Inbox guards by id.
struct State {
    guards: IdMap<Guard>,
}

thread_local! {
    /// The inbox guards.
    static STATE: RefCell<State> = const {
        RefCell::new(State {
            guards: IdMap::new(),
        })
    };
}

/// `f` on the inbox guards (see [`exclusive`]).
#[inline(always)]
fn state<R>(f: impl FnOnce(&mut State) -> R) -> R {
    STATE.with(|cell| exclusive(cell, f))
}

/// What one guard needs while it works; shared out (an `Rc`, no JS handle cloned per
/// call) so no borrow is held across JS calls.
struct Ctx {
    mode: Mode,
    preview_chars: u32,
    create_user_message: Function,
    warn: Option<Function>,
    ledger: Rc<RefCell<Ledger<Violation>>>,
    sightings: Rc<RefCell<Sightings>>,
    /// The mount record the guard's patches and listeners belong to (see `supervisor.js`).
    owner: JsValue,
    /// The repaired messages' sources, by value kind, as JavaScript objects
    /// (made once: built per repair they were a dozen crossings, or a string
    /// decoded and an object spread per repair).
    sources: RefCell<Vec<(&'static str, JsValue)>>,
}

impl Ctx {
    /// The `source` a repaired `probe` carries: [`crate::inbox::REPAIR_SOURCE`]
    /// and its summary. The host's `createUserMessage` copies its input, so one
    /// object serves every repair of a kind.
    fn source(&self, probe: &Probe) -> JsValue {
        let kind = probe.kind();
        let known = shared(&self.sources, |all| {
            all.iter().find(|(k, _)| *k == kind).map(|(_, s)| s.clone())
        });
        known.unwrap_or_else(|| {
            let summary = JsValue::from_str(&repair_summary(probe));
            let mut fields: Vec<(&str, JsValue)> = crate::inbox::REPAIR_SOURCE
                .iter()
                .map(|(key, value)| (*key, JsValue::from_str(value)))
                .collect();
            fields.push(("summary", summary));
            let made = object(&fields.iter().map(|(k, v)| (*k, v)).collect::<Vec<_>>());
            exclusive(&self.sources, |all| all.push((kind, made.clone())));
            made
        })
    }
}

/// The clock of one pass over a batch or a write, read once: every record of it
/// is made at the same moment.
#[derive(Clone, Copy)]
struct Clock {
    /// When, in ms since the epoch (a record's `at`).
    at: f64,
    /// The monotonic reading the warn-line bound counts by.
    now: f64,
}

impl Clock {
    fn read() -> Self {
        Clock {
            at: js_sys::Date::now(),
            now: monotonic_now(),
        }
    }
}

/// Where a guard's records go: the mount's ledger, and which of them are the same value.
pub(super) struct Records {
    pub(super) ledger: Rc<RefCell<Ledger<Violation>>>,
    pub(super) sightings: Rc<RefCell<Sightings>>,
}

fn ctx(guard: u32) -> Option<Rc<Ctx>> {
    state(|state| state.guards.get(guard).map(|g| g.cx.clone()))
}

/// Install the inbox guard, listening through `on(event, listener, options) → dispose`.
/// The claims of `owner`'s agents that an earlier instance wrapped are guarded
/// again at once (their wrappers re-pointed).
pub(super) fn install(
    rt: &Instance,
    config: InboxConfig,
    records: Records,
    on: &JsValue,
    create_user_message: Option<Function>,
    warn: Option<Function>,
    owner: &JsValue,
) -> Result<u32, crate::error::Error> {
    let (Some(on), Some(create_user_message)) = (on.dyn_ref::<Function>(), create_user_message)
    else {
        return Err(crate::error::Error::HostShape {
            target: "the inbox guard's host",
            missing: vec!["ctx.on", "createUserMessage (from @deepseek-ai/dsh-llm)"],
        });
    };
    let guard = rt.next_id();
    let guard_state = Guard {
        cx: Rc::new(Ctx {
            mode: config.mode,
            preview_chars: config.preview_chars,
            create_user_message,
            warn,
            ledger: records.ledger,
            sightings: records.sightings,
            owner: owner.clone(),
            sources: RefCell::default(),
        }),
        patches: Vec::new(),
        pruned_at: 0,
        unlisten: Vec::new(),
    };
    // A fresh id: nothing was under it (dropped after the borrow all the same).
    let replaced = state(|state| state.guards.insert(guard, guard_state));
    drop(replaced);
    let prepend = object(&[("prepend", &JsValue::TRUE)]);
    let mut unlisten = Vec::new();
    for (event, role, options) in [
        ("agent/created", Role::Created, JsValue::UNDEFINED),
        ("agent/pre-step", Role::PreStep, prepend),
        ("session/event", Role::SessionEvent, JsValue::UNDEFINED),
    ] {
        let listener = match role {
            // Only inbox writes that inserted something concern the guard.
            Role::SessionEvent => rt.insert_observer(guard),
            Role::PreStep => rt.pre_step(guard),
            _ => rt.listener(guard, role),
        };
        match call_with(
            on,
            &JsValue::UNDEFINED,
            &[&event.into(), &listener, &options],
        ) {
            Ok(d) => {
                hold(owner, &d);
                unlisten.extend(d.dyn_into::<Function>().ok());
            }
            Err(_) => {
                for d in unlisten {
                    let _ = d.call0(&JsValue::UNDEFINED);
                }
                let removed = state(|state| state.guards.remove(guard));
                drop(removed);
                return Err(crate::error::Error::HostShape {
                    target: "the inbox guard's host",
                    missing: vec![
                        "an event source accepting agent/created, agent/pre-step, session/event",
                    ],
                });
            }
        }
    }
    state(|state| {
        if let Some(g) = state.guards.get_mut(guard) {
            g.unlisten = unlisten;
        }
    });
    for inbox in stale_patches(owner, "claim").iter() {
        wrap(guard, &inbox);
    }
    Ok(guard)
}

/// Remove the guard: restore every wrapped `claim`, drop its listeners.
pub(super) fn dispose(guard: u32) {
    let removed = state(|s| s.guards.remove(guard));
    if let Some(g) = removed {
        for d in &g.unlisten {
            let _ = d.call0(&JsValue::UNDEFINED);
            release(&g.cx.owner, d);
        }
        drop(g);
    }
}

/// The handles of collected inboxes are dropped once a guard's list has doubled
/// since the last pruning and holds more than twice this many: a few dead
/// handles at most, and pruning stays amortised O(1) per wrapped inbox.
const PRUNE_FLOOR: usize = 8;

/// Wrap `inbox.claim` if no live harness-guard wrapper is there yet (one an
/// earlier instance left is re-pointed to this guard).
fn wrap(guard: u32, inbox: &JsValue) {
    if !inbox.is_object() {
        return;
    }
    let Some(owner) = ctx(guard).map(|cx| cx.owner.clone()) else {
        return;
    };
    let Ok(Some(patch)) =
        PatchHandle::install(|| patch_claim(inbox, &owner, token(guard, Role::Claim)))
    else {
        return;
    };
    // Handles are dropped after the borrow: dropping one restores its slot, a call
    // into JavaScript (a handle of a collected inbox restores nothing, but the rule holds).
    let dropped = state(|state| {
        let Some(g) = state.guards.get_mut(guard) else {
            // The guard went away meanwhile: this patch is undone at once.
            return vec![patch];
        };
        g.patches.push(patch);
        if g.patches.len() <= 2 * g.pruned_at.max(PRUNE_FLOOR) {
            return Vec::new();
        }
        let (live, dead): (Vec<_>, Vec<_>) = std::mem::take(&mut g.patches)
            .into_iter()
            .partition(PatchHandle::is_alive);
        g.patches = live;
        g.pruned_at = g.patches.len();
        dead
    });
    drop(dropped);
}

/// `agent/created`: wrap the new agent's inbox. Never throws (a throw would veto the agent).
pub(super) fn created(guard: u32, payload: &JsValue) {
    if let Some(inbox) = get(payload, "agent").and_then(|a| get(&a, "inbox")) {
        wrap(guard, &inbox);
    }
}

/// A claimed batch that needs the guard, as the claim wrapper hands it over
/// (`enterClaim` in claims.js): numbers and one string, no other crossing.
pub(super) struct Claimed {
    /// The batch the host's claim returned; sanitized in place.
    pub(super) batch: JsValue,
    /// `nextStep.length` before the claim: entries before it came from `next-step`.
    pub(super) split: Option<u32>,
    /// `nextTurn.length` after the claim.
    pub(super) next_turn: u32,
    /// The entries' shape codes, as the wrapper read them.
    pub(super) codes: Codes,
    /// Something other than the host's durable log produced the batch (another
    /// plugin's claim, or an entry placed on the live list with no logged write):
    /// its message-shaped entries are judged by their plain copies.
    pub(super) foreign: bool,
    /// The claim was for a turn (`next-turn`).
    pub(super) for_turn: bool,
    /// The inbox's session, when it has one.
    pub(super) session: Option<String>,
}

/// The flags a claim wrapper hands over with a batch (`enterClaim` in claims.js),
/// and the observer with an inserted list (`enterObserved` in trampolines.js);
/// both get them in `configure` as `K.inboxFlags`.
pub(super) mod flag {
    /// Something other than the host's durable log produced the batch (another
    /// plugin's claim, or an entry placed on the live list with no logged write):
    /// its message-shaped entries are judged by their plain copies.
    pub(in crate::interop) const FOREIGN: u32 = 1;
    /// The claim was for a turn (`next-turn`).
    pub(in crate::interop) const FOR_TURN: u32 = 2;
    /// The wrapper could not read the entries' shape codes.
    pub(in crate::interop) const UNREAD: u32 = 4;
    /// Every entry has `MESSAGE_CODE` (no codes handed over).
    pub(in crate::interop) const CLEAN: u32 = 8;
    /// The observed write's `seq` is a number (handed over in the place of `nextTurn`).
    pub(in crate::interop) const SEQ: u32 = 16;
}

/// How `repairAt` (edits.js) left a batch entry; handed over in `configure` as `K.repair`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Repair {
    /// The host made no usable message: the entry is dropped instead.
    Unmade = 0,
    /// The batch refused the message (a frozen array): the entry stays, observed.
    Refused = 1,
    /// The entry is the repaired message.
    Repaired = 2,
}

/// The shape codes of a claimed batch.
pub(super) enum Codes {
    /// Every entry has `MESSAGE_CODE`.
    Clean,
    /// The wrapper could not read them: read them again, defensively.
    Unread,
    /// One code per entry.
    Read(Vec<u32>),
}

impl Codes {
    /// From the wrapper's `codes` and `flags` ([`flag::UNREAD`], [`flag::CLEAN`]).
    pub(super) fn of(codes: Vec<u32>, flags: u32) -> Self {
        if flags & flag::CLEAN != 0 {
            Codes::Clean
        } else if flags & flag::UNREAD != 0 {
            Codes::Unread
        } else {
            Codes::Read(codes)
        }
    }
}

/// The wrapped `inbox.claim(target, turn)`, for a batch that holds something other
/// than usable messages, or that something other than the host's own claim
/// produced (the wrapper returns the host's clean batches itself). Returns
/// whether the wrapper should claim again.
///
/// When the guard drops every entry of a turn's batch while more turns are
/// queued, the wrapper claims the next queued prompt for this turn: an emptied
/// turn would otherwise end `completed` without looking at the queue, stranding
/// it until something else wakes the agent.
pub(super) fn claim(guard: u32, claimed: Claimed) -> bool {
    let Some(cx) = ctx(guard) else {
        return false;
    };
    let batch = &claimed.batch;
    let (split, for_turn, next_turn) = (claimed.split, claimed.for_turn, claimed.next_turn);
    let codes = match claimed.codes {
        Codes::Read(codes) => codes,
        Codes::Clean => vec![MESSAGE_CODE; length(batch).unwrap_or(0) as usize],
        Codes::Unread => shapes(batch),
    };
    let before = codes.len();
    let session = Session::Known(claimed.session);
    let split = split.unwrap_or(u32::MAX);
    let left = sanitize_batch(
        &cx,
        batch,
        codes,
        claimed.foreign,
        &session,
        Sighted::ByClaim,
        |i| {
            Some(Cow::Borrowed(if i < split {
                "next-step"
            } else {
                "next-turn"
            }))
        },
    );
    before > 0 && left == 0 && for_turn && next_turn > 0
}

/// The guard's `agent/pre-step` entry (registered `prepend`); the wrapper calls `next()` after it.
pub(super) fn pre_step(guard: u32, event: &JsValue) {
    if let Some(cx) = ctx(guard) {
        let inbox = get(event, "agent").and_then(|a| get(&a, "inbox"));
        if let Some(inbox) = &inbox {
            wrap(guard, inbox);
        }
        let none = JsValue::UNDEFINED;
        let session = Session::of(inbox.as_ref().unwrap_or(&none));
        if let Some(messages) = get(event, "messages").filter(|m| is_array(m) == Some(true)) {
            // A batch some claim wrapper of ours returned was judged whole already;
            // anything else (claimed before the mount, or added to after our claim)
            // has its message-shaped entries judged by their plain copies.
            let deep = !inbox
                .as_ref()
                .is_some_and(|inbox| vouched(inbox, &messages));
            let codes = shapes(&messages);
            sanitize_batch(
                &cx,
                &messages,
                codes,
                deep,
                &session,
                Sighted::AtEntry,
                |_| None,
            );
        }
        if let Some(inbox) = &inbox {
            sweep_pending(&cx, inbox, &session);
        }
    }
}

/// An inbox write's inserted list that holds something other than usable
/// messages, as the `session/event` observer hands it over (`enterObserved` in
/// trampolines.js): numbers and two strings, no other crossing.
pub(super) struct Inserted {
    /// The list the write inserted (`data.inserted`).
    pub(super) list: JsValue,
    /// The entries' shape codes, every entry coded (`shapes` in shapes.js).
    pub(super) codes: Vec<u32>,
    /// Where in the pending list the write inserted (`data.start`; 0 when not a number).
    pub(super) start: f64,
    /// The write's log sequence number (`event.seq`), when it is a number.
    pub(super) seq: Option<f64>,
    /// The pending list written (`data.target`), when it is a string.
    pub(super) target: Option<String>,
    /// The session's id, when it has one.
    pub(super) session: Option<String>,
}

/// `session/event` for an `agent/inbox/spliced` write that inserted something
/// other than usable messages: record each non-message it inserted.
pub(super) fn session_event(guard: u32, inserted: Inserted) {
    let Some(cx) = ctx(guard) else {
        return;
    };
    let list = &inserted.list;
    let session_id = inserted.session.as_deref().unwrap_or_default();
    let mut clock = None;
    for (i, code) in indexed(&inserted.codes) {
        let probe = Probe::from_code(code);
        if classify(&probe) == Class::Message {
            continue;
        }
        let (head, longer) = render_head_at(list, i, cx.preview_chars);
        let rendered = Rendered { head, longer };
        let sighting = exclusive(&cx.sightings, |t| {
            t.written(session_id, rendered.fingerprint(&probe))
        });
        let clock = *clock.get_or_insert_with(Clock::read);
        record(
            &cx,
            clock,
            rendered,
            &probe,
            Action::Observe,
            Place {
                origin: "durable",
                session_id: inserted.session.clone(),
                seq: inserted.seq,
                target: inserted.target.clone().map(Cow::Owned),
                index: to_index(inserted.start + f64::from(i)),
            },
            sighting,
        );
    }
}

/// Shape codes with their indices (a batch never holds more than u32::MAX entries).
fn indexed(codes: &[u32]) -> impl DoubleEndedIterator<Item = (u32, u32)> + '_ {
    let len = u32::try_from(codes.len()).unwrap_or(u32::MAX);
    (0..len).zip(codes.iter().copied())
}

/// An inbox's session id: handed over, or read off the inbox only once
/// something needs recording.
enum Session<'a> {
    Known(Option<String>),
    Of(&'a JsValue, std::cell::OnceCell<Option<String>>),
}

impl<'a> Session<'a> {
    fn of(inbox: &'a JsValue) -> Self {
        Session::Of(inbox, std::cell::OnceCell::new())
    }

    /// The id, borrowed: each record copies it once, and nothing else does.
    fn id(&self) -> Option<&str> {
        match self {
            Session::Known(id) => id.as_deref(),
            Session::Of(inbox, id) => id
                .get_or_init(|| get(inbox, "session").and_then(|s| get_string(&s, "id")))
                .as_deref(),
        }
    }
}

/// Where a violation was found.
struct Place {
    origin: &'static str,
    session_id: Option<String>,
    seq: Option<f64>,
    target: Option<Cow<'static, str>>,
    index: u32,
}

/// Where a claimed batch is seen: by the claim wrapper, or at the pre-step entry.
#[derive(Clone, Copy)]
enum Sighted {
    ByClaim,
    AtEntry,
}

/// What a batch entry is: by its shape code, and, for a message-shaped entry of a
/// batch not known to be the host's own (`deep`), by its plain copy. Returns the
/// class, and the copy to hand on in the entry's place when it is a usable one.
fn judge(value: &JsValue, probe: &Probe, deep: bool) -> (Class, Option<JsValue>) {
    let class = classify(probe);
    if class != Class::Message || !deep {
        return (class, None);
    }
    let copy = plain_copy(value);
    let copy_probe = (!copy.is_undefined()).then(|| Probe::from_code(shape(&copy)));
    match judge_copy(copy_probe.as_ref()) {
        Class::Message => (Class::Message, Some(copy)),
        other => (other, None),
    }
}

/// Sanitize a batch in place (backwards, so indices stay valid); records keep
/// batch order. An entry the batch will not let go of (a frozen array) is
/// recorded as observed. Returns the entries left.
fn sanitize_batch(
    cx: &Ctx,
    batch: &JsValue,
    codes: Vec<u32>,
    deep: bool,
    session: &Session<'_>,
    sighted: Sighted,
    target_of: impl Fn(u32) -> Option<Cow<'static, str>>,
) -> usize {
    let mut left = codes.len();
    let mut found = Vec::new();
    for (i, code) in indexed(&codes).rev() {
        if !deep && code == MESSAGE_CODE {
            continue;
        }
        let probe = Probe::from_code(code);
        // Only a message-shaped entry of a batch not known to be the host's own
        // is read as a value here (for its plain copy); the rest is done by index.
        let (class, copy) = if deep {
            judge(&at(batch, i), &probe, true)
        } else {
            (classify(&probe), None)
        };
        let action = decide(cx.mode, class);
        if action == Action::Keep {
            if let Some(copy) = copy.filter(|_| cx.mode != Mode::Report) {
                // The detached copy the guard judged: later reads cannot disagree.
                let _ = Reflect::set_u32(batch, i, &copy);
            }
            continue;
        }
        let (head, longer) = render_head_at(batch, i, cx.preview_chars);
        let action = match action {
            Action::Repair => {
                let outcome = repair_at(batch, i, &cx.create_user_message, &cx.source(&probe));
                if outcome == Repair::Repaired as u32 {
                    Action::Repair
                } else if outcome == Repair::Refused as u32 {
                    Action::Observe
                } else {
                    remove(batch, i)
                }
            }
            Action::Drop => remove(batch, i),
            other => other,
        };
        if action == Action::Drop {
            left -= 1;
        }
        found.push((i, Rendered { head, longer }, probe, action));
    }
    if found.is_empty() {
        return left;
    }
    found.reverse();
    let session_id = session.id();
    let fps: Vec<Fingerprint> = found
        .iter()
        .map(|(_, rendered, probe, _)| rendered.fingerprint(probe))
        .collect();
    let clock = Clock::read();
    let seen = exclusive(&cx.sightings, |t| {
        t.claimed(
            session_id.unwrap_or_default(),
            &fps,
            matches!(sighted, Sighted::ByClaim),
        )
    });
    for ((i, rendered, probe, action), sighting) in found.into_iter().zip(seen) {
        record(
            cx,
            clock,
            rendered,
            &probe,
            action,
            Place {
                origin: "claimed",
                session_id: session_id.map(str::to_owned),
                seq: None,
                target: target_of(i),
                index: i,
            },
            sighting,
        );
    }
    left
}

/// Remove `batch[i]` in place: a drop, or an observation when the batch refuses.
fn remove(batch: &JsValue, i: u32) -> Action {
    if drop_at(batch, i) {
        Action::Drop
    } else {
        Action::Observe
    }
}

/// Repair or drop bad entries of both pending lists through `inbox.splice`.
fn sweep_pending(cx: &Ctx, inbox: &JsValue, session: &Session<'_>) {
    let Some(splice) = get_fn(inbox, "splice") else {
        return;
    };
    let mut found = Vec::new();
    for (target, key) in [("next-step", "nextStep"), ("next-turn", "nextTurn")] {
        let Some(list) = get(inbox, key).filter(|l| is_array(l) == Some(true)) else {
            continue;
        };
        for (i, code) in indexed(&shapes(&list)).rev() {
            let probe = Probe::from_code(code);
            let mut action = decide(cx.mode, classify(&probe));
            if action == Action::Keep {
                continue;
            }
            let value = at(&list, i);
            let replacement = match action {
                Action::Keep => None,
                Action::Observe => None,
                Action::Repair => match repaired(cx, &value, &probe) {
                    Some(message) => Some(Array::of1(&message)),
                    None => {
                        action = Action::Drop;
                        Some(Array::new())
                    }
                },
                Action::Drop => Some(Array::new()),
            };
            if let Some(inserted) = replacement {
                let args = Array::of4(&target.into(), &i.into(), &1.into(), &inserted);
                if let Err(error) = splice.apply(inbox, &args) {
                    let session_id = session.id().unwrap_or_default();
                    let text = format!(
                        "could not fix pending inbox entry {target}[{i}] of session {}: {}",
                        label(session_id),
                        escape(&safe_string(&error))
                    );
                    warn(cx, session_id, &text);
                    action = Action::Observe;
                }
            }
            found.push((target, i, Rendered::of(cx, &value), probe, action));
        }
    }
    // Every bad value pending now is known here, even when none is (values that
    // left the lists some other way are forgotten).
    let session_id = session.id();
    let fps: Vec<(Fingerprint, bool)> = found
        .iter()
        .map(|(_, _, rendered, probe, action)| {
            (rendered.fingerprint(probe), *action == Action::Observe)
        })
        .collect();
    let clock = Clock::read();
    let seen = exclusive(&cx.sightings, |t| {
        t.swept(session_id.unwrap_or_default(), &fps)
    });
    for ((target, i, rendered, probe, action), sighting) in found.into_iter().zip(seen) {
        record(
            cx,
            clock,
            rendered,
            &probe,
            action,
            Place {
                origin: "pending",
                session_id: session_id.map(str::to_owned),
                seq: None,
                target: Some(Cow::Borrowed(target)),
                index: i,
            },
            sighting,
        );
    }
}

/// The head of a value's rendering, what its preview is cut from (read once per sighting).
struct Rendered {
    head: String,
    longer: bool,
}

impl Rendered {
    fn of(cx: &Ctx, value: &JsValue) -> Self {
        let (head, longer) = render_head(value, cx.preview_chars);
        Self { head, longer }
    }

    /// What tells the value apart from others of its session: its kind and its head.
    fn fingerprint(&self, probe: &Probe) -> Fingerprint {
        crate::sightings::hash(&[
            probe.kind().as_bytes(),
            &[u8::from(self.longer)],
            self.head.as_bytes(),
        ])
    }
}

/// The user message a scalar becomes, made by the host's `createUserMessage`
/// from `{ content: [{ type: 'text', text }], source }` (`source` is
/// [`crate::inbox::REPAIR_SOURCE`] with `summary`), with `text` the value's
/// `String()` verbatim; `None` if the host refused to make a usable one. The
/// input is put together on the JavaScript side (`repairMessage`): one crossing
/// instead of a dozen.
fn repaired(cx: &Ctx, value: &JsValue, probe: &Probe) -> Option<JsValue> {
    let message = repair_message(&cx.create_user_message, value, &cx.source(probe));
    (classify(&Probe::from_code(shape(&message))) == Class::Message).then_some(message)
}

/// A session id for a log line: escaped, `?` when unknown.
fn label(session_id: &str) -> std::borrow::Cow<'_, str> {
    if session_id.is_empty() {
        "?".into()
    } else {
        escape(session_id)
    }
}

/// Record one sighting of a bad value (`sighting` says which value it is).
fn record(
    cx: &Ctx,
    clock: Clock,
    rendered: Rendered,
    probe: &Probe,
    action: Action,
    place: Place,
    sighting: Seen,
) {
    let Some(action_name) = action.recorded() else {
        return;
    };
    let Rendered { head, longer } = rendered;
    let violation = Violation {
        at: clock.at,
        origin: place.origin,
        session_id: place.session_id,
        seq: place.seq,
        target: place.target,
        index: place.index,
        value_kind: probe.kind(),
        preview: preview(head, longer, cx.preview_chars),
        action: action_name,
        value_id: sighting.id(),
        repeat: !sighting.is_new(),
    };
    let text = || {
        format!(
            "{} inbox entry in session {} ({}): {} “{}” {}",
            match place.origin {
                "durable" => "durable write of a non-message",
                "pending" => "pending non-message",
                _ => "claimed non-message",
            },
            label(violation.session_id.as_deref().unwrap_or_default()),
            match (place.origin, violation.seq, &violation.target) {
                ("durable", Some(seq), Some(t)) => format!(
                    "log seq {}, {}[{}]",
                    crate::config::render_number(seq),
                    escape(t),
                    violation.index
                ),
                (_, _, Some(t)) => format!("{}[{}]", escape(t), violation.index),
                _ => format!("claimed position {}", violation.index),
            },
            violation.value_kind,
            violation.preview,
            match (action, place.origin, cx.mode) {
                (Action::Repair, ..) => "repaired into a user message",
                (Action::Drop, ..) => "dropped (quarantined)",
                // The write is committed history: the guard acts when the entry is claimed.
                (_, "durable", Mode::Repair | Mode::Quarantine) => {
                    "recorded (observed); it is repaired or dropped when the agent claims it"
                }
                _ => "left as it is (observed)",
            }
        )
    };
    let session_id = violation.session_id.as_deref().unwrap_or_default();
    warn_with(cx, clock, session_id, &text);
    exclusive(&cx.ledger, |ledger| ledger.push(violation));
}

/// Log a warn line about `session_id` once the guard returns to JavaScript,
/// within the per-session bound.
fn warn(cx: &Ctx, session_id: &str, text: &str) {
    warn_with(cx, Clock::read(), session_id, &|| text.to_owned());
}

/// [`warn`], the line made only when it is written.
fn warn_with(cx: &Ctx, clock: Clock, session_id: &str, text: &dyn Fn() -> String) {
    if let Some(w) = &cx.warn {
        emit_at(w, session_id, clock.now, text);
    }
}

/// Give a live guard a new mode and preview length, from its next claim on
/// (its wrappers, listeners and records stay).
pub(super) fn reconfigure(guard: u32, config: InboxConfig) {
    let Some(cx) = ctx(guard) else {
        return;
    };
    let next = Rc::new(Ctx {
        mode: config.mode,
        preview_chars: config.preview_chars,
        create_user_message: cx.create_user_message.clone(),
        warn: cx.warn.clone(),
        ledger: cx.ledger.clone(),
        sightings: cx.sightings.clone(),
        owner: cx.owner.clone(),
        sources: RefCell::default(),
    });
    state(|s| {
        if let Some(g) = s.guards.get_mut(guard) {
            g.cx = next;
        }
    });
}
