//! The inspect guard on a live `CordisInspectRegistryService`.
//!
//! `query` is wrapped so that a `platform: "client"` call runs with a signal
//! derived from the caller's (`AbortSignal.any([caller, own])`). When the guard
//! ends a flight it aborts its own controller: the registry's abort path then
//! removes the pending entry, emits `cordis/inspect-query-resolved` once and
//! settles its wait, and the caller receives the guard's coded error. Nothing
//! of the query stays behind, and the caller's signal carries no listener of ours.
//!
//! `resolveClientQuery` is wrapped to refuse an unbound agent, and to remember
//! the first refusal (`ok: false`, or an answer failing validation) of a flight.
//!
//! The request id is learned from the registry's own `cordis/inspect-query`
//! event, which it emits synchronously inside `query` once the entry exists.

use std::rc::Rc;

use js_sys::{Array, Function, Object, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::patch::PatchHandle;
use super::runtime::{forward, Installation, Role, Runtime};
use super::{
    derive_signal, get, get_fn, get_string, monotonic_now, original_of, text_of, to_js_error,
    AbortController,
};
use crate::config::InspectConfig;
use crate::error::{Error, Refusal};
use crate::flights::{Ending, FlightKey, Flights, Landed, Query, RefusalEffect};
use crate::ledger::{InspectReport, Ledger};

/// Page text carried into an error is cut here: it goes to the model.
const MAX_PAGE_TEXT: u32 = 4096;

/// Where a guard's reports go.
pub(crate) struct Sink {
    ledger: Rc<std::cell::RefCell<Ledger<InspectReport>>>,
    warn: Option<Function>,
    on_report: Option<Function>,
    /// `(providerId, methodName, data) → string | undefined`: the host validator's violations.
    explain: Option<Function>,
}

impl Sink {
    /// Record a report (the ledger, `onReport`); the warn line is the caller's to log.
    fn record(&self, report: InspectReport) {
        if let Some(on_report) = &self.on_report {
            let _ = on_report.call1(&JsValue::UNDEFINED, &super::to_js(&report));
        }
        if let Ok(mut ledger) = self.ledger.try_borrow_mut() {
            ledger.push(report);
        }
    }

    /// Record a report and log its warn line.
    fn report(&self, report: InspectReport, text: &str) {
        self.record(report);
        if let Some(warn) = &self.warn {
            let _ = warn.call1(&JsValue::UNDEFINED, &JsValue::from_str(text));
        }
    }
}

struct Guard {
    config: InspectConfig,
    sink: Rc<Sink>,
    patches: Vec<PatchHandle>,
    unlisten: Option<Function>,
    warned_unannounced: bool,
}

/// The JavaScript half of a flight.
struct FlightJs {
    controller: AbortController,
    /// The guarded promise's `resolve` and `reject`, once the registry call returned.
    settle: Option<(Function, Function)>,
    provider: JsValue,
    method: JsValue,
    sink: Rc<Sink>,
}

/// Inspect guards and the flights of all of them.
#[derive(Default)]
pub(crate) struct State {
    guards: std::collections::HashMap<u32, Guard>,
    flights: Flights,
    js: Vec<Option<FlightJs>>,
    /// Flights whose registry call is running, innermost last: the registry's
    /// synchronous `cordis/inspect-query` announces the innermost.
    announcing: Vec<FlightKey>,
}

impl State {
    pub(super) fn in_flight(&self) -> usize {
        self.flights.len()
    }

    fn put_js(&mut self, key: FlightKey, js: FlightJs) {
        let at = key.slot as usize;
        if self.js.len() <= at {
            self.js.resize_with(at + 1, || None);
        }
        if let Some(cell) = self.js.get_mut(at) {
            *cell = Some(js);
        }
    }

    /// The JavaScript half of a flight still in the table under `key`.
    fn live_js(&mut self, key: FlightKey) -> Option<&mut FlightJs> {
        if !self.flights.contains(key) {
            return None;
        }
        self.js.get_mut(key.slot as usize)?.as_mut()
    }

    /// The JavaScript half of the waiting flight of a request id.
    fn waiting(&self, request_id: &str) -> Option<&FlightJs> {
        let (key, _) = self.flights.by_request(request_id)?;
        self.js.get(key.slot as usize)?.as_ref()
    }

    /// Take a flight off both tables.
    fn land(&mut self, key: FlightKey) -> Option<(Landed, FlightJs)> {
        let landed = self.flights.land(key)?;
        let js = self.js.get_mut(key.slot as usize)?.take()?;
        Some((landed, js))
    }
}

/// Install the guard on `registry` (the raw service or any cordis read of it).
pub fn install(
    registry: &JsValue,
    config: InspectConfig,
    ledger: Rc<std::cell::RefCell<Ledger<InspectReport>>>,
    hooks: &JsValue,
) -> Result<Installation, Error> {
    let raw = original_of(registry);
    let mut missing = Vec::new();
    if get_fn(&raw, "query").is_none() {
        missing.push("query()");
    }
    if get_fn(&raw, "resolveClientQuery").is_none() {
        missing.push("resolveClientQuery()");
    }
    let on = get_fn(hooks, "on");
    if on.is_none() {
        missing.push("an event source (ctx.on)");
    }
    let (Some(on), true) = (on, missing.is_empty()) else {
        return Err(Error::HostShape {
            target: "cordisInspect",
            missing,
        });
    };
    let sink = Rc::new(Sink {
        ledger,
        warn: get_fn(hooks, "warn"),
        on_report: get_fn(hooks, "onReport"),
        explain: get_fn(hooks, "explainInvalidOutput"),
    });
    super::runtime::with(|rt| {
        let guard = rt.next_guard();
        let mut patches = Vec::new();
        for key in ["query", "resolveClientQuery"] {
            let make = |previous: &JsValue| match key {
                // Only client queries need the guard; host queries never enter wasm.
                "query" => rt.query_wrapper(guard, previous),
                _ => rt.resolve_wrapper(guard, previous),
            };
            match PatchHandle::install(&raw, key, make) {
                Ok(Some(patch)) => patches.push(patch),
                // Already guarded (a second install, or another copy): wrap nothing.
                Ok(None) => return Ok(Installation::inert()),
                Err(_) => {
                    return Err(Error::HostShape {
                        target: "cordisInspect",
                        missing: vec![if key == "query" {
                            "a replaceable query()"
                        } else {
                            "a replaceable resolveClientQuery()"
                        }],
                    })
                }
            }
        }
        let listener = rt.wrapper(guard, Role::Announce, &JsValue::UNDEFINED);
        let unlisten = on
            .call2(
                &JsValue::UNDEFINED,
                &"cordis/inspect-query".into(),
                &listener,
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
        let guard_state = Guard {
            config,
            sink,
            patches,
            unlisten: Some(unlisten),
            warned_unannounced: false,
        };
        rt.inspect(|state| state.guards.insert(guard, guard_state));
        Ok(Installation::inspect(guard))
    })
}

/// A client query starts (`query(platform, providerId, methodName, input, agent, signal)`):
/// replace its signal by a derived one and begin its flight. Returns the flight's
/// key, or `undefined` to let the call through unguarded (no live signal, or the
/// guard is gone: the registry then throws or rejects exactly as it would alone).
pub(super) fn query_begin(rt: &Runtime, guard: u32, args: &Array) -> JsValue {
    let Some((config, sink)) = rt
        .inspect(|s| s.guards.get(&guard).map(|g| (g.config, g.sink.clone())))
        .flatten()
    else {
        return JsValue::UNDEFINED;
    };
    let Some(controller) = derive_signal(args, 5) else {
        return JsValue::UNDEFINED;
    };
    let query = Query {
        guard,
        deadline_ms: config.deadline_ms,
        grace_ms: config.refusal_grace_ms,
    };
    let now = monotonic_now();
    let flight = FlightJs {
        controller,
        settle: None,
        provider: args.get(1),
        method: args.get(2),
        sink,
    };
    rt.inspect(|state| {
        let key = state.flights.begin(query, now);
        state.announcing.push(key);
        state.put_js(key, flight);
        key
    })
    .map_or(JsValue::UNDEFINED, |key| JsValue::from_f64(key.to_f64()))
}

/// A client query's registry call returned `inner` (`undefined` when it threw):
/// hand back the guarded promise, which settles as `inner` does unless the guard
/// ends the flight first.
pub(super) fn query_track(rt: &Runtime, guard: u32, inner: &JsValue, args: &Array) -> JsValue {
    let Some(key) = args.get(0).as_f64().and_then(FlightKey::from_f64) else {
        return inner.clone();
    };
    let announced = rt
        .inspect(|state| {
            if let Some(at) = state.announcing.iter().rposition(|k| *k == key) {
                state.announcing.remove(at);
            }
            state.flights.is_announced(key)
        })
        .unwrap_or(false);
    let Some(promise) = inner.dyn_ref::<Promise>() else {
        // It threw, or returned something other than a promise: nothing to guard.
        rt.inspect(|state| state.land(key));
        rearm(rt);
        return inner.clone();
    };
    if !announced {
        warn_unannounced(rt, guard);
    }
    let mut parts = None;
    let outer = Promise::new(&mut |resolve, reject| parts = Some((resolve, reject)));
    let tracked = rt.inspect(|state| match state.live_js(key) {
        Some(js) => {
            js.settle = parts.take();
            js.settle.is_some()
        }
        // Ended while the registry ran (the guard was disposed): nothing to track.
        None => false,
    });
    if tracked != Some(true) {
        return inner.clone();
    }
    super::chain(promise, key.to_f64(), rt.settle_fn());
    rearm(rt);
    outer.into()
}

fn warn_unannounced(rt: &Runtime, guard: u32) {
    let first = rt.inspect(|state| match state.guards.get_mut(&guard) {
        Some(g) if !g.warned_unannounced => {
            g.warned_unannounced = true;
            g.sink.warn.clone()
        }
        _ => None,
    });
    if let Some(Some(warn)) = first {
        let _ = warn.call1(
            &JsValue::UNDEFINED,
            &"the registry did not emit cordis/inspect-query while query() ran; \
              deadlines still apply, but page refusals cannot be matched to queries"
                .into(),
        );
    }
}

/// The registry announced a client request (`cordis/inspect-query`).
pub(super) fn announce(rt: &Runtime, request: &JsValue) {
    let Some(request_id) = get_string(request, "requestId") else {
        return;
    };
    let agent_id = get_string(request, "agentId");
    rt.inspect(|state| {
        if let Some(&key) = state.announcing.last() {
            state.flights.announce(key, request_id, agent_id);
        }
    });
}

/// `resolveClientQuery(null, requestId, …)`: refused, instead of the registry's `TypeError`.
pub(super) fn unbound(
    rt: &Runtime,
    guard: u32,
    previous: &JsValue,
    this: &JsValue,
    args: &Array,
) -> Result<JsValue, JsValue> {
    if rt.inspect(|s| s.guards.contains_key(&guard)) != Some(true) {
        return forward(previous, this, args);
    }
    report_unbound(rt, guard, args.get(1).as_string());
    Ok(not_accepted())
}

/// The registry refused an answer (`{ accepted: false }`, handed back unchanged):
/// remember it as the flight's first refusal when it is a page's `ok: false`, or
/// an answer that failed validation, from the asking agent's session.
pub(super) fn refused(rt: &Runtime, guard: u32, result: &JsValue, args: &Array) -> JsValue {
    let Some(request_id) = args.get(1).as_string() else {
        return result.clone();
    };
    if rt.inspect(|s| s.guards.contains_key(&guard)) != Some(true) {
        return result.clone();
    }
    let resolution = args.get(2);
    let refusal = match get(&resolution, "ok") {
        Some(ok) if ok.is_truthy() => Refusal::InvalidOutput {
            detail: explain_invalid_output(rt, &request_id, &resolution),
        },
        _ => Refusal::Page {
            reason: get(&resolution, "reason")
                .map_or_else(String::new, |r| text_of(&r, MAX_PAGE_TEXT)),
            message: get(&resolution, "message")
                .map_or_else(String::new, |m| text_of(&m, MAX_PAGE_TEXT)),
        },
    };
    let agent_id = get_string(&args.get(0), "id");
    let now = monotonic_now();
    let effect = rt
        .inspect(|state| {
            state
                .flights
                .refuse(&request_id, agent_id.as_deref(), refusal, now)
        })
        .unwrap_or(RefusalEffect::Ignored);
    if effect == RefusalEffect::First {
        rearm(rt);
    }
    result.clone()
}

/// The host validator's account of why a waiting flight's answer was refused.
fn explain_invalid_output(rt: &Runtime, request_id: &str, resolution: &JsValue) -> Option<String> {
    let (explain, provider, method) = rt
        .inspect(|state| {
            let flight = state.waiting(request_id)?;
            Some((
                flight.sink.explain.clone()?,
                flight.provider.clone(),
                flight.method.clone(),
            ))
        })
        .flatten()?;
    let data = get(resolution, "data").unwrap_or(JsValue::UNDEFINED);
    let detail = explain
        .call3(&JsValue::UNDEFINED, &provider, &method, &data)
        .ok()?;
    detail.is_string().then(|| text_of(&detail, MAX_PAGE_TEXT))
}

fn not_accepted() -> JsValue {
    let result = Object::new();
    let _ = Reflect::set(&result, &"accepted".into(), &JsValue::FALSE);
    result.into()
}

fn report_unbound(rt: &Runtime, guard: u32, request_id: Option<String>) {
    let found = rt
        .inspect(|state| {
            let g = state.guards.get(&guard)?;
            let names = request_id
                .as_deref()
                .and_then(|id| state.waiting(id))
                .map(|flight| (flight.provider.clone(), flight.method.clone()));
            Some((g.sink.clone(), g.config.deadline_ms, names))
        })
        .flatten();
    let Some((sink, deadline_ms, names)) = found else {
        return;
    };
    let (provider, method) = names.unwrap_or((JsValue::UNDEFINED, JsValue::UNDEFINED));
    let report = InspectReport {
        kind: "unbound-agent",
        request_id: request_id.unwrap_or_default(),
        provider_id: provider.as_string().unwrap_or_default(),
        method_name: method.as_string().unwrap_or_default(),
        deadline_ms,
        at: js_sys::Date::now(),
        reason: None,
    };
    let text = format!(
        "refused a page answer for {} without a bound agent (it would have thrown a TypeError)",
        describe(&report)
    );
    sink.report(report, &text);
}

fn describe(report: &InspectReport) -> String {
    if report.provider_id.is_empty() {
        format!("request {}", report.request_id)
    } else {
        format!(
            "request {} ({}.{})",
            report.request_id, report.provider_id, report.method_name
        )
    }
}

/// A flight's inner promise settled: pass the outcome on, unless the guard already ended it.
pub(super) fn settle(rt: &Runtime, key: f64, ok: bool, value: &JsValue) {
    let Some(key) = FlightKey::from_f64(key) else {
        return;
    };
    let Some((_, js)) = rt.inspect(|s| s.land(key)).flatten() else {
        return;
    };
    if let Some((resolve, reject)) = &js.settle {
        let settle = if ok { resolve } else { reject };
        let _ = settle.call1(&JsValue::UNDEFINED, value);
    }
    rearm(rt);
}

/// Flights ended per timer tick. When more are due, the timer is re-armed at once,
/// so callers' rejection handlers (and I/O) run between chunks instead of after
/// the whole batch.
const EXPIRY_CHUNK: usize = 128;

/// The deadline timer fired: end what is due (at most a chunk) and return the work
/// of delivering it, `[controller, reject, error, warn, text, …]`, which the
/// ticker performs in JavaScript: the registry's abort path then runs with no
/// wasm frame beneath it (see `makeQueryWrapper`).
pub(super) fn tick(rt: &Runtime) -> Array {
    rt.fired();
    let now = monotonic_now();
    let ended = rt
        .inspect(|s| s.flights.expire_at_most(now, EXPIRY_CHUNK))
        .unwrap_or_default();
    let work = end_flights(rt, ended.into_iter().map(|(key, _)| key));
    rearm(rt);
    work
}

/// Land the guard's endings, build their errors and record their reports. Returns
/// the rest as work for `deliver` (helpers.js): `[controller, reject, error, warn,
/// text, …]`, performed in that order for each flight.
fn end_flights(rt: &Runtime, ended: impl IntoIterator<Item = FlightKey>) -> Array {
    let work = Array::new();
    for key in ended {
        let Some((landed, js)) = rt.inspect(|s| s.land(key)).flatten() else {
            continue;
        };
        let provider = js.provider.as_string().unwrap_or_default();
        let method = js.method.as_string().unwrap_or_default();
        let (Some(error), Some(ending)) = (landed.error(&provider, &method), landed.ending) else {
            js.controller.abort();
            continue;
        };
        let report = InspectReport {
            kind: ending.kind(),
            request_id: landed.request_id.unwrap_or_default(),
            provider_id: provider,
            method_name: method,
            deadline_ms: landed.query.deadline_ms,
            at: js_sys::Date::now(),
            reason: match &ending {
                Ending::Refused(r) => Some(r.reason().to_owned()),
                _ => None,
            },
        };
        let why = match &ending {
            Ending::Deadline => format!("no page answered within {}ms", report.deadline_ms),
            Ending::Refused(r) => format!("the page refused ({})", r.reason()),
            Ending::Disposed => "the guard was stopped while it waited".to_owned(),
        };
        let text = format!(
            "client inspect {} rejected with {}: {why}",
            describe(&report),
            error.code()
        );
        js.sink.record(report);
        for part in [
            js.controller.into(),
            js.settle
                .map_or(JsValue::UNDEFINED, |(_, reject)| reject.into()),
            to_js_error(&error),
            js.sink
                .warn
                .clone()
                .map_or(JsValue::UNDEFINED, JsValue::from),
            JsValue::from_str(&text),
        ] {
            work.push(&part);
        }
    }
    work
}

fn rearm(rt: &Runtime) {
    rt.arm(rt.inspect(|s| s.flights.next_due()).flatten());
}

/// Remove the guard: restore its methods, drop its listener, reject its flights.
pub(super) fn dispose(rt: &Runtime, guard: u32) {
    let Some((removed, ended)) =
        rt.inspect(|s| (s.guards.remove(&guard), s.flights.abandon(guard)))
    else {
        return;
    };
    if let Some(mut g) = removed {
        drop(std::mem::take(&mut g.patches));
        if let Some(unlisten) = g.unlisten.take() {
            let _ = unlisten.call0(&JsValue::UNDEFINED);
        }
    }
    super::deliver(&end_flights(rt, ended));
    rearm(rt);
}
