//! The inspect guard on a live `CordisInspectRegistryService`.
//!
//! `query` is wrapped so that a `platform: "client"` call the registry makes wait
//! becomes a flight (see `patchQuery` in `flights.js`, which keeps the JavaScript
//! half of each flight by the key Rust gives it). The registry gets the caller's
//! own arguments, signal included, so cancellation is the registry's as without
//! the guard. When the guard ends a flight, the registry's pending entry is
//! settled the way its own abort path settles it: removed, its wait ended (which
//! takes the registry's listener off the caller's signal), and
//! `cordis/inspect-query-resolved` emitted once; the caller receives the guard's
//! coded error. Nothing of the query stays behind. What the guard relies on in
//! the registry: `query`, `resolveClientQuery`, the `pending` map of `{ request,
//! settle }` entries, `ctx.emit`, and the `cordis/inspect-query` announcement.
//!
//! `resolveClientQuery` is wrapped to refuse an unbound agent, and to remember
//! the first refusal (`ok: false`, or an answer failing validation) of a flight.
//!
//! The request id is learned from the registry's own `cordis/inspect-query`
//! event, which it emits synchronously inside `query` once the entry exists. It
//! stays on the JavaScript side with the flight, which finds a flight's key by
//! it: only numbers cross when a flight begins, settles or is refused. When the
//! guard ends flights, what their reports need crosses once per chunk.

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::{Array, Function};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::de::raw_config;
use super::fault;
use super::instance::{emit, emit_at, exclusive, shared, token, Instance, Role};
use super::js::{
    at, call, call_with, deliver, disposer_of, flight_texts, get, get_fn, get_string, hold, length,
    make_announcer, monotonic_now, object, open_mount, original_of, patch_query, patch_resolve,
    release, report_later, text_of, to_js,
};
use super::patch::PatchHandle;
use super::timer::DeadlineTimer;
use crate::config::{self, InspectConfig};
use crate::echo::escape;
use crate::error::{Error, Refusal};
use crate::flights::{unpack_texts, Ending, FlightKey, Flights, Query, RefusalEffect, GONE};
use crate::idmap::IdMap;
use crate::ledger::{InspectReport, Ledger};

/// Page text carried into an error is cut here: it goes to the model.
const MAX_PAGE_TEXT: u32 = 4096;

/// Where a guard's reports go, and what it asks the host.
pub(super) struct Sink {
    pub(super) ledger: Rc<RefCell<Ledger<InspectReport>>>,
    /// The warn logger, if any.
    pub(super) warn: Option<Function>,
    /// The programmatic install's `onReport`.
    pub(super) on_report: Option<Function>,
    /// `validateJsonSchemaValue(schema, value, path) → string[]` from `dsh-tools`, when installed.
    pub(super) validate: Option<Function>,
}

impl Sink {
    /// Record a report (the ledger, `onReport`) and log its warn line, `text(report)`,
    /// made only when the line is written (a burst of endings is mostly left out).
    /// `onReport` is called, like the line is logged, once the guard left wasm,
    /// after the endings were delivered (see `reportLater` in deferred.js).
    /// `now` is the monotonic clock's reading the warn-line bound counts by.
    fn report(&self, report: InspectReport, now: f64, text: &dyn Fn(&InspectReport) -> String) {
        if let Some(on_report) = &self.on_report {
            report_later(on_report, &to_js(&report));
        }
        if let Some(warn) = &self.warn {
            let session = report.session_id.as_deref().unwrap_or_default();
            emit_at(warn, session, now, &|| text(&report));
        }
        exclusive(&self.ledger, |ledger| ledger.push(report));
    }
}

struct Guard {
    config: InspectConfig,
    sink: Rc<Sink>,
    registry: JsValue,
    patches: Vec<PatchHandle>,
    unlisten: Option<Function>,
    warned_unannounced: bool,
    /// The mount record the patches and the listener belong to (see `supervisor.js`).
    owner: JsValue,
}

