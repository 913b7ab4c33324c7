//! The cordis plugin: `apply(ctx, config, host)` and everything it wires.
//!
//! One mount is one `apply`: its config, its logger, its two ledgers, and its
//! record on the JavaScript side (see `supervisor.js`), which outlives this
//! instance so the mount can be applied again on a fresh one after a fault
//! (`reapply`). It provides the services `inspectClientGuard` and
//! `inboxInputGuard`, installs the inbox half as a labelled effect, and asks
//! cordis for the registry with `ctx.inject(['cordisInspect'], …)`: each time the
//! registry appears, the inspect half and the `HarnessGuard` provider are
//! attached to it as one labelled effect of that sub-fiber, and detached when it
//! goes away. Where the host's command registry exists (`ctx.inject(['commands'],
//! …)`), the `/harness-guard` command is registered the same way. Every function
//! handed to cordis is a trampoline (see `runtime`), so disposal, a late call
//! after disposal and a call after a fault all stay safe; every registration's
//! disposer is held by the record, so a faulted instance's can be undone.

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::{Array, Function};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::de::raw_config;
use super::fault::{self, Point};
use super::instance::{self, emit, exclusive, shared, Instance, Role};
use super::js::{
    abandon, call_with, fault_facts, get, get_fn, get_string, hold, host_call, object, open_mount,
    original_of, release, to_index, to_js,
};
use super::{inbox, inspect, settings};
use crate::config::{self, Config};
use crate::error::Error;
use crate::idmap::IdMap;
use crate::ledger::{InboxCounts, InspectCounts, InspectReport, Ledger, Violation};
use crate::provider::{self, InboxStatus, InspectStatus, LastFault, Method, Status};

/// The plugin's name, as cordis and its logger know it.
const NAME: &str = "harness-guard";

/// What one `apply` set up.
struct Mount {
    /// The mount's record on the JavaScript side.
    record: JsValue,
    config: Config,
    ctx: JsValue,
    warn: Option<Function>,
    create_user_message: Option<Function>,
    validate: Option<Function>,
    inspect_ledger: Rc<RefCell<Ledger<InspectReport>>>,
    inbox_ledger: Rc<RefCell<Ledger<Violation>>>,
    /// Which inbox records are the same value; forgotten with the records.
    sightings: Rc<RefCell<crate::sightings::Sightings>>,
    inbox_guard: Option<u32>,
    /// The disposer of the inbox half's effect, while it is installed.
    inbox_effect: Option<JsValue>,
    inspect_guards: Vec<u32>,
    /// The mount's registry attachments (one per `cordisInspect` it was injected).
    attachments: Vec<u32>,
    /// The mount's current settings link, where the package offers a settings schema.
    link: Option<settings::Link>,
}

/// The registry attachment of a mount: its inspect guard and provider registration.
struct Attachment {
    mount: u32,
    /// The injected sub-context, and the raw registry it holds.
    sub: JsValue,
    registry: JsValue,
    guard: Option<u32>,
    unregister: Option<Function>,
}

/// Mounts and attachments by id.
struct State {
    mounts: IdMap<Mount>,
    attachments: IdMap<Attachment>,
}

thread_local! {
    /// The mounts and their registry attachments.
    static STATE: RefCell<State> = const {
        RefCell::new(State {
            mounts: IdMap::new(),
            attachments: IdMap::new(),
        })
    };
}

/// What a call into the mount works with: the instance's services (through
/// `Deref`) and the mounts' own cell, each reached once per entry.
struct Rt<'a> {
    instance: &'a Instance,
    state: &'a RefCell<State>,
}

impl std::ops::Deref for Rt<'_> {
    type Target = Instance;
    fn deref(&self) -> &Instance {
        self.instance
    }
}

impl Rt<'_> {
    /// `f` on the mounts and attachments (see [`exclusive`]).
    #[inline(always)]
    fn plugin<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        exclusive(self.state, f)
    }
}

