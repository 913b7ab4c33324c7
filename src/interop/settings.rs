//! A live config change: a row edit applied in place, a refused one said, and the host's settings namespace.
//!
//! A running mount's config changes in two ways, and both end in the mount's
//! [`Mount::reconfigure`] (no restart: a query already waiting keeps its
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

use super::de::raw_config;
use super::instance::{Instance, Role};
use super::js::{get, get_fn, host_call, object, release, to_index};
use crate::config::{self, Config};
use crate::error::Error;

/// The settings namespace (the plugin's name).
const NAMESPACE: &str = "harness-guard";
/// cordis 4 `FiberState.ACTIVE`: a config resolved for a fiber in this state is a live change.
const ACTIVE: f64 = 2.0;

#[wasm_bindgen(module = "/src/interop/settings.js")]
extern "C" {
    #[wasm_bindgen(js_name = makeHooks)]
    fn make_hooks(update: &Function, check: &Function, fiber: &JsValue) -> Array;
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
    #[wasm_bindgen(js_name = bindLink)]
    fn bind_link(method: &Function, link: u32) -> Function;
}

/// What a settings link asks of the mount it belongs to (the mount, plugin.rs,
/// hands itself over: this module never imports it).
pub(super) trait Mount {
    /// The mount's id (its trampolines' tokens carry it).
    fn id(&self) -> u32;
    /// The mount's context and record, while it lives.
    fn parts(&self) -> Option<(JsValue, JsValue)>;
    /// `f` of the mount's current link, while the mount lives.
    fn with_link<R>(&self, f: impl FnOnce(&mut Option<Link>) -> R) -> Option<R>;
    /// A warn line through the mount's logger (within the per-session bound).
    fn warn(&self, text: &str);
    /// Apply `next` to the running mount in place.
    fn reconfigure(&self, next: Config) -> Result<(), Error>;
}

/// A mount's current registration of its namespace, from its injection on. Its
/// id travels with what its trampolines are handed (`bindLink`): what an ended
/// link says afterwards is not heard.
pub(super) struct Link {
    id: u32,
    /// The `ctx.inject(['settings'], …)` handle (its disposal ends the link).
    handle: Option<JsValue>,
    /// The injected sub-context, once the service appeared.
    sub: Option<JsValue>,
    /// Whether the namespace is registered and its value heard.
    registered: bool,
}

/// The hooks of a live config change, and the settings link where the host
/// offers settings; every registration's disposer is held by `record`.
pub(super) fn wire(
    rt: &Instance,
    mount: &impl Mount,
    ctx: &JsValue,
    record: &JsValue,
) -> Result<(), Error> {
    let none = JsValue::UNDEFINED;
    let update = rt.method(mount.id(), Role::Update, &none, &none, false);
    let check = rt.method(mount.id(), Role::ConfigCheck, &none, &none, false);
    let fiber = get(ctx, "fiber").unwrap_or(JsValue::UNDEFINED);
    let hooks = make_hooks(&update, &check, &fiber);
    host_call(
        ctx,
        record,
        "on",
        &[&"internal/update".into(), &hooks.get(0)],
    )?;
    // First in the waterfall, so it sees the config as every other listener left it.
    let prepend = object(&[("prepend", &JsValue::TRUE)]);
    host_call(
        ctx,
        record,
        "on",
        &[&"internal/config".into(), &hooks.get(1), &prepend],
    )?;
    if schema_of(record).is_some() {
        link(rt, mount, ctx, record)?;
    }
    Ok(())
}