/// Inspect guards and the flights of all of them. (The JavaScript half of each
/// flight, its registry and names, its request and the error its caller gets,
/// stays in `flights.js` under the same key.)
struct State {
    guards: IdMap<Guard>,
    flights: Flights,
}

/// The inspect guards and their flights, and the one deadline timer beside the
/// flights that decide it (a cell of its own: Node's timer functions are called
/// while it is borrowed). One thread-local for both, so a client query's
/// `begin` and `settle` reach both through one access.
struct Inspect {
    state: RefCell<State>,
    timer: RefCell<DeadlineTimer>,
}

thread_local! {
    static INSPECT: Inspect = const {
        Inspect {
            state: RefCell::new(State {
                guards: IdMap::new(),
                flights: Flights::new(),
            }),
            timer: RefCell::new(DeadlineTimer::new()),
        }
    };
}

/// `f` on the inspect guards and their flights (see [`exclusive`]).
#[inline(always)]
fn state<R>(f: impl FnOnce(&mut State) -> R) -> R {
    INSPECT.with(|i| exclusive(&i.state, f))
}

/// `f` on the deadline timer (see [`exclusive`]).
#[inline(always)]
fn timer<R>(f: impl FnOnce(&mut DeadlineTimer) -> R) -> R {
    INSPECT.with(|i| exclusive(&i.timer, f))
}

impl State {
    /// The sink of a guard, while it is installed.
    fn sink(&self, guard: u32) -> Option<Rc<Sink>> {
        self.guards.get(guard).map(|g| g.sink.clone())
    }
}

/// What the reports of a flight still waiting need of its JavaScript half, read
/// as a chunk of endings reads them (`flightTexts`): its provider and method
/// (`""` for a name that is not a string) and the agent that asked; all empty
/// when the flight is gone.
fn texts_of(key: FlightKey) -> (String, String, Option<String>) {
    let mut lengths = [GONE; 4];
    let packed = flight_texts(&[key.to_f64()], &mut lengths);
    let Some(Some(text)) = unpack_texts(&packed, &lengths).next() else {
        return Default::default();
    };
    (
        text.provider.unwrap_or_default().to_owned(),
        text.method.unwrap_or_default().to_owned(),
        text.agent_id.map(str::to_owned),
    )
}

/// Install the guard on `registry` (the raw service or any cordis read of it),
/// listening for the registry's announcements through `on(event, listener)`, for
/// the mount record `owner`. `Ok(None)`: the registry is already guarded,
/// nothing was installed. Wrappers an earlier instance left are re-pointed.
pub(super) fn install(
    rt: &Instance,
    registry: &JsValue,
    config: InspectConfig,
    sink: Sink,
    on: &JsValue,
    owner: &JsValue,
) -> Result<Option<u32>, Error> {
    let raw = original_of(registry);
    let mut missing = Vec::new();
    if get_fn(&raw, "query").is_none() {
        missing.push("query()");
    }
    if get_fn(&raw, "resolveClientQuery").is_none() {
        missing.push("resolveClientQuery()");
    }
    if !get(&raw, "pending").is_some_and(|p| p.is_instance_of::<js_sys::Map>()) {
        missing.push("a pending-request map");
    }
    let on = on.dyn_ref::<Function>();
    if on.is_none() {
        missing.push("an event source (ctx.on)");
    }
    let (Some(on), true) = (on, missing.is_empty()) else {
        return Err(Error::HostShape {
            target: "cordisInspect",
            missing,
        });
    };
    let guard = rt.next_id();
    let mut patches = Vec::new();
    for (key, what) in [
        ("query", "a replaceable query()"),
        ("resolveClientQuery", "a replaceable resolveClientQuery()"),
    ] {
        let patch = || match key {
            // Only client queries need the guard; host queries never enter wasm.
            "query" => patch_query(&raw, owner, guard),
            _ => patch_resolve(
                &raw,
                owner,
                token(guard, Role::Unbound),
                token(guard, Role::Refused),
            ),
        };
        match PatchHandle::install(patch) {
            Ok(Some(patch)) => patches.push(patch),
            // Already guarded (a second install, or another copy): wrap nothing.
            Ok(None) => return Ok(None),
            Err(_) => {
                return Err(Error::HostShape {
                    target: "cordisInspect",
                    missing: vec![what],
                })
            }
        }
    }
    let listener = make_announcer();
    let unlisten = call_with(
        on,
        &JsValue::UNDEFINED,
        &[&"cordis/inspect-query".into(), &listener],
    )
    .ok()
    .and_then(|d| d.dyn_into::<Function>().ok());
    let Some(unlisten) = unlisten else {
        drop(patches);
        return Err(Error::HostShape {
            target: "cordisInspect",
            missing: vec!["a cordis/inspect-query event source"],
        });
    };
    hold(owner, &unlisten);
    let installed = Guard {
        config,
        sink: Rc::new(sink),
        registry: raw,
        patches,
        unlisten: Some(unlisten),
        warned_unannounced: false,
        owner: owner.clone(),
    };
    // A fresh id: nothing was under it (dropped after the borrow all the same).
    let replaced = state(|s| s.guards.insert(guard, installed));
    drop(replaced);
    Ok(Some(guard))
}