/// `f` with the instance's services and the mounts' cell.
fn enter<R>(f: impl FnOnce(&Rt<'_>) -> R) -> R {
    instance::with(|instance| STATE.with(|state| f(&Rt { instance, state })))
}

/// `apply(ctx, config, host)`: mount both halves. `host` is the plugin module's
/// `{ state, createUserMessage, validateJsonSchemaValue? }`. An invalid config
/// throws before anything is installed; a mount that fails later leaves nothing.
pub fn apply(ctx: &JsValue, config: &JsValue, host: &JsValue) -> Result<(), Error> {
    fault::check(Point::Apply);
    let parsed = config::parse(&raw_config(config))?;
    let logger = get_fn(ctx, "logger")
        .and_then(|make| make.call1(ctx, &NAME.into()).ok())
        .unwrap_or(JsValue::UNDEFINED);
    let record =
        open_mount("plugin", ctx, config, host, &logger).map_err(|_| Error::HostShape {
            target: "the plugin's context",
            missing: vec!["ctx.effect"],
        })?;
    mount(&record, parsed).inspect_err(|_| abandon(&record))
}

/// Apply again, on this (fresh) instance, what the record of a mount or a
/// programmatic install asked for: the recovery after a fault.
pub fn reapply(record: &JsValue) -> Result<(), Error> {
    fault::check(Point::Recover);
    if get_string(record, "kind").as_deref() == Some("inspect") {
        return instance::with(|rt| inspect::reinstall(rt, record));
    }
    let config = config::parse(&raw_config(&get(record, "config").unwrap_or_default()))?;
    mount(record, config)
}

/// Mount both halves for `record`, with its context, host and logger.
fn mount(record: &JsValue, config: Config) -> Result<(), Error> {
    let ctx = get(record, "ctx").unwrap_or(JsValue::UNDEFINED);
    let host = get(record, "host").unwrap_or(JsValue::UNDEFINED);
    let logger = get(record, "logger").unwrap_or(JsValue::UNDEFINED);
    let warn = get_fn(&logger, "warn").map(|w| w.bind0(&logger));
    enter(|rt| {
        let id = rt.next_id();
        let mount = Mount {
            record: record.clone(),
            config,
            ctx: ctx.clone(),
            warn,
            create_user_message: get_fn(&host, "createUserMessage"),
            validate: get_fn(&host, "validateJsonSchemaValue"),
            inspect_ledger: Rc::default(),
            inbox_ledger: Rc::default(),
            sightings: Rc::default(),
            inbox_guard: None,
            inbox_effect: None,
            inspect_guards: Vec::new(),
            attachments: Vec::new(),
            link: None,
        };
        rt.plugin(|s| s.mounts.insert(id, mount));
        wire(rt, id, &ctx, record, &config).inspect_err(|_| forget(rt, id))
    })
}

/// The services, the effects and the injections of one mount; every
/// registration's disposer is held by `record`.
fn wire(
    rt: &Rt<'_>,
    id: u32,
    ctx: &JsValue,
    record: &JsValue,
    config: &Config,
) -> Result<(), Error> {
    let host_call = |method: &str, args: &[&JsValue]| host_call(ctx, record, method, args);
    let none = JsValue::UNDEFINED;
    let empty: JsValue = Array::new().into();
    let status_fallback = failed_status(&config.inbox);
    let service = |records: &str, list: Role, counts: Role, zeros: JsValue, reset: Role| {
        object(&[
            (records, &rt.method(id, list, &none, &empty, false).into()),
            (
                "counts",
                &rt.method(id, counts, &none, &zeros, false).into(),
            ),
            ("reset", &rt.method(id, reset, &none, &none, false).into()),
            (
                "status",
                &rt.method(id, Role::Status, &none, &status_fallback, false)
                    .into(),
            ),
        ])
    };
    let inspect_service = service(
        "reports",
        Role::Reports,
        Role::InspectCounts,
        failed_counts::<InspectCounts>(),
        Role::InspectReset,
    );
    let inbox_service = service(
        "violations",
        Role::Violations,
        Role::InboxCounts,
        failed_counts::<InboxCounts>(),
        Role::InboxReset,
    );
    host_call("provide", &[&"inspectClientGuard".into(), &inspect_service])?;
    host_call("provide", &[&"inboxInputGuard".into(), &inbox_service])?;
    let records = rt.method(id, Role::Records, &none, &none, false);
    host_call(
        "effect",
        &[&records.into(), &"harness-guard: records".into()],
    )?;
    fit_inbox(rt, id)?;
    // Injected whatever the config: a half enabled live attaches to the registry then.
    let services: JsValue = Array::of1(&"cordisInspect".into()).into();
    let attach = rt.method(id, Role::Registry, &none, &none, false);
    host_call("inject", &[&services, &attach.into()])?;
    let services: JsValue = Array::of1(&"commands".into()).into();
    let commands = rt.method(id, Role::Commands, &none, &none, false);
    host_call("inject", &[&services, &commands.into()])?;
    settings::wire(rt, &MountRef { rt, id }, ctx, record)
}

/// A live mount, as its settings link sees it (see [`settings::Mount`]).
struct MountRef<'a, 'b> {
    rt: &'a Rt<'b>,
    id: u32,
}

impl settings::Mount for MountRef<'_, '_> {
    fn id(&self) -> u32 {
        self.id
    }

    fn parts(&self) -> Option<(JsValue, JsValue)> {
        self.rt.plugin(|s| {
            s.mounts
                .get(self.id)
                .map(|m| (m.ctx.clone(), m.record.clone()))
        })
    }

    fn with_link<R>(&self, f: impl FnOnce(&mut Option<settings::Link>) -> R) -> Option<R> {
        self.rt
            .plugin(|s| s.mounts.get_mut(self.id).map(|m| f(&mut m.link)))
    }

    fn warn(&self, text: &str) {
        if let Some(warn) = self.rt.plugin(|s| s.mounts.get(self.id)?.warn.clone()) {
            emit(&warn, "", text);
        }
    }

    fn reconfigure(&self, next: Config) -> Result<(), Error> {
        reconfigure(self.rt, self.id, next)
    }
}

/// Apply `next` to a live mount in place, without a restart: the inbox half's
/// mode and preview length from its next claim; the deadline and grace for the
/// client queries that begin from now on (a query already waiting keeps its
/// own); a half enabled is installed, a half disabled uninstalled; the records
/// and counts stay.
fn reconfigure(rt: &Rt<'_>, id: u32, next: Config) -> Result<(), Error> {
    let attachments = rt.plugin(|s| {
        let m = s.mounts.get_mut(id)?;
        m.config = next;
        Some(m.attachments.clone())
    });
    let Some(attachments) = attachments else {
        return Ok(());
    };
    for attachment in attachments {
        fit(rt, attachment);
    }
    fit_inbox(rt, id)
}

/// Make the inbox half match its mount's config: installed (as an effect of the
/// mount) while enabled, reconfigured in place, uninstalled when disabled.
fn fit_inbox(rt: &Rt<'_>, id: u32) -> Result<(), Error> {
    let Some((config, guard, effect, ctx, record)) = rt.plugin(|s| {
        let m = s.mounts.get_mut(id)?;
        let effect = if m.config.inbox.enabled {
            None
        } else {
            m.inbox_effect.take()
        };
        Some((
            m.config.inbox,
            m.inbox_guard,
            effect,
            m.ctx.clone(),
            m.record.clone(),
        ))
    }) else {
        return Ok(());
    };
    if let Some(effect) = effect {
        // Disposing the effect runs its disposer: the guard's claims are restored.
        if let Some(dispose) = effect.dyn_ref::<Function>() {
            let _ = dispose.call0(&JsValue::UNDEFINED);
        }
        release(&record, &effect);
        return Ok(());
    }
    match (config.enabled, guard) {
        (true, Some(guard)) => inbox::reconfigure(guard, config),
        (true, None) => {
            let none = JsValue::UNDEFINED;
            let effect = rt.method(id, Role::Inbox, &none, &none, false);
            let label = "harness-guard: inbox.claim guard".into();
            let disposer = host_call(&ctx, &record, "effect", &[&effect.into(), &label])?;
            rt.plugin(|s| {
                if let Some(m) = s.mounts.get_mut(id) {
                    m.inbox_effect = Some(disposer);
                }
            });
        }
        (false, _) => {}
    }
    Ok(())
}

/// The `status` a service or the provider answers once the guard stood down
/// (the JavaScript side adds the fault's facts to each copy it hands out).
fn failed_status(inbox: &config::InboxConfig) -> JsValue {
    let zeros = (InspectCounts::default(), InboxCounts::default());
    let failed = Error::StoodDown.to_string();
    to_js(&Status {
        version: env!("CARGO_PKG_VERSION"),
        failed: Some(&failed),
        recoveries: 0,
        last_fault: None,
        gave_up: false,
        inspect: InspectStatus::new(None, 0, &zeros.0),
        inbox: InboxStatus::new(inbox, false, &zeros.1),
    })
}

/// Zero counts with the fault's note (`failed`, after the counts' own fields):
/// what `counts()` answers once the guard stood down.
fn failed_counts<C: Default + serde::Serialize>() -> JsValue {
    let counts = to_js(&C::default());
    // Setting an own data property on a fresh plain object cannot fail.
    let _ = js_sys::Reflect::set(
        &counts,
        &JsValue::from_str("failed"),
        &JsValue::from_str(&Error::StoodDown.to_string()),
    );
    counts
}

/// Drop a mount's state (disposed, or its wiring failed).
fn forget(rt: &Rt<'_>, id: u32) {
    drop(rt.plugin(|s| s.mounts.remove(id)));
}

/// A plugin trampoline's call: a service method, an effect or its disposer, the
/// registry's arrival, or the provider.
pub(super) fn route(id: u32, role: Role, args: &Array) -> Result<JsValue, Error> {
    enter(|rt| route_in(rt, id, role, args))
}

fn route_in(rt: &Rt<'_>, id: u32, role: Role, args: &Array) -> Result<JsValue, Error> {
    let none = JsValue::UNDEFINED;
    Ok(match role {
        Role::Reports => read(rt, id, Array::new().into(), |m| {
            shared(&m.inspect_ledger, |l| {
                to_js(&l.records().collect::<Vec<_>>())
            })
        }),
        Role::Violations => read(rt, id, Array::new().into(), |m| {
            shared(&m.inbox_ledger, |l| to_js(&l.records().collect::<Vec<_>>()))
        }),
        Role::InspectCounts => read(rt, id, to_js(&InspectCounts::default()), |m| {
            shared(&m.inspect_ledger, |l| to_js(l.counts()))
        }),
        Role::InboxCounts => read(rt, id, to_js(&InboxCounts::default()), |m| {
            shared(&m.inbox_ledger, |l| to_js(l.counts()))
        }),
        Role::InspectReset => {
            with_ledgers(rt, id, |inspect, _| inspect.reset());
            none
        }
        Role::InboxReset => {
            with_ledgers(rt, id, |_, inbox| inbox.reset());
            let sightings = rt.plugin(|s| s.mounts.get(id).map(|m| m.sightings.clone()));
            if let Some(sightings) = sightings {
                exclusive(&sightings, |s| s.reset());
            }
            none
        }
        Role::Records => rt
            .method(id, Role::RecordsDispose, &none, &none, false)
            .into(),
        Role::RecordsDispose => {
            forget(rt, id);
            none
        }
        Role::Inbox => {
            install_inbox(rt, id)?;
            rt.method(id, Role::InboxDispose, &none, &none, false)
                .into()
        }
        Role::InboxDispose => {
            let guard = rt.plugin(|s| s.mounts.get_mut(id)?.inbox_guard.take());
            if let Some(guard) = guard {
                inbox::dispose(guard);
            }
            none
        }
        Role::Registry => {
            attach(rt, id, &args.get(0));
            none
        }
        Role::Attach => rt.method(id, Role::Detach, &none, &none, false).into(),
        Role::Detach => {
            detach(rt, id);
            none
        }
        Role::Provider => answer(rt, id, &args.get(0), &args.get(1), &args.get(2))?,
        Role::Status => status_of(rt, id).unwrap_or(none),
        Role::Commands => {
            register_command(rt, id, &args.get(0));
            none
        }
        Role::Command => command(rt, id, &args.get(0)),
        Role::Update | Role::ConfigCheck | Role::Settings | Role::SettingsChange => {
            settings::route(rt, &MountRef { rt, id }, role, args)?
        }
        _ => none,
    })
}

/// `f` of a live mount; `empty` for a mount that is gone (disposed).
fn read(rt: &Rt<'_>, id: u32, empty: JsValue, f: impl FnOnce(&Mount) -> JsValue) -> JsValue {
    rt.plugin(|s| s.mounts.get(id).map(f)).unwrap_or(empty)
}

fn with_ledgers(
    rt: &Rt<'_>,
    id: u32,
    f: impl FnOnce(&mut Ledger<InspectReport>, &mut Ledger<Violation>),
) {
    let ledgers = rt.plugin(|s| {
        let m = s.mounts.get(id)?;
        Some((m.inspect_ledger.clone(), m.inbox_ledger.clone()))
    });
    if let Some((inspect, inbox)) = ledgers {
        exclusive(&inspect, |a| exclusive(&inbox, |b| f(a, b)));
    }
}

fn install_inbox(rt: &Rt<'_>, id: u32) -> Result<(), Error> {
    let Some((config, ctx, records, create, warn, owner)) = rt.plugin(|s| {
        let m = s.mounts.get(id)?;
        Some((
            m.config.inbox,
            m.ctx.clone(),
            inbox::Records {
                ledger: m.inbox_ledger.clone(),
                sightings: m.sightings.clone(),
            },
            m.create_user_message.clone(),
            m.warn.clone(),
            m.record.clone(),
        ))
    }) else {
        return Ok(());
    };
    let on = bound_on(&ctx);
    let guard = inbox::install(rt, config, records, &on, create, warn, &owner)?;
    rt.plugin(|s| {
        if let Some(m) = s.mounts.get_mut(id) {
            m.inbox_guard = Some(guard);
        }
    });
    Ok(())
}

/// `ctx.on.bind(ctx)`, or `undefined` for a context without events.
fn bound_on(ctx: &JsValue) -> JsValue {
    get_fn(ctx, "on").map_or(JsValue::UNDEFINED, |on| on.bind0(ctx).into())
}

/// The registry appeared in `sub` (the injected sub-context): attach the mount
/// to it (the inspect half when enabled, the provider when either half is), as
/// one effect of the sub-fiber.
fn attach(rt: &Rt<'_>, mount: u32, sub: &JsValue) {
    let Some(registry) = get(sub, "cordisInspect").map(|r| original_of(&r)) else {
        return;
    };
    let Some(record) = rt.plugin(|s| s.mounts.get(mount).map(|m| m.record.clone())) else {
        return;
    };
    let id = rt.next_id();
    rt.plugin(|s| {
        if let Some(m) = s.mounts.get_mut(mount) {
            m.attachments.push(id);
        }
        s.attachments.insert(
            id,
            Attachment {
                mount,
                sub: sub.clone(),
                registry,
                guard: None,
                unregister: None,
            },
        );
    });
    fit(rt, id);
    let none = JsValue::UNDEFINED;
    let effect = rt.method(id, Role::Attach, &none, &none, false);
    let label = "harness-guard: cordisInspect client-query guard and HarnessGuard provider";
    let registered = get_fn(sub, "effect")
        .and_then(|f| call_with(&f, sub, &[&effect, &label.into()]).ok())
        .inspect(|disposer| hold(&record, disposer));
    if registered.is_none() {
        detach(rt, id);
    }
}

/// Make a registry attachment match its mount's config: the inspect guard
/// installed while the inspect half is enabled (a live config change reaches it
/// in place), and the provider registered while either half is.
fn fit(rt: &Rt<'_>, id: u32) {
    let Some((mount, registry, sub, guard, registered)) = rt.plugin(|s| {
        let a = s.attachments.get(id)?;
        Some((
            a.mount,
            a.registry.clone(),
            a.sub.clone(),
            a.guard,
            a.unregister.is_some(),
        ))
    }) else {
        return;
    };
    let Some((config, ledger, warn, validate, record)) = rt.plugin(|s| {
        let m = s.mounts.get(mount)?;
        Some((
            m.config,
            m.inspect_ledger.clone(),
            m.warn.clone(),
            m.validate.clone(),
            m.record.clone(),
        ))
    }) else {
        return;
    };
    let say = |text: &str| {
        if let Some(warn) = &warn {
            emit(warn, "", text);
        }
    };
    match (config.inspect.enabled, guard) {
        (true, Some(guard)) => inspect::reconfigure(guard, config.inspect),
        (true, None) => {
            let sink = inspect::Sink {
                ledger,
                warn: warn.clone(),
                on_report: None,
                validate,
            };
            match inspect::install(
                rt,
                &registry,
                config.inspect,
                sink,
                &bound_on(&sub),
                &record,
            ) {
                Ok(Some(guard)) => rt.plugin(|s| {
                    if let Some(a) = s.attachments.get_mut(id) {
                        a.guard = Some(guard);
                    }
                    if let Some(m) = s.mounts.get_mut(mount) {
                        m.inspect_guards.push(guard);
                    }
                }),
                Ok(None) => {}
                Err(error) => say(&format!("inspect half not installed: {error}")),
            }
        }
        (false, Some(guard)) => uninstall_inspect(rt, id, mount, guard),
        (false, None) => {}
    }
    match (config.inspect.enabled || config.inbox.enabled, registered) {
        (true, false) => {
            let unregister =
                register_provider(rt, mount, &registry, &config).unwrap_or_else(|error| {
                    say(&format!(
                        "HarnessGuard inspect provider not registered: {error}"
                    ));
                    None
                });
            if let Some(unregister) = &unregister {
                hold(&record, unregister);
            }
            rt.plugin(|s| {
                if let Some(a) = s.attachments.get_mut(id) {
                    a.unregister = unregister;
                }
            });
        }
        (false, true) => {
            let unregister = rt.plugin(|s| s.attachments.get_mut(id)?.unregister.take());
            if let Some(unregister) = unregister {
                let _ = unregister.call0(&JsValue::UNDEFINED);
                release(&record, &unregister);
            }
        }
        _ => {}
    }
}

/// Take the inspect guard off an attachment (its flights end as disposed).
fn uninstall_inspect(rt: &Rt<'_>, id: u32, mount: u32, guard: u32) {
    rt.plugin(|s| {
        if let Some(a) = s.attachments.get_mut(id) {
            a.guard = None;
        }
        if let Some(m) = s.mounts.get_mut(mount) {
            m.inspect_guards.retain(|g| *g != guard);
        }
    });
    inspect::dispose(guard);
}

fn detach(rt: &Rt<'_>, id: u32) {
    let Some(attachment) = rt.plugin(|s| s.attachments.remove(id)) else {
        return;
    };
    rt.plugin(|s| {
        if let Some(m) = s.mounts.get_mut(attachment.mount) {
            m.attachments.retain(|a| *a != id);
        }
    });
    if let Some(guard) = attachment.guard {
        uninstall_inspect(rt, id, attachment.mount, guard);
    }
    if let Some(unregister) = attachment.unregister {
        let _ = unregister.call0(&JsValue::UNDEFINED);
        if let Some(record) =
            rt.plugin(|s| s.mounts.get(attachment.mount).map(|m| m.record.clone()))
        {
            release(&record, &unregister);
        }
    }
}

/// Register the `HarnessGuard` provider; returns its disposer.
fn register_provider(
    rt: &Rt<'_>,
    mount: u32,
    registry: &JsValue,
    config: &Config,
) -> Result<Option<Function>, String> {
    let Some(register) = get_fn(registry, "register") else {
        return Ok(None);
    };
    let manifest =
        js_sys::JSON::parse(provider::MANIFEST).map_err(|_| "its manifest".to_owned())?;
    let fallback = object(&[
        ("status", &failed_status(&config.inbox)),
        ("reports", &object(&[("reports", &Array::new().into())])),
        (
            "violations",
            &object(&[("violations", &Array::new().into())]),
        ),
    ]);
    let query = rt.method(mount, Role::Provider, &JsValue::UNDEFINED, &fallback, true);
    let registration = object(&[("manifest", &manifest), ("query", &query.into())]);
    let disposer = register.call1(registry, &registration).map_err(|e| {
        get_string(&e, "message").unwrap_or_else(|| "the registry refused it".into())
    })?;
    Ok(disposer.dyn_into::<Function>().ok())
}

/// The fault facts the supervisor keeps: recoveries, the last fault, whether it gave up.
struct Faults {
    recoveries: u32,
    last_fault: Option<LastFault>,
    gave_up: bool,
}

fn faults() -> Faults {
    let facts = fault_facts();
    let last_fault = get(&facts, "lastFault")
        .filter(JsValue::is_object)
        .map(|f| LastFault {
            point: get_string(&f, "point").unwrap_or_default(),
            at: get(&f, "at").and_then(|a| a.as_f64()).unwrap_or(0.0),
        });
    Faults {
        recoveries: get(&facts, "recoveries")
            .and_then(|r| r.as_f64())
            .map_or(0, to_index),
        last_fault,
        gave_up: get(&facts, "gaveUp").is_some_and(|g| g.is_truthy()),
    }
}

/// A reader of a mount's status and its ledgers (see [`with_status`]).
type StatusReader<'f> =
    dyn Fn(&Status<'_>, &Ledger<InspectReport>, &Ledger<Violation>) -> JsValue + 'f;

/// `f` of the live mount's status, its ledgers borrowed; `None` for a mount that
/// is gone. (`f` is a `dyn`: the status is made by one copy of this function for
/// every reader.)
fn with_status(rt: &Rt<'_>, mount: u32, f: &StatusReader<'_>) -> Option<JsValue> {
    let faults = faults();
    let in_flight = inspect::in_flight().0;
    rt.plugin(|s| {
        let m = s.mounts.get(mount)?;
        let inspect_config = m
            .inspect_guards
            .first()
            .and_then(|g| inspect::config_of(*g));
        let inspect = m
            .inspect_ledger
            .try_borrow()
            .unwrap_or_else(|_| super::fault::broken());
        let inbox = m
            .inbox_ledger
            .try_borrow()
            .unwrap_or_else(|_| super::fault::broken());
        let status = Status {
            version: env!("CARGO_PKG_VERSION"),
            failed: None,
            recoveries: faults.recoveries,
            last_fault: faults.last_fault,
            gave_up: faults.gave_up,
            inspect: InspectStatus::new(
                inspect_config.as_ref(),
                u32::try_from(in_flight).unwrap_or(u32::MAX),
                inspect.counts(),
            ),
            inbox: InboxStatus::new(&m.config.inbox, m.inbox_guard.is_some(), inbox.counts()),
        };
        Some(f(&status, &inspect, &inbox))
    })
}

/// A service's `status()`: what the provider's `status` answers.
fn status_of(rt: &Rt<'_>, mount: u32) -> Option<JsValue> {
    with_status(rt, mount, &|status, _, _| to_js(status))
}

/// The provider's answer to `method(input)` asked by `options.agent`.
fn answer(
    rt: &Rt<'_>,
    mount: u32,
    method: &JsValue,
    input: &JsValue,
    options: &JsValue,
) -> Result<JsValue, Error> {
    let method = method
        .as_string()
        .and_then(|m| Method::of(&m))
        .ok_or(Error::InvalidInput {
            field: "method",
            value: "an unknown method".into(),
            expected: "status, reports or violations",
        })?;
    let session = session_of(options);
    let limit = match method {
        Method::Status => 0,
        _ => provider::limit(&raw_config(input))?,
    };
    let answer = with_status(rt, mount, &|status, inspect, inbox| match method {
        Method::Status => to_js(status),
        Method::Reports => to_js(&provider::Reports {
            reports: provider::bounded(inspect.latest_of(&session, limit)),
        }),
        Method::Violations => to_js(&provider::Violations {
            violations: provider::bounded(inbox.latest_of(&session, limit)),
        }),
    });
    Ok(answer.unwrap_or_else(|| match method {
        Method::Reports => object(&[("reports", &Array::new().into())]),
        _ => object(&[("violations", &Array::new().into())]),
    }))
}

/// The session of the agent a provider query or a command invocation names (`{ agent }`).
fn session_of(options: &JsValue) -> String {
    get(options, "agent")
        .and_then(|a| get_string(&a, "id"))
        .unwrap_or_default()
}

/// The command registry appeared in `sub`: register `/harness-guard` as an effect
/// of that sub-fiber (removed with it, or with the mount).
fn register_command(rt: &Rt<'_>, mount: u32, sub: &JsValue) {
    let Some(commands) = get(sub, "commands") else {
        return;
    };
    let Some(record) = rt.plugin(|s| s.mounts.get(mount).map(|m| m.record.clone())) else {
        return;
    };
    let none = JsValue::UNDEFINED;
    let fallback = object(&[
        ("kind", &"error".into()),
        ("text", &Error::StoodDown.to_string().into()),
    ]);
    let handler = rt.method(mount, Role::Command, &none, &fallback, false);
    let definition = object(&[
        ("name", &crate::command::NAME.into()),
        ("description", &crate::command::DESCRIPTION.into()),
        ("handler", &handler.into()),
    ]);
    match get_fn(&commands, "register").map(|r| r.call1(&commands, &definition)) {
        Some(Ok(disposer)) => hold(&record, &disposer),
        Some(Err(error)) => {
            let warn = rt.plugin(|s| s.mounts.get(mount)?.warn.clone());
            if let Some(warn) = warn {
                let reason = get_string(&error, "message").unwrap_or_else(|| "refused".into());
                emit(
                    &warn,
                    "",
                    &format!(
                        "/{} command not registered: {}",
                        crate::command::NAME,
                        crate::echo::escape(&reason)
                    ),
                );
            }
        }
        None => {}
    }
}

/// `/harness-guard`: the status and the asking session's latest records, as text.
fn command(rt: &Rt<'_>, mount: u32, invocation: &JsValue) -> JsValue {
    let session = session_of(invocation);
    let text = with_status(rt, mount, &|status, inspect, inbox| {
        crate::command::text(
            status,
            &inspect.latest_of(&session, crate::command::LATEST),
            &inbox.latest_of(&session, crate::command::LATEST),
        )
        .into()
    })
    .unwrap_or_else(|| "harness-guard: this mount is gone".into());
    object(&[("kind", &"success".into()), ("text", &text)])
}
