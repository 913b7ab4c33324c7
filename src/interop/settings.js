// The JavaScript half of a live config change (see settings.rs): the hooks cordis
// calls when a mount's config changes, and the mechanics of the settings
// namespace. Rust decides; this file carries it out and decides nothing.

/** The mount's two hooks: `[internal/update hook, internal/config listener]`. */
export function makeHooks(update, check, fiber) {
  return [makeUpdateHook(update), makeConfigCheck(check, fiber)]
}

/**
 * The mount's `internal/update` hook (cordis runs it, `this` the mount's fiber,
 * with the new config already validated, before it would restart the plugin).
 * `method(config)` is Rust's: `true` when it applied the config in place, and
 * then the restart is left out and the fiber keeps the config, as the restart's
 * own step would have; anything else lets cordis go on (restart).
 */
function makeUpdateHook(method) {
  return function harnessGuardUpdate(config, noSave, next) {
    if (method(config) !== true) return next()
    this.config = config
  }
}

/**
 * The `internal/config` listener (a waterfall every fiber's config resolution
 * runs through, `this` the fiber, or the handle `ctx.plugin()` returned when the
 * call came through it: an object whose prototype is the fiber). For the
 * mount's own `fiber`, once the config is final, `method(value, state)` is
 * Rust's look at it before cordis validates it: Rust tells a live change (the
 * fiber running) from an activation.
 */
function makeConfigCheck(method, fiber) {
  return function harnessGuardConfigCheck(config, next) {
    const value = next()
    if (fiber !== undefined && (this === fiber || Object.getPrototypeOf(this) === fiber)) method(value, this.state)
    return value
  }
}

/** `method` handed the settings link `link` before the caller's arguments. */
export function bindLink(method, link) {
  return (...args) => method(link, ...args)
}

/** Turns of the event loop a new link waits for this mount's previous registration to go. */
const FREE_TURNS = 3
const turn = () => new Promise((resolve) => setImmediate(resolve))
const messageOf = (error) => {
  try {
    return error instanceof Error ? error.message : String(error)
  } catch {
    return 'an unprintable error'
  }
}

/**
 * Register namespace `ns` on `sub.settings` (the sub-context cordis started when
 * the service appeared) with `schema` and the row's config as `base`, as effects
 * of `sub`. `changed` hears every resolved value (the first at once), then
 * `(undefined)` when the link goes away (the service, the mount, or a relink),
 * or `(undefined, message)` when the registration was refused (an invalid
 * stored section, the namespace taken). The previous link of the same mount
 * (a relink, a recovery) lets go of the namespace within a turn of the event
 * loop: its disposal runs on microtasks, so the new one waits for it.
 */
export async function linkSettings(sub, ns, schema, base, changed) {
  let scope
  try {
    for (let i = 0; i < FREE_TURNS && sub.settings.get(ns) !== undefined; i++) await turn()
    scope = sub.settings.register(ns, schema, base === undefined ? {} : { base })
  } catch (error) {
    changed(undefined, messageOf(error))
    return
  }
  const unwatch = scope.watch((next) => {
    changed(next)
  })
  sub.effect(() => () => {
    unwatch()
    changed(undefined)
  }, `harness-guard: settings namespace ${ns}`)
  changed(scope.get())
}

/** A plain data object, as the settings service reads one. */
const isPlain = (value) => {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

/**
 * The host's layering (`@deepseek-ai/dsh-settings`: plain objects merge
 * recursively, any other value replaces the lower layer wholesale).
 */
function layered(under, over) {
  if (over === undefined) return under
  if (!isPlain(under) || !isPlain(over)) return over
  const merged = { ...under }
  for (const [key, value] of Object.entries(over)) merged[key] = key in merged ? layered(merged[key], value) : value
  return merged
}

/**
 * What namespace `ns` would resolve with `base` (a config object) under the
 * user's section as it stands (before the schema's defaults), or `undefined`
 * while it is not registered.
 */
export function layeredOver(sub, ns, base) {
  const described = sub.settings.describe().find((row) => row.ns === ns)
  return described === undefined ? undefined : layered(base, described.user)
}