/// `installInspectClientGuard(registry, options)`: the guard without a plugin row.
/// Returns `dispose()`, which stays good across a recovery after a fault.
pub fn install_programmatic(
    registry: &JsValue,
    options: &JsValue,
    host: &JsValue,
) -> Result<Function, Error> {
    fault::check(fault::Point::Apply);
    config::parse_inspect_options(&raw_config(options))?;
    let raw = original_of(registry);
    let record = open_mount("inspect", &raw, options, host, &JsValue::UNDEFINED).map_err(|_| {
        Error::HostShape {
            target: "the programmatic install",
            missing: vec!["a record of the install"],
        }
    })?;
    super::instance::with(|rt| reinstall(rt, &record))?;
    Ok(disposer_of(&record))
}

/// Install (again) what the programmatic install `record` asked for.
pub(super) fn reinstall(rt: &Instance, record: &JsValue) -> Result<(), Error> {
    let raw = get(record, "registry").unwrap_or(JsValue::UNDEFINED);
    let options = get(record, "config").unwrap_or(JsValue::UNDEFINED);
    let host = get(record, "host").unwrap_or(JsValue::UNDEFINED);
    let config = config::parse_inspect_options(&raw_config(&options))?;
    let on = get(&raw, "ctx")
        .and_then(|ctx| get_fn(&ctx, "on").map(|on| bound(&on, &ctx)))
        .unwrap_or(JsValue::UNDEFINED);
    let sink = Sink {
        ledger: Rc::default(),
        warn: get_fn(&host, "warn"),
        on_report: get_fn(&options, "onReport"),
        validate: get_fn(&host, "validateJsonSchemaValue"),
    };
    let warn = sink.warn.clone();
    let guard = match install(rt, &raw, config, sink, &on, record) {
        Ok(installed) => installed.unwrap_or(0),
        // The registry is left untouched; the caller gets a disposer that does nothing.
        Err(error @ Error::HostShape { .. }) => {
            if let Some(warn) = &warn {
                let _ = warn.call1(
                    &JsValue::UNDEFINED,
                    &format!("inspect half not installed: {error}").into(),
                );
            }
            0
        }
        Err(error) => return Err(error),
    };
    let uninstall = rt.method(
        guard,
        Role::Uninstall,
        &JsValue::UNDEFINED,
        &JsValue::UNDEFINED,
        false,
    );
    hold(record, &uninstall);
    Ok(())
}

/// `on.bind(ctx)`.
fn bound(on: &Function, ctx: &JsValue) -> JsValue {
    on.bind0(ctx).into()
}

