//! A live config change: a row edit applied in place, a refused one said, and the host's settings namespace.
//!
//! A running mount's config changes in two ways, and both end in
//! [`plugin::reconfigure`] (no restart: a query already waiting keeps its
//! deadline, the records stay):
//!
//! - **A row edit** (the loader's, or anyone's `fiber.update(config)`): cordis
//!   resolves the new config through the `internal/config` waterfall, validates
//!   it (`Config['~standard'].validate`), then runs the `internal/update`
//!   waterfall before it would restart the plugin. The mount listens to the
//!   first, so a change the mount refuses is said once as a process warning
//!   (the running config stays; a config resolved while the fiber only
//!   activates is not a change), and hooks the second, where it applies the
//!   validated config in place and leaves the restart out.
//! - **The settings namespace** `harness-guard`, where the host's settings
//!   service exists (`ctx.inject(['settings'], …)`): registered with the
//!   package's schema (`Config`'s checks; a refused settings change is said the
//!   same way) and the row's config as the composition `base`; the resolved
//!   value (schema defaults, then the row, then the user's section) is the config
//!   the guard runs with, and each change of it is applied in place. When the
//!   service goes away the row's config applies again. A row edit while a
//!   namespace is registered is checked under the user's section first (the
//!   user's section wins, so that is what the guard would run with), then the
//!   namespace is registered again over the new row (a link per registration:
//!   what an old one says afterwards is not heard).

use js_sys::{Array, Function, Reflect};
use wasm_bindgen::prelude::*;

use super::plugin::{self, host_call};
use super::runtime::{Role, Runtime};
use super::{emit, get, get_fn, object, raw_config, release};
use crate::config::{self, Config};
use crate::error::Error;
use crate::idmap::IdMap;

/// The settings namespace (the plugin's name).
const NAMESPACE: &str = "harness-guard";
/// cordis 4 `FiberState.ACTIVE`: a config resolved for a fiber in this state is a live change.
const ACTIVE: f64 = 2.0;

#[wasm_bindgen(module = "/src/interop/settings.js")]
extern "C" {
    #[wasm_bindgen(js_name = makeUpdateHook)]
    fn make_update_hook(method: &Function) -> Function;
    #[wasm_bindgen(js_name = makeConfigCheck)]
    fn make_config_check(method: &Function, fiber: &JsValue) -> Function;
    #[wasm_bindgen(js_name = linkSettings)]
    fn link_settings(
        sub: &JsValue,
        ns: &str,
        schema: &JsValue,
        base: &JsValue,
        changed: &Function,
    ) -> JsValue;
    #[wasm_bindgen(js_name = layeredOver, catch)]
    fn layered_over(sub: &JsValue, ns: &str, base: &JsValue) -> Result<JsValue, JsValue>;
}

/// One registration of a mount's namespace, from its injection on.
struct Link {
    mount: u32,
    /// The `ctx.inject(['settings'], …)` handle (its disposal ends the link).
    handle: Option<JsValue>,
    /// The injected sub-context, once the service appeared.
    sub: Option<JsValue>,
    /// Whether the namespace is registered and its value heard.
    registered: bool,
}

/// Settings links by id, and each mount's current one.
#[derive(Default)]
pub(crate) struct State {
    links: IdMap<Link>,
    current: IdMap<u32>,
}

impl State {
    /// The mount went away: its link with it.
    pub(super) fn forget(&mut self, mount: u32) {
        if let Some(link) = self.current.remove(mount) {
            self.links.remove(link);
        }
    }
}

/// The hooks of a live config change, and the settings link where the host
/// offers settings; every registration's disposer is held by `record`.
pub(super) fn wire(rt: &Runtime, mount: u32, ctx: &JsValue, record: &JsValue) -> Result<(), Error> {
    let none = JsValue::UNDEFINED;
    let update = make_update_hook(&rt.method(mount, Role::Update, &none, &none, false));
    host_call(
        ctx,
        record,
        "on",
        &[&"internal/update".into(), &update.into()],
    )?;
    if let Some(fiber) = get(ctx, "fiber").filter(JsValue::is_object) {
        let check = rt.method(mount, Role::ConfigCheck, &none, &none, false);
        let listener = make_config_check(&check, &fiber);
        // First in the waterfall, so it sees the config as every other listener left it.
        let prepend = object(&[("prepend", &JsValue::TRUE)]);
        host_call(
            ctx,
            record,
            "on",
            &[&"internal/config".into(), &listener.into(), &prepend],
        )?;
    }
    if schema_of(record).is_some() {
        link(rt, mount, ctx, record)?;
    }
    Ok(())
}