/// A settings trampoline's call, for mount `id` (`Settings` and `SettingsChange`
/// are handed their link's id first).
pub(super) fn route(
    rt: &Instance,
    mount: &impl Mount,
    role: Role,
    args: &Array,
) -> Result<JsValue, Error> {
    let link = || args.get(0).as_f64().map_or(0, to_index);
    Ok(match role {
        Role::Update => row_edit(rt, mount, &args.get(0))?.into(),
        Role::ConfigCheck => {
            if args.get(1).as_f64() == Some(ACTIVE) {
                if let Err(error) = config::parse(&raw_config(&args.get(0))) {
                    refused(mount, &error);
                }
            }
            JsValue::UNDEFINED
        }
        Role::Settings => attach(rt, mount, link(), &args.get(1)),
        Role::SettingsChange => {
            changed(mount, link(), &args.get(1), args.get(2).as_string());
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
fn refused(mount: &impl Mount, error: &Error) {
    let host = mount.parts().and_then(|(_, record)| get(&record, "host"));
    if let Some(say) = host.as_ref().and_then(|h| get_fn(h, "refused")) {
        let _ = say.call1(&JsValue::UNDEFINED, &error.to_string().into());
    }
}

/// Inject the settings service for a new link of `mount` (the current one from now on).
fn link(rt: &Instance, mount: &impl Mount, ctx: &JsValue, record: &JsValue) -> Result<(), Error> {
    let id = rt.next_id();
    let link = Link {
        id,
        handle: None,
        sub: None,
        registered: false,
    };
    mount.with_link(|l| *l = Some(link));
    let none = JsValue::UNDEFINED;
    let services: JsValue = Array::of1(&"settings".into()).into();
    let attach = bind_link(
        &rt.method(mount.id(), Role::Settings, &none, &none, false),
        id,
    );
    let handle = host_call(ctx, record, "inject", &[&services, &attach.into()])?;
    mount.with_link(|l| {
        if let Some(l) = l.as_mut().filter(|l| l.id == id) {
            l.handle = Some(handle);
        }
    });
    Ok(())
}

/// End `mount`'s current link (its registration goes with its sub-fiber) and start a new one.
fn relink(rt: &Instance, mount: &impl Mount, ctx: &JsValue, record: &JsValue) -> Result<(), Error> {
    let old = mount
        .with_link(|l| l.take().and_then(|l| l.handle))
        .flatten();
    if let Some(old) = old {
        if let Some(dispose) = get_fn(&old, "dispose") {
            let _ = dispose.call0(&old);
        }
        release(record, &old);
    }
    link(rt, mount, ctx, record)
}

/// `f` of `mount`'s link `id`, while it is the current one.
fn current<R>(mount: &impl Mount, id: u32, f: impl FnOnce(&mut Link) -> R) -> Option<R> {
    mount
        .with_link(|l| l.as_mut().filter(|l| l.id == id).map(f))
        .flatten()
}

/// The settings service appeared in `sub`: register the namespace over the
/// row's config. Returns the registration's promise (cordis waits for it).
fn attach(rt: &Instance, mount: &impl Mount, link: u32, sub: &JsValue) -> JsValue {
    let Some(record) = current(mount, link, |l| l.sub = Some(sub.clone()))
        .and_then(|()| mount.parts())
        .map(|(_, record)| record)
    else {
        return JsValue::UNDEFINED;
    };
    let Some(schema) = schema_of(&record) else {
        return JsValue::UNDEFINED;
    };
    let base = get(&record, "config").unwrap_or(JsValue::UNDEFINED);
    let none = JsValue::UNDEFINED;
    let changed = bind_link(
        &rt.method(mount.id(), Role::SettingsChange, &none, &none, false),
        link,
    );
    link_settings(sub, NAMESPACE, &schema, &base, &changed)
}

/// What a link says: a resolved value, its end (`undefined`), or a refused registration.
fn changed(mount: &impl Mount, link: u32, value: &JsValue, refusal: Option<String>) {
    let registered = refusal.is_none() && !value.is_undefined();
    if current(mount, link, |l| l.registered = registered).is_none() {
        // An ended link: what it says is not heard.
        return;
    }
    let Some((ctx, record)) = mount.parts() else {
        return;
    };
    if let Some(refusal) = refusal {
        mount.warn(&format!(
                "settings namespace {NAMESPACE} not registered, the guard runs with its row's config: {}",
                crate::echo::escape(&refusal)
            ),
        );
        return;
    }
    let source = if value.is_undefined() {
        // The service went away, or the mount is going: the row's config, unless unloading.
        let running = get(&ctx, "fiber").and_then(|f| get(&f, "state")?.as_f64()) == Some(ACTIVE);
        if !running {
            return;
        }
        get(&record, "config").unwrap_or_default()
    } else {
        value.clone()
    };
    let next = config::parse(&raw_config(&source));
    let applied = next.and_then(|next| mount.reconfigure(next));
    if let Err(error) = applied {
        mount.warn(&format!("settings change not applied: {error}"));
    }
}

/// A row edit reached the running mount (validated by cordis): apply it in
/// place. With the namespace registered, the guard runs with the user's section
/// over the new row: refused (said, and thrown back to cordis, so the running
/// config stays) when that is invalid. `false`: the mount is gone, cordis goes on.
fn row_edit(rt: &Instance, mount: &impl Mount, config: &JsValue) -> Result<bool, Error> {
    let Some((ctx, record)) = mount.parts() else {
        return Ok(false);
    };
    let row = config::parse(&raw_config(config))?;
    // The current link, once the service appeared: its sub-context, and whether
    // the namespace is registered (a link still waiting for the service
    // registers over the row's config as it stands when the service comes).
    let attached = mount
        .with_link(|l| {
            l.as_ref()
                .and_then(|l| Some((l.sub.clone()?, l.registered)))
        })
        .flatten();
    let has_link = attached.is_some();
    let registered = attached.and_then(|(sub, registered)| registered.then_some(sub));
    let next: Config = match registered {
        Some(sub) => match layered_over(&sub, NAMESPACE, config) {
            Ok(layered) if !layered.is_undefined() => {
                config::parse(&raw_config(&layered)).inspect_err(|error| refused(mount, error))?
            }
            _ => row,
        },
        None => row,
    };
    let _ = Reflect::set(&record, &"config".into(), config);
    mount.reconfigure(next)?;
    if has_link {
        relink(rt, mount, &ctx, &record)?;
    }
    Ok(true)
}