/// A client query's registry call (started at `started_at`) returned a promise,
/// and the registry is waiting for its request: begin its flight. `unannounced`:
/// the registry did not emit `cordis/inspect-query` (the request was found in its
/// pending entries); that is said once per guard, and only here, where a query
/// goes on waiting (a query refused before waiting never begins). Returns the
/// flight's key, or -1 to leave the query unguarded (the guard is gone: the
/// registry then settles it alone). Inlined down to the table and the timer,
/// as `settle` is: both run in V8's baseline tier, which pays for every call
/// (docs/ARCHITECTURE.md, "What keeps it cheap").
#[inline(always)]
pub(super) fn begin(guard: u32, started_at: f64, unannounced: bool) -> f64 {
    INSPECT.with(|i| {
        let begun = exclusive(&i.state, |state| {
            let g = state.guards.get_mut(guard)?;
            let query = Query {
                guard,
                deadline_ms: g.config.deadline_ms,
                grace_ms: g.config.refusal_grace_ms,
            };
            let first_unannounced =
                unannounced && !std::mem::replace(&mut g.warned_unannounced, true);
            let warn = first_unannounced.then(|| g.sink.warn.clone()).flatten();
            let key = state.flights.begin(query, started_at);
            let due = started_at + f64::from(query.deadline_ms);
            Some((key, warn, due, state.flights.len()))
        });
        let Some((key, warn, due, waiting)) = begun else {
            return -1.0;
        };
        if let Some(warn) = warn {
            warn_unannounced(&warn);
        }
        // The new flight is the one that may be due before the timer fires (any
        // other was armed for already); the first flight takes hold of the process.
        exclusive(&i.timer, |timer| {
            timer.arm(due, || started_at);
            if waiting == 1 {
                timer.hold(true);
            }
        });
        key.to_f64()
    })
}

/// Said once per guard, when a query goes on waiting unannounced (see [`begin`]).
#[cold]
#[inline(never)]
fn warn_unannounced(warn: &Function) {
    emit(
        warn,
        "",
        "the registry did not emit cordis/inspect-query while a client query went on waiting; \
         the guard found the request in the registry's pending entries instead",
    );
}

/// `resolveClientQuery(null, requestId, …)`: refused, instead of the registry's
/// `TypeError`. `args` is `[requestId, key]`, the key of the flight of that
/// request when one waits (else -1). Answers `undefined` when the guard is gone:
/// the wrapper then calls the registry as it was.
pub(super) fn unbound(guard: u32, args: &Array) -> JsValue {
    if !state(|s| s.guards.contains(guard)) {
        return JsValue::UNDEFINED;
    }
    let key = args.get(1).as_f64().and_then(FlightKey::from_f64);
    report_unbound(guard, args.get(0).as_string(), key);
    object(&[("accepted", &JsValue::FALSE)])
}

/// The registry refused an answer (`{ accepted: false }`, handed back unchanged)
/// to the request of a flight: remember it as the flight's first refusal when it
/// is a page's `ok: false`, or an answer that failed validation, from the asking
/// agent's session. `args` is `[key, fromAsker, resolution]`.
pub(super) fn refused(guard: u32, result: &JsValue, args: &Array) -> JsValue {
    let Some(key) = args.get(0).as_f64().and_then(FlightKey::from_f64) else {
        return result.clone();
    };
    if !state(|s| s.guards.contains(guard)) {
        return result.clone();
    }
    let from_asker = args.get(1).is_truthy();
    let resolution = args.get(2);
    let refusal = match get(&resolution, "ok") {
        Some(ok) if ok.is_truthy() => Refusal::InvalidOutput {
            detail: explain_invalid_output(key, &resolution),
        },
        _ => Refusal::Page {
            reason: get(&resolution, "reason")
                .map_or_else(String::new, |r| text_of(&r, MAX_PAGE_TEXT)),
            message: get(&resolution, "message")
                .map_or_else(String::new, |m| text_of(&m, MAX_PAGE_TEXT)),
        },
    };
    let now = monotonic_now();
    let effect = state(|state| state.flights.refuse(key, from_asker, refusal, now));
    if effect == RefusalEffect::First {
        rearm();
    }
    result.clone()
}