/// A settings trampoline's call: `id` is the mount (`Update`, `ConfigCheck`) or the link.
pub(super) fn route(rt: &Runtime, id: u32, role: Role, args: &Array) -> Result<JsValue, Error> {
    Ok(match role {
        Role::Update => row_edit(rt, id, &args.get(0))?.into(),
        Role::ConfigCheck => {
            if args.get(1).as_f64() == Some(ACTIVE) {
                if let Err(error) = config::parse(&raw_config(&args.get(0))) {
                    refused(rt, id, &error);
                }
            }
            JsValue::UNDEFINED
        }
        Role::Settings => attach(rt, id, &args.get(0)),
        Role::SettingsChange => {
            changed(rt, id, &args.get(0), args.get(1).as_string());
            JsValue::UNDEFINED
        }
        _ => JsValue::UNDEFINED,
    })
}

/// The schema the package hands over for the namespace (`host.settingsSchema`).
fn schema_of(record: &JsValue) -> Option<JsValue> {
    get(&get(record, "host")?, "settingsSchema").filter(|s| !s.is_undefined())
}

/// Say a refused live change of mount `mount` (`host.refused`: a process warning).
fn refused(rt: &Runtime, mount: u32, error: &Error) {
    let host = plugin::parts(rt, mount).and_then(|(_, record)| get(&record, "host"));
    if let Some(say) = host.as_ref().and_then(|h| get_fn(h, "refused")) {
        let _ = say.call1(&JsValue::UNDEFINED, &error.to_string().into());
    }
}

/// Inject the settings service for a new link of `mount` (the current one from now on).
fn link(rt: &Runtime, mount: u32, ctx: &JsValue, record: &JsValue) -> Result<(), Error> {
    let id = rt.next_id();
    rt.plugin(|s| {
        let link = Link {
            mount,
            handle: None,
            sub: None,
            registered: false,
        };
        s.settings.links.insert(id, link);
        if let Some(old) = s.settings.current.insert(mount, id) {
            s.settings.links.remove(old);
        }
    });
    let none = JsValue::UNDEFINED;
    let services: JsValue = Array::of1(&"settings".into()).into();
    let attach = rt.method(id, Role::Settings, &none, &none, false);
    let handle = host_call(ctx, record, "inject", &[&services, &attach.into()])?;
    rt.plugin(|s| {
        if let Some(link) = s.settings.links.get_mut(id) {
            link.handle = Some(handle);
        }
    });
    Ok(())
}

/// End `mount`'s current link (its registration goes with its sub-fiber) and start a new one.
fn relink(rt: &Runtime, mount: u32, ctx: &JsValue, record: &JsValue) -> Result<(), Error> {
    let old = rt.plugin(|s| {
        let id = s.settings.current.remove(mount)?;
        s.settings.links.remove(id)?.handle
    });
    if let Some(old) = old {
        if let Some(dispose) = get_fn(&old, "dispose") {
            let _ = dispose.call0(&old);
        }
        release(record, &old);
    }
    link(rt, mount, ctx, record)
}

/// The link's mount, while the link is its mount's current one.
fn current(rt: &Runtime, link: u32) -> Option<u32> {
    rt.plugin(|s| {
        let mount = s.settings.links.get(link)?.mount;
        (s.settings.current.get(mount) == Some(&link)).then_some(mount)
    })
}

