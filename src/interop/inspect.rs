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
    get, get_fn, get_string, monotonic_now, original_of, text_of, to_js_error, AbortController,
    AbortSignal,
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
    fn report(&self, report: InspectReport, text: &str) {
        if let Ok(mut ledger) = self.ledger.try_borrow_mut() {
            ledger.push(report.clone());
        }
        let js = super::to_js(&report);
        if let Some(warn) = &self.warn {
            let _ = warn.call2(&JsValue::UNDEFINED, &JsValue::from_str(text), &js);
        }
        if let Some(on_report) = &self.on_report {
            let _ = on_report.call1(&JsValue::UNDEFINED, &js);
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
    resolve: Function,
    reject: Function,
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
    announcing: Option<FlightKey>,
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
        for (key, role) in [
            ("query", Role::Query),
            ("resolveClientQuery", Role::Resolve),
        ] {
            match PatchHandle::install(&raw, key, |previous| rt.wrapper(guard, role, previous)) {
                Ok(Some(patch)) => patches.push(patch),
                // Already guarded (a second install, or another copy): wrap nothing.
                Ok(None) => return Ok(Installation::inert()),
                Err(_) => {
                    return Err(Error::HostShape {
                        target: "cordisInspect",
                        missing: vec![if role == Role::Query {
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
        if let Ok(mut state) = rt.inspect.try_borrow_mut() {
            state.guards.insert(
                guard,
                Guard {
                    config,
                    sink,
                    patches,
                    unlisten: Some(unlisten),
                    warned_unannounced: false,
                },
            );
        }
        Ok(Installation::inspect(guard))
    })
}

/// The guarded `query(platform, providerId, methodName, input, agent, signal)`.
pub(super) fn query(
    rt: &Runtime,
    guard: u32,
    previous: &JsValue,
    this: &JsValue,
    args: &Array,
) -> Result<JsValue, JsValue> {
    let Some(config) = rt
        .inspect
        .try_borrow()
        .ok()
        .and_then(|s| s.guards.get(&guard).map(|g| g.config))
    else {
        return forward(previous, this, args);
    };
    if args.get(0) != rt.client {
        return forward(previous, this, args);
    }
    let caller = args.get(5);
    let Some(caller) = caller.dyn_ref::<AbortSignal>().filter(|s| !s.aborted()) else {
        // No live signal: the registry throws or rejects exactly as it would unguarded.
        return forward(previous, this, args);
    };
    let controller = AbortController::new()?;
    let derived = AbortSignal::any(&Array::of2(caller, &controller.signal()))?;
    args.set(5, derived.into());

    let query = Query {
        guard,
        deadline_ms: config.deadline_ms,
        grace_ms: config.refusal_grace_ms,
    };
    let (key, outer_announcing) = {
        let mut state = rt.inspect.try_borrow_mut().map_err(|_| busy())?;
        let key = state.flights.begin(query, monotonic_now());
        (key, state.announcing.replace(key))
    };
    let inner = forward(previous, this, args);
    let announced = match rt.inspect.try_borrow_mut() {
        Ok(mut state) => {
            state.announcing = outer_announcing;
            state.flights.is_announced(key)
        }
        Err(_) => false,
    };
    let inner = match inner.map(|v| v.dyn_into::<Promise>()) {
        Ok(Ok(promise)) => promise,
        other => {
            // A synchronous throw, or something other than a promise: hand it back as is.
            if let Ok(mut state) = rt.inspect.try_borrow_mut() {
                state.flights.land(key);
            }
            return other.map(|v| v.map_or_else(|v| v, JsValue::from));
        }
    };
    if !announced {
        warn_unannounced(rt, guard);
    }
    let mut parts = None;
    let outer = Promise::new(&mut |resolve, reject| parts = Some((resolve, reject)));
    let Some((resolve, reject)) = parts else {
        return Ok(inner.into());
    };
    let sink = match rt.inspect.try_borrow_mut() {
        Ok(mut state) => {
            let sink = state.guards.get(&guard).map(|g| g.sink.clone());
            if let Some(sink) = &sink {
                state.put_js(
                    key,
                    FlightJs {
                        controller,
                        resolve,
                        reject,
                        provider: args.get(1),
                        method: args.get(2),
                        sink: sink.clone(),
                    },
                );
            }
            sink
        }
        Err(_) => None,
    };
    if sink.is_none() {
        return Ok(inner.into());
    }
    super::chain(&inner, key.to_f64(), rt.settle_fn());
    rearm(rt);
    Ok(outer.into())
}

fn busy() -> JsValue {
    js_sys::Error::new("harness-guard: re-entered while busy").into()
}

fn warn_unannounced(rt: &Runtime, guard: u32) {
    let sink = match rt.inspect.try_borrow_mut() {
        Ok(mut state) => match state.guards.get_mut(&guard) {
            Some(g) if !g.warned_unannounced => {
                g.warned_unannounced = true;
                Some(g.sink.clone())
            }
            _ => None,
        },
        Err(_) => None,
    };
    if let Some(Some(warn)) = sink.map(|s| s.warn.clone()) {
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
    if let Ok(mut state) = rt.inspect.try_borrow_mut() {
        if let Some(key) = state.announcing.take() {
            state.flights.announce(key, request_id, agent_id);
        }
    }
}

/// The guarded `resolveClientQuery(agent, requestId, resolution)`.
pub(super) fn resolve(
    rt: &Runtime,
    guard: u32,
    previous: &JsValue,
    this: &JsValue,
    args: &Array,
) -> Result<JsValue, JsValue> {
    let known = rt
        .inspect
        .try_borrow()
        .map(|s| s.guards.contains_key(&guard))
        .unwrap_or(false);
    if !known {
        return forward(previous, this, args);
    }
    let agent = args.get(0);
    let request_id = args.get(1).as_string();
    if agent.is_null() || agent.is_undefined() {
        report_unbound(rt, guard, request_id);
        return Ok(refused());
    }
    let result = forward(previous, this, args)?;
    let accepted = get(&result, "accepted").and_then(|a| a.as_bool());
    if accepted != Some(false) {
        return Ok(result);
    }
    let Some(request_id) = request_id else {
        return Ok(result);
    };
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
    let agent_id = get_string(&agent, "id");
    let effect = match rt.inspect.try_borrow_mut() {
        Ok(mut state) => {
            state
                .flights
                .refuse(&request_id, agent_id.as_deref(), refusal, monotonic_now())
        }
        Err(_) => RefusalEffect::Ignored,
    };
    if effect == RefusalEffect::First {
        rearm(rt);
    }
    Ok(result)
}

/// The host validator's account of why a waiting flight's answer was refused.
fn explain_invalid_output(rt: &Runtime, request_id: &str, resolution: &JsValue) -> Option<String> {
    let (explain, provider, method) = {
        let state = rt.inspect.try_borrow().ok()?;
        let (key, query) = state.flights.by_request(request_id)?;
        let js = state.js.get(key.slot as usize)?.as_ref()?;
        let explain = state.guards.get(&query.guard)?.sink.explain.clone()?;
        (explain, js.provider.clone(), js.method.clone())
    };
    let data = get(resolution, "data").unwrap_or(JsValue::UNDEFINED);
    let detail = explain
        .call3(&JsValue::UNDEFINED, &provider, &method, &data)
        .ok()?;
    detail.is_string().then(|| text_of(&detail, MAX_PAGE_TEXT))
}

fn refused() -> JsValue {
    let result = Object::new();
    let _ = Reflect::set(&result, &"accepted".into(), &JsValue::FALSE);
    result.into()
}

fn report_unbound(rt: &Runtime, guard: u32, request_id: Option<String>) {
    let found = rt.inspect.try_borrow().ok().and_then(|state| {
        let g = state.guards.get(&guard)?;
        let flight = request_id
            .as_deref()
            .and_then(|id| state.flights.by_request(id));
        let names = flight.and_then(|(key, _)| {
            let js = state.js.get(key.slot as usize)?.as_ref()?;
            Some((js.provider.clone(), js.method.clone()))
        });
        Some((g.sink.clone(), g.config.deadline_ms, names))
    });
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
    let Some((_, js)) = rt
        .inspect
        .try_borrow_mut()
        .ok()
        .and_then(|mut s| s.land(key))
    else {
        return;
    };
    let settle = if ok { &js.resolve } else { &js.reject };
    let _ = settle.call1(&JsValue::UNDEFINED, value);
    rearm(rt);
}

/// The deadline timer fired.
pub(super) fn tick(rt: &Runtime) {
    rt.fired();
    let ended = match rt.inspect.try_borrow_mut() {
        Ok(mut state) => state.flights.expire(monotonic_now()),
        Err(_) => Vec::new(),
    };
    end_flights(rt, ended);
    rearm(rt);
}

/// Deliver the guard's endings: abort (so the registry cleans up), reject, report.
fn end_flights(rt: &Runtime, ended: Vec<(FlightKey, Ending)>) {
    for (key, _) in ended {
        let Some((landed, js)) = rt
            .inspect
            .try_borrow_mut()
            .ok()
            .and_then(|mut s| s.land(key))
        else {
            continue;
        };
        js.controller.abort();
        let provider = js.provider.as_string().unwrap_or_default();
        let method = js.method.as_string().unwrap_or_default();
        let Some(error) = landed.error(&provider, &method) else {
            continue;
        };
        let _ = js.reject.call1(&JsValue::UNDEFINED, &to_js_error(&error));
        let ending = landed.ending.clone();
        let report = InspectReport {
            kind: ending.as_ref().map_or("deadline", Ending::kind),
            request_id: landed.request_id.clone().unwrap_or_default(),
            provider_id: provider,
            method_name: method,
            deadline_ms: landed.query.deadline_ms,
            at: js_sys::Date::now(),
            reason: match &ending {
                Some(Ending::Refused(r)) => Some(r.reason().to_owned()),
                _ => None,
            },
        };
        let text = format!(
            "client inspect {} rejected with {}: {}",
            describe(&report),
            error.code(),
            match &ending {
                Some(Ending::Deadline) =>
                    format!("no page answered within {}ms", report.deadline_ms),
                Some(Ending::Refused(r)) => format!("the page refused ({})", r.reason()),
                _ => "the guard was stopped while it waited".to_owned(),
            }
        );
        js.sink.report(report, &text);
    }
}

fn rearm(rt: &Runtime) {
    let due = rt
        .inspect
        .try_borrow_mut()
        .ok()
        .and_then(|mut s| s.flights.next_due());
    rt.arm(due);
}

/// Remove the guard: restore its methods, drop its listener, reject its flights.
pub(super) fn dispose(rt: &Runtime, guard: u32) {
    let (removed, ended) = match rt.inspect.try_borrow_mut() {
        Ok(mut state) => {
            let removed = state.guards.remove(&guard);
            let ended = state.flights.abandon(guard);
            (removed, ended)
        }
        Err(_) => (None, Vec::new()),
    };
    if let Some(mut g) = removed {
        drop(std::mem::take(&mut g.patches));
        if let Some(unlisten) = g.unlisten.take() {
            let _ = unlisten.call0(&JsValue::UNDEFINED);
        }
    }
    end_flights(
        rt,
        ended
            .into_iter()
            .map(|key| (key, Ending::Disposed))
            .collect(),
    );
    rearm(rt);
}