/// The host validator's account of why a waiting flight's answer was refused:
/// the violations of the method's `outputSchema`, as the registry words them.
fn explain_invalid_output(key: FlightKey, resolution: &JsValue) -> Option<String> {
    let (validate, registry) = state(|state| {
        let query = state.flights.waiting(key)?;
        let g = state.guards.get(query.guard)?;
        Some((g.sink.validate.clone()?, g.registry.clone()))
    })?;
    let (provider, method, _) = texts_of(key);
    let schema = output_schema(&registry, &provider, &method)?;
    let data = get(resolution, "data").unwrap_or(JsValue::UNDEFINED);
    let violations = call_with(
        &validate,
        &JsValue::UNDEFINED,
        &[&schema, &data, &"output".into()],
    )
    .ok()?;
    let count = length(&violations)?;
    let mut joined = String::new();
    for part in (0..count).filter_map(|i| at(&violations, i).as_string()) {
        if !joined.is_empty() {
            joined.push_str("; ");
        }
        joined.push_str(&part);
    }
    (!joined.is_empty()).then(|| text_of(&joined.into(), MAX_PAGE_TEXT))
}

/// The `outputSchema` of a client provider's method, from `registry.list()`.
fn output_schema(registry: &JsValue, provider: &str, method: &str) -> Option<JsValue> {
    let list = call(&get_fn(registry, "list")?, registry, &Array::new()).ok()?;
    let entry = (0..length(&list)?).map(|i| at(&list, i)).find(|p| {
        get_string(p, "platform").as_deref() == Some("client")
            && get_string(p, "id").as_deref() == Some(provider)
    })?;
    let methods = get(&entry, "methods")?;
    let found = (0..length(&methods)?)
        .map(|i| at(&methods, i))
        .find(|m| get_string(m, "name").as_deref() == Some(method))?;
    get(&found, "outputSchema")
}

fn report_unbound(guard: u32, request_id: Option<String>, key: Option<FlightKey>) {
    let found = state(|state| {
        let g = state.guards.get(guard)?;
        let waiting = key.filter(|k| state.flights.waiting(*k).is_some());
        Some((g.sink.clone(), g.config.deadline_ms, waiting))
    });
    let Some((sink, deadline_ms, waiting)) = found else {
        return;
    };
    let (provider_id, method_name, session_id) = waiting.map(texts_of).unwrap_or_default();
    let report = InspectReport {
        kind: "unbound-agent",
        request_id: request_id.unwrap_or_default(),
        session_id,
        provider_id,
        method_name,
        deadline_ms,
        at: js_sys::Date::now(),
        reason: None,
    };
    sink.report(report, monotonic_now(), &|report| {
        format!(
            "refused a page answer for {} without a bound agent (it would have thrown a TypeError)",
            describe(report)
        )
    });
}

/// A report's request, for a log line (escaped: ids and names come from the host and the page).
fn describe(report: &InspectReport) -> String {
    let session = report
        .session_id
        .as_deref()
        .map(|s| format!(" of session {}", escape(s)))
        .unwrap_or_default();
    if report.provider_id.is_empty() {
        format!("request {}{session}", escape(&report.request_id))
    } else {
        format!(
            "request {} ({}.{}){session}",
            escape(&report.request_id),
            escape(&report.provider_id),
            escape(&report.method_name)
        )
    }
}

/// A flight's registry promise settled before the guard ended it (the wrapper
/// passes the outcome on): take it off the table. The timer stays armed as it is
/// (a flight landing never makes the next one due sooner; a firing that finds
/// nothing due arms nothing), and lets the process go with the last flight.
#[inline(always)]
pub(super) fn settle(key: f64) {
    let Some(key) = FlightKey::from_f64(key) else {
        return;
    };
    INSPECT.with(|i| {
        let left = exclusive(&i.state, |s| s.flights.settle(key).then(|| s.flights.len()));
        // The last flight lets go of the process.
        if left == Some(0) {
            exclusive(&i.timer, |timer| timer.hold(false));
        }
    });
}