/// The settings service appeared in `sub`: register the namespace over the
/// row's config. Returns the registration's promise (cordis waits for it).
fn attach(rt: &Runtime, link: u32, sub: &JsValue) -> JsValue {
    let Some((_, record)) = current(rt, link).and_then(|mount| plugin::parts(rt, mount)) else {
        return JsValue::UNDEFINED;
    };
    let Some(schema) = schema_of(&record) else {
        return JsValue::UNDEFINED;
    };
    rt.plugin(|s| {
        if let Some(l) = s.settings.links.get_mut(link) {
            l.sub = Some(sub.clone());
        }
    });
    let base = get(&record, "config").unwrap_or(JsValue::UNDEFINED);
    let none = JsValue::UNDEFINED;
    let changed = rt.method(link, Role::SettingsChange, &none, &none, false);
    link_settings(sub, NAMESPACE, &schema, &base, &changed)
}

/// What a link says: a resolved value, its end (`undefined`), or a refused registration.
fn changed(rt: &Runtime, link: u32, value: &JsValue, refusal: Option<String>) {
    let Some(mount) = current(rt, link) else {
        // An ended link: what it says is not heard, and it is done.
        if value.is_undefined() {
            rt.plugin(|s| s.settings.links.remove(link));
        }
        return;
    };
    let Some((ctx, record)) = plugin::parts(rt, mount) else {
        return;
    };
    let registered = refusal.is_none() && !value.is_undefined();
    rt.plugin(|s| {
        if let Some(l) = s.settings.links.get_mut(link) {
            l.registered = registered;
        }
    });
    if let Some(refusal) = refusal {
        warn(
            rt,
            mount,
            &format!(
                "settings namespace {NAMESPACE} not registered, the guard runs with its row's config: {}",
                crate::echo::escape(&refusal)
            ),
        );
        return;
    }
    let next = if value.is_undefined() {
        // The service went away, or the mount is going: the row's config, unless unloading.
        let running = get(&ctx, "fiber").and_then(|f| get(&f, "state")?.as_f64()) == Some(ACTIVE);
        if !running {
            return;
        }
        config::parse(&raw_config(&get(&record, "config").unwrap_or_default()))
    } else {
        config::parse(&raw_config(value))
    };
    let applied = next.and_then(|next| plugin::reconfigure(rt, mount, next));
    if let Err(error) = applied {
        warn(rt, mount, &format!("settings change not applied: {error}"));
    }
}

/// A warn line through the mount's logger.
fn warn(rt: &Runtime, mount: u32, text: &str) {
    let logger = plugin::parts(rt, mount).and_then(|(_, record)| get(&record, "logger"));
    if let Some(warn) = logger
        .as_ref()
        .and_then(|l| get_fn(l, "warn").map(|w| w.bind0(l)))
    {
        emit(rt, &warn, "", text);
    }
}

/// A row edit reached the running mount (validated by cordis): apply it in
/// place. With the namespace registered, the guard runs with the user's section
/// over the new row: refused (said, and thrown back to cordis, so the running
/// config stays) when that is invalid. `false`: the mount is gone, cordis goes on.
fn row_edit(rt: &Runtime, mount: u32, config: &JsValue) -> Result<bool, Error> {
    let Some((ctx, record)) = plugin::parts(rt, mount) else {
        return Ok(false);
    };
    let row = config::parse(&raw_config(config))?;
    // The current link, once the service appeared: its sub-context, and whether
    // the namespace is registered (a link still waiting for the service
    // registers over the row's config as it stands when the service comes).
    let attached = rt.plugin(|s| {
        let link = s.settings.links.get(*s.settings.current.get(mount)?)?;
        Some((link.sub.clone()?, link.registered))
    });
    let has_link = attached.is_some();
    let registered = attached.and_then(|(sub, registered)| registered.then_some(sub));
    let next: Config = match registered {
        Some(sub) => match layered_over(&sub, NAMESPACE, config) {
            Ok(layered) if !layered.is_undefined() => {
                let value = get(&layered, "value").unwrap_or_default();
                config::parse(&raw_config(&value)).inspect_err(|error| refused(rt, mount, error))?
            }
            _ => row,
        },
        None => row,
    };
    let _ = Reflect::set(&record, &"config".into(), config);
    plugin::reconfigure(rt, mount, next)?;
    if has_link {
        relink(rt, mount, &ctx, &record)?;
    }
    Ok(true)
}