/// Flights ended per timer tick. When more are due, the timer is re-armed at once,
/// so callers' rejection handlers (and I/O) run between chunks instead of after
/// the whole batch.
const EXPIRY_CHUNK: usize = 128;

/// The deadline timer fired: end what is due (at most a chunk) and return the work
/// of delivering it (see [`end_flights`]), which the ticker performs in
/// JavaScript: the registry's abort path then runs with no wasm frame beneath it.
pub(super) fn tick() -> Array {
    // The fault build's `conflict` point: the tick finds the flight table
    // borrowed, as a re-entrant call would (a broken invariant: it traps).
    #[cfg(feature = "fault-injection")]
    if let Some(work) = INSPECT.with(|i| fault::conflict(&i.state).map(|_held| expire())) {
        return work;
    }
    expire()
}

/// End what is due (at most a chunk), re-arm, and return the work of delivering it.
fn expire() -> Array {
    fired();
    let now = monotonic_now();
    let ended = state(|s| s.flights.expire_at_most(now, EXPIRY_CHUNK));
    let work = end_flights(ended);
    rearm();
    hold_while_waiting();
    work
}

/// Land the guard's endings, build their errors and record their reports. Returns
/// the work of delivering them for `deliver` (flights.js): `[key, code, message,
/// …]` (a burst of endings of one query shape shares one code and one message
/// string). What the reports need of the flights crosses once for the whole
/// chunk (`flightTexts`, read by `unpack_texts`). Every flight landed here is
/// delivered, whether or not its guard is still installed (a guard disposed
/// meanwhile, by an `onReport` say, records nothing more, but its callers still
/// get their endings). (Kept out of line: the deadline timer and disposal both
/// call it.)
#[inline(never)]
fn end_flights(ended: Vec<FlightKey>) -> Array {
    let work = Array::new();
    if ended.is_empty() {
        return work;
    }
    let keys: Vec<f64> = ended.iter().map(|key| key.to_f64()).collect();
    let mut lengths = vec![GONE; 4 * keys.len()];
    let packed = flight_texts(&keys, &mut lengths);
    // A burst of endings of one query shape shares one: the last one made.
    let mut last: Option<(String, JsValue, JsValue)> = None;
    // One clock for the chunk: every report of it is made at the same moment.
    let (at, now) = (js_sys::Date::now(), monotonic_now());
    for ((key, &number), text) in ended
        .into_iter()
        .zip(&keys)
        .zip(unpack_texts(&packed, &lengths))
    {
        let Some((landed, sink)) = state(|s| {
            let landed = s.flights.land(key)?;
            let sink = s.sink(landed.query.guard);
            Some((landed, sink))
        }) else {
            // Off the table already: the registry settled it first.
            continue;
        };
        // Gone from the JavaScript side: nothing to deliver.
        let Some(text) = text else {
            continue;
        };
        // The fault build's `ending` point: a trap with the flight landed here and
        // not yet delivered (it stays in the JavaScript table, which a fault ends).
        #[cfg(feature = "fault-injection")]
        fault::check(fault::Point::Ending);
        let provider = text.provider.unwrap_or_default();
        let method = text.method.unwrap_or_default();
        // Keys handed here were ended by the guard; one that was not ends as disposed.
        let ending = landed.ending.unwrap_or(Ending::Disposed);
        let error = ending.error(&landed.query, provider, method);
        let code = error.code();
        let message = error.to_string();
        let (code_js, message_js) = match &last {
            Some((previous, code_js, message_js)) if *previous == message => {
                (code_js.clone(), message_js.clone())
            }
            _ => {
                let made = (JsValue::from_str(code), JsValue::from_str(&message));
                last = Some((message, made.0.clone(), made.1.clone()));
                made
            }
        };
        if let Some(sink) = sink {
            let report = InspectReport {
                kind: ending.kind(),
                request_id: text.request_id.unwrap_or_default().to_owned(),
                session_id: text.agent_id.map(str::to_owned),
                provider_id: provider.to_owned(),
                method_name: method.to_owned(),
                deadline_ms: landed.query.deadline_ms,
                at,
                reason: match &ending {
                    Ending::Refused(r) => Some(escape(r.reason()).into_owned()),
                    _ => None,
                },
            };
            sink.report(report, now, &|report| {
                let why = match &ending {
                    Ending::Deadline => format!("no page answered within {}ms", report.deadline_ms),
                    Ending::Refused(Refusal::Page { reason, message }) => {
                        format!("the page refused ({}: {})", escape(reason), escape(message))
                    }
                    Ending::Refused(r) => format!("the page refused ({})", r.reason()),
                    Ending::Disposed => "the guard was stopped while it waited".to_owned(),
                };
                format!(
                    "client inspect {} rejected with {code}: {why}",
                    describe(report)
                )
            });
        }
        work.push(&JsValue::from(number));
        work.push(&code_js);
        work.push(&message_js);
    }
    work
}

/// Arm the timer for the earliest due flight.
fn rearm() {
    arm(state(|s| s.flights.next_due()), monotonic_now);
}

/// Arm the deadline timer for `due` (ms on the monotonic clock; `now()` reads
/// it), when nothing set fires by then (see [`DeadlineTimer::arm`]).
fn arm(due: Option<f64>, now: impl FnOnce() -> f64) {
    if let Some(due) = due {
        timer(|timer| timer.arm(due, now));
    }
}

/// The rule for keeping the process alive: the deadline timer holds it
/// exactly while a guarded query waits, and lets it go with the last one, so a
/// process whose only work is a guarded query lives until its deadline, and one
/// whose queries all settled can exit.
fn hold_while_waiting() {
    let waiting = state(|s| !s.flights.is_empty());
    timer(|timer| timer.hold(waiting));
}

/// The timer fired: it is no longer set.
fn fired() {
    timer(DeadlineTimer::fired);
}

/// Clear the timer: a disposal left nothing waiting.
fn disarm() {
    timer(DeadlineTimer::clear);
}

/// Flights in the air, whether the deadline timer keeps the process alive (as
/// Node reports it), and whether it is set at all (between queries it stays set,
/// let go, until it fires once more and finds nothing due).
pub(super) fn in_flight() -> (usize, bool, bool) {
    let flights = state(|s| s.flights.len());
    let (held, set) =
        INSPECT.with(|i| shared(&i.timer, |timer| (timer.keeps_alive(), timer.is_set())));
    (flights, held, set)
}

/// Remove the guard: restore its methods, drop its listener, reject its flights.
/// Idempotent.
pub(super) fn dispose(guard: u32) {
    let ended = state(|s| s.flights.abandon(guard));
    // The endings are built while the guard's sink is still installed, and
    // delivered once its methods and listener are gone.
    let work = end_flights(ended);
    if let Some(mut g) = state(|s| s.guards.remove(guard)) {
        drop(std::mem::take(&mut g.patches));
        if let Some(unlisten) = g.unlisten.take() {
            let _ = unlisten.call0(&JsValue::UNDEFINED);
            release(&g.owner, &unlisten);
        }
    }
    deliver(&work);
    // Timers cleared on disposal: with nothing left waiting, the idle timer goes too.
    match state(|s| s.flights.next_due()) {
        Some(due) => arm(Some(due), monotonic_now),
        None => disarm(),
    }
    hold_while_waiting();
}

/// Whether a guard is installed (for the provider's status).
pub(super) fn config_of(guard: u32) -> Option<InspectConfig> {
    state(|s| s.guards.get(guard).map(|g| g.config))
}

/// Give a live guard a new config: queries that begin from now on get its
/// deadline and grace; a flight already waiting keeps its own.
pub(super) fn reconfigure(guard: u32, config: InspectConfig) {
    state(|s| {
        if let Some(g) = s.guards.get_mut(guard) {
            g.config = config;
        }
    });
}
