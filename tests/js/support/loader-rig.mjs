// Test rig: mount plugins through the real cordis loader and the real
// dsh-app-boot profile composition, offline, and look inside the result.
//
// Every host package is imported from the project directory `cwd` (default:
// the pinned host project this file lives in), so a test that installs the
// packed plugin into a temporary consumer project drives that project's own
// copies and never mixes two cordis instances. See LOADER-FINDINGS.md.

import { spawnSync } from 'node:child_process'
import { cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

/** The package under test, its plugin row id, and the markers it writes and reads. */
export const NAME = 'cordis-plugin-harness-guard'
export const ID = 'harness-guard'
export const PATCHED = Symbol.for('harness-guard.patched')
export const ORIGINAL = Symbol.for('cordis.original')
/** What a plugin passes to `agent.followup` in the poisoned-inbox scenarios. */
export const BARE = 'a bare string from a plugin'

/**
 * The host project the suites run against: the nearest directory at or above
 * the suites that holds a package.json. That is tests/js (the pinned rig), or
 * tests/rig-next when `make test-js-next` runs a copy of the suites from
 * tests/rig-next/suite.
 */
export const HOST_DIR = findHostDir(fileURLToPath(new URL('..', import.meta.url)).replace(/\/$/, ''))

function findHostDir(start) {
  for (let dir = start; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir
    if (dirname(dir) === dir) throw new Error(`no package.json at or above ${start}`)
  }
}

/** Cordis 4 `FiberState` values (a `const enum` upstream: no runtime object). */
export const FiberState = Object.freeze({ PENDING: 0, LOADING: 1, ACTIVE: 2, FAILED: 3, DISPOSED: 4, UNLOADING: 5 })
const STATE_NAMES = Object.fromEntries(Object.entries(FiberState).map(([k, v]) => [v, k]))

const EFFECT = Symbol.for('cordis.effect')

/** True when this process can hand bare names to the loader's internal module loader. */
export const exposesInternals = process.execArgv.includes('--expose-internals')

// ---------------------------------------------------------------------------
// Host package resolution

const hostCache = new Map()

/**
 * Import a package as the project at `cwd` resolves it (its realpath, so
 * symlinked packages share one module instance with everything else).
 * @param {string} name - bare package specifier, e.g. '@deepseek-ai/cordis'.
 * @param {string} [cwd] - project directory whose node_modules to use.
 */
export async function importFrom(name, cwd = HOST_DIR) {
  const require = createRequire(join(resolve(cwd), 'package.json'))
  return import(pathToFileURL(require.resolve(name)).href)
}

/** The real host modules as seen from `cwd` (cached per directory). */
export async function loadHost(cwd = HOST_DIR) {
  const dir = resolve(cwd)
  if (!hostCache.has(dir)) {
    hostCache.set(dir, (async () => {
      const cordis = await importFrom('@deepseek-ai/cordis', dir)
      const loaderModule = await importFrom('@deepseek-ai/cordis-plugin-loader', dir)
      let appBoot
      try { appBoot = await importFrom('@deepseek-ai/dsh-app-boot', dir) } catch { appBoot = undefined }
      return { dir, cordis, Loader: loaderModule.default, loaderModule, appBoot }
    })())
  }
  return hostCache.get(dir)
}

// ---------------------------------------------------------------------------
// Logs

/**
 * Capture every cordis log record (all levels) as formatted text.
 * The exporter is put straight into the logger's exporter map, not through
 * `ctx.logger.exporter()` (a root-fiber effect), so it keeps recording while
 * the tree is being torn down.
 */
export function captureLogs(ctx, Logger) {
  const entries = []
  const exporter = {
    colors: false,
    levels: { default: 3 },
    export(message) {
      let text
      try { text = Logger.format(exporter, message) } catch (error) { text = String(message.args?.[0] ?? error) }
      entries.push({ type: message.type, name: message.name, text, at: message.ts })
    },
  }
  const key = Symbol('loader-rig')
  ctx.root.logger.exporters.set(key, exporter)
  return {
    entries,
    /** Records from `mark` (an index from `mark()`) on, optionally of some types. */
    since(mark = 0, types) {
      const list = entries.slice(mark)
      return types ? list.filter(e => types.includes(e.type)) : list
    },
    mark: () => entries.length,
    text: (types) => entries.filter(e => !types || types.includes(e.type)).map(e => `[${e.type}] ${e.name}: ${e.text}`).join('\n'),
    clear() { entries.length = 0 },
    detach() { ctx.root.logger.exporters.delete(key) },
  }
}

// ---------------------------------------------------------------------------
// Fibers, effects, listeners, services

/** The real Fiber behind a `ctx.plugin()` handle, a loader Entry or a Fiber. */
export function fiberOf(handle) {
  if (!handle) return undefined
  if (handle.loader && handle.options) return handle.fiber // loader Entry
  return handle.ctx?.fiber ?? handle // ctx.plugin() handle (Object.create(fiber)) or Fiber
}

/** Whether `fiber` is `top` or runs below it. */
export function isUnder(fiber, top) {
  for (let f = fiber; f; f = f.parent.fiber) {
    if (f === top) return true
    if (f.parent.fiber === f) return false
  }
  return false
}

/** Every live fiber in the registry (all plugins, all depths). */
export function allFibers(ctx) {
  const out = []
  for (const runtime of ctx.root.registry.values()) for (const fiber of runtime.fibers) out.push(fiber)
  return out
}

/** Fibers started below `fiber` (e.g. the `ctx.inject([...], fn)` sub-fibers), still registered. */
export function descendantsOf(ctx, fiber) {
  return allFibers(ctx).filter(f => f !== fiber && isUnder(f, fiber))
}

/**
 * Event listeners owned by `fiber` (and, with `deep`, its descendants).
 * Reads `ctx.root.events._hooks` (event name -> [{ ctx, callback, global, prepend }]);
 * a hook's owner is `hook.ctx.fiber`. Non-global `internal/update` listeners
 * live on the fiber itself (`fiber._hooks['internal/update']`) and are listed too.
 */
export function listenersOf(ctx, fiber, { deep = true } = {}) {
  const out = []
  const owns = (f) => deep ? isUnder(f, fiber) : f === fiber
  for (const name of Reflect.ownKeys(ctx.root.events._hooks)) {
    for (const hook of ctx.root.events._hooks[name]) {
      if (owns(hook.ctx.fiber)) out.push({ event: String(name), owner: hook.ctx.fiber.name, uid: hook.ctx.fiber.uid, global: !!hook.global })
    }
  }
  for (const f of [fiber, ...(deep ? descendantsOf(ctx, fiber) : [])]) {
    const local = f._hooks?.['internal/update']
    if (local?.length) out.push({ event: 'internal/update (fiber-local)', owner: f.name, uid: f.uid, count: local.length })
  }
  return out
}

/** Services whose providing fiber is `fiber` or below it. */
export function servicesOf(ctx, fiber) {
  const store = ctx.root.reflect.store
  return Reflect.ownKeys(store).map(k => store[k]).filter(impl => impl.fiber && isUnder(impl.fiber, fiber)).map(impl => impl.name)
}

function effectTree(meta) {
  return meta.children.length ? { label: meta.label, children: meta.children.map(effectTree) } : meta.label
}

/**
 * One picture of a fiber: lifecycle state, effects still registered on it
 * (labelled ones from `getEffects()`, plus the raw count of `_disposables`,
 * which also holds unlabelled disposers such as a function returned by
 * `apply`), sub-fibers, listeners and services.
 */
export function fiberReport(ctx, handle) {
  const fiber = fiberOf(handle)
  if (!fiber) return undefined
  return {
    name: fiber.name,
    uid: fiber.uid,
    state: STATE_NAMES[fiber.state] ?? fiber.state,
    config: fiber.config,
    effects: fiber.getEffects().map(effectTree),
    disposers: [...fiber._disposables].length,
    unlabelledDisposers: [...fiber._disposables].filter(d => !d[EFFECT]).length,
    children: descendantsOf(ctx, fiber).map(f => ({ name: f.name, uid: f.uid, state: STATE_NAMES[f.state], inject: Object.keys(f.inject) })),
    listeners: listenersOf(ctx, fiber),
    services: servicesOf(ctx, fiber),
  }
}

/** True when nothing is left on the fiber: disposed, no disposer, no sub-fiber, listener or service. */
export function isClean(ctx, handle) {
  const fiber = fiberOf(handle)
  if (!fiber) return true
  return fiber.uid === null && fiber.state === FiberState.DISPOSED && [...fiber._disposables].length === 0
    && descendantsOf(ctx, fiber).length === 0 && listenersOf(ctx, fiber).length === 0 && servicesOf(ctx, fiber).length === 0
}

/** Number of live `Timeout` handles in this process. */
export function activeTimeouts() {
  return process.getActiveResourcesInfo().filter(r => r === 'Timeout').length
}

/**
 * Record unhandled rejections instead of crashing. A plugin whose `apply`
 * throws during a hot config update produces one (cordis `Fiber.update`
 * drops the `restart()` promise); a test can assert `list` stays empty.
 */
export function recordUnhandledRejections() {
  const list = []
  const handler = (reason) => { list.push(reason) }
  process.on('unhandledRejection', handler)
  return { list, stop: () => { process.off('unhandledRejection', handler) } }
}

const tick = () => new Promise(r => setImmediate(r))

/** Wait until the loader has no pending import/lifecycle task and no fiber is mid-transition. */
export async function settle(ctx, rounds = 50) {
  for (let i = 0; i < rounds; i++) {
    await ctx.get('loader')?.await()
    await tick()
    const busy = allFibers(ctx).filter(f => f.inertia)
    if (!busy.length && !ctx.get('loader')?.getTasks().length) return
    await Promise.allSettled(busy.map(f => f.inertia))
  }
}

// ---------------------------------------------------------------------------
// The loader

/**
 * Start a root Context with the real Loader and mount `rows` (loader entry
 * options `{ id, name, config?, disabled? }`) into its root group.
 *
 * Bare names: with `--expose-internals` on the node command line the loader
 * imports them from `baseUrl` (= `cwd`); without it, from the loader
 * package's own real location, so the plugin must be installed beside the
 * loader (see `makeConsumerProject`).
 *
 * @param {object} [options]
 * @param {object[]} [options.rows] - initial rows.
 * @param {string} [options.cwd] - project directory providing the host packages and the plugin.
 * @param {Record<string, any>} [options.builtins] - plugins mountable as `name: 'cordis:<key>'`.
 */
export async function startLoader({ rows = [], cwd = HOST_DIR, builtins = {} } = {}) {
  const host = await loadHost(cwd)
  const { Context, Logger } = host.cordis
  const ctx = new Context()
  const logs = captureLogs(ctx, Logger)
  await ctx.plugin(host.Loader, { baseUrl: pathToFileURL(host.dir + '/').href })
  const loader = ctx.get('loader')
  Object.assign(loader.builtins, builtins)
  const rig = {
    ctx,
    loader,
    logs,
    host,
    /** 'internal' (bare names resolve from cwd) or 'plain' (from the loader package's location). */
    bareNames: loader.internal ? 'internal' : 'plain',
    /**
     * Re-apply the whole row list the way a config-file reload does
     * (`loader.root.update`, i.e. `EntryGroup.update`): rows are created,
     * updated in place or removed by id; a row that fails is logged at
     * error level and the rest of the tree keeps running.
     * @returns the log records written while applying.
     */
    async update(nextRows) {
      const mark = logs.mark()
      await loader.root.update(structuredClone(nextRows))
      await settle(ctx)
      return { logs: logs.since(mark) }
    },
    /**
     * Programmatic update of one entry (`loader.update(id, options)`): an
     * invalid config rejects (ValidationError) instead of being logged.
     */
    async updateEntry(id, options) {
      const mark = logs.mark()
      let error
      try { await loader.update(id, structuredClone(options)) } catch (e) { error = e }
      await settle(ctx)
      return { error, logs: logs.since(mark) }
    },
    entry: (id) => { try { return loader.resolve(id) } catch { return undefined } },
    fiber: (id) => rig.entry(id)?.fiber,
    report: (id) => fiberReport(ctx, rig.entry(id)?.fiber),
    settle: () => settle(ctx),
    /** Stop the whole tree like a host shutting down (`ctx.fiber.dispose()` on the root). */
    async stop() {
      await ctx.fiber.dispose()
      await settle(ctx)
      return { logs: logs.entries }
    },
  }
  if (rows.length) await rig.update(rows)
  return rig
}

// ---------------------------------------------------------------------------
// Profiles (dsh-app-boot)

function toYaml(patches, yaml) {
  return typeof patches === 'string' ? patches : yaml.dump(patches)
}

/**
 * Boot a profile the way the dsh launcher does, in a throw-away Harness home:
 * `initProfile` (manifest with `dsh.profile.bundles`), the user layer written
 * to `<home>/profiles/<profile>/cordis.patch.yml`, `loadProfile` (bundle
 * layers from each bundle's `dsh.bundle.patch`), an empty root `cordis.yml`
 * (`[]`) in the profile directory, then `boot(bin, rootConfig, [...bundle
 * layers, ...profile layer, ...home layer])`.
 *
 * @param {object} options
 * @param {string} [options.home] - Harness home (when omitted: a temp dir, removed by `stop()`).
 * @param {string} [options.cwd] - project whose package.json is the install anchor (bundles resolve from its node_modules) and whose host packages are used.
 * @param {string} [options.profile] - profile name; avoid the template names `web`/`headless`.
 * @param {string[]} [options.bundles] - `dsh.profile.bundles`.
 * @param {object[]|string} [options.userPatch] - profile user layer (patch list or YAML text).
 * @param {object[]|string} [options.homePatch] - home-level user layer `<home>/cordis.patch.yml`.
 * @param {string} [options.bareModuleBaseUrl] - passed to `boot` (only used with internals).
 * @param {boolean} [options.heal] - run `healProfilesModuleFallback(installAnchor, home)` first (default true).
 * @returns the booted rig; `boot` errors propagate (the partial tree is already disposed then).
 */
export async function bootProfile({
  home,
  cwd = HOST_DIR,
  profile = 'rig',
  bundles = [NAME],
  userPatch = [],
  homePatch,
  bareModuleBaseUrl,
  heal = true,
  binName = 'dsh-rig',
} = {}) {
  const ownsHome = home === undefined
  home ??= mkdtempSync(join(tmpdir(), 'dsh-home-'))
  const host = await loadHost(cwd)
  if (!host.appBoot) throw new Error(`@deepseek-ai/dsh-app-boot is not resolvable from ${host.dir}`)
  const { initProfile, resolveProfileDir, loadProfile, loadOptionalPatches, boot, healProfilesModuleFallback, PROFILE_PATCH_FILENAME } = host.appBoot
  const yamlModule = await importFrom('js-yaml', host.dir)
  const yaml = yamlModule.dump ? yamlModule : yamlModule.default
  const { Logger } = host.cordis
  const installAnchor = join(host.dir, 'package.json')
  const dir = resolveProfileDir(profile, home)
  initProfile(dir, bundles)
  // The launcher keeps <home>/profiles/node_modules linked to the install
  // anchor's dependency closure; bare names resolve through it when the loader
  // imports from the profile directory (internal module loader).
  if (heal) healProfilesModuleFallback(installAnchor, home)
  const userFile = join(dir, PROFILE_PATCH_FILENAME)
  const homeFile = join(home, PROFILE_PATCH_FILENAME)
  writeFileSync(userFile, toYaml(userPatch, yaml))
  if (homePatch !== undefined) writeFileSync(homeFile, toYaml(homePatch, yaml))

  const compose = () => {
    const loaded = loadProfile(binName, profile, installAnchor, home)
    const homePatches = loadOptionalPatches(binName, homeFile) ?? []
    return { loaded, patches: structuredClone([...loaded.layers.flatMap(l => l.patches), ...loaded.patches, ...homePatches]) }
  }
  const { loaded, patches } = compose()
  const rootConfig = join(dir, 'cordis.yml')
  writeFileSync(rootConfig, '[]\n')

  const previousHome = process.env.DSH_HOME
  process.env.DSH_HOME = home
  let logs
  let ctx
  try {
    ctx = await boot(binName, rootConfig, patches, (c) => { logs = captureLogs(c, Logger) }, bareModuleBaseUrl)
  } catch (error) {
    if (previousHome === undefined) delete process.env.DSH_HOME
    else process.env.DSH_HOME = previousHome
    if (ownsHome) rmSync(home, { recursive: true, force: true })
    error.logs = logs
    throw error
  }
  const loader = ctx.get('loader')
  const includeEntry = loader.resolve('include')
  const find = (id) => [...loader.entries()].find(e => e.options.id === id)
  const rig = {
    ctx, loader, logs, host, home, profileDir: dir, rootConfig, profile: loaded, patches,
    bareNames: loader.internal ? 'internal' : 'plain',
    /** The row with this id anywhere in the tree (rows live below the root include). */
    entry: find,
    fiber: (id) => find(id)?.fiber,
    report: (id) => fiberReport(ctx, find(id)?.fiber),
    settle: () => settle(ctx),
    /**
     * Replace the profile's user layer and re-apply the composed patch list
     * to the root include, exactly as dsh-app-boot's `watchUserPatches`
     * callback does (`includeEntry.update({ config: { ...config, patches } })`);
     * the HMR service that would trigger it is not installed here.
     * @returns the log records written while applying.
     */
    async setUserPatch(next, { homePatch: nextHome } = {}) {
      const mark = logs.mark()
      writeFileSync(userFile, toYaml(next, yaml))
      if (nextHome !== undefined) writeFileSync(homeFile, toYaml(nextHome, yaml))
      const { patches: composed } = compose()
      rig.patches = composed
      const { patches: _old, ...includeConfig } = includeEntry.options.config
      await includeEntry.update({ config: { ...includeConfig, patches: composed } })
      await includeEntry.subtree?.applyQueue
      await settle(ctx)
      return { logs: logs.since(mark) }
    },
    async stop() {
      await ctx.fiber.dispose()
      await settle(ctx)
      if (previousHome === undefined) delete process.env.DSH_HOME
      else process.env.DSH_HOME = previousHome
      if (ownsHome) rmSync(home, { recursive: true, force: true })
      return { logs: logs.entries }
    },
  }
  return rig
}

// ---------------------------------------------------------------------------
// A consumer project with the packed plugin installed

/**
 * Make a fresh project that has the tarball `npm install`ed
 * (`--prefer-offline`: only the regular dependency's metadata may be fetched,
 * once, on a clean npm cache; `--legacy-peer-deps`: peers are not fetched)
 * next to the pinned host packages. `hostMode: 'copy'` (default) copies the `@deepseek-ai` scope from
 * the host project and symlinks the rest, so the loader really lives in this
 * project and resolves the plugin by plain `import()` with no node flag;
 * `'symlink'` links everything (no copy), which needs `--expose-internals`.
 * @returns {string} the project directory.
 */
export function makeConsumerProject({ tarball, hostDir = HOST_DIR, dir = mkdtempSync(join(tmpdir(), 'hg-consumer-')), hostMode = 'copy', npm = 'npm' }) {
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'hg-consumer', private: true, type: 'module' }, null, 2) + '\n')
  const result = spawnSync(npm, ['install', '--prefer-offline', '--legacy-peer-deps', '--no-audit', '--no-fund', '--ignore-scripts', resolve(tarball)], { cwd: dir, encoding: 'utf8' })
  if (result.status !== 0) throw new Error(`npm install ${tarball} failed (${result.status}): ${result.stderr || result.error}`)
  const from = join(hostDir, 'node_modules')
  const to = join(dir, 'node_modules')
  const link = (src, dst) => { if (!existsSync(dst)) symlinkSync(src, dst, 'junction') }
  for (const name of readdirSync(from)) {
    if (name.startsWith('.')) continue
    const src = join(from, name)
    const dst = join(to, name)
    if (name.startsWith('@') && lstatSync(src).isDirectory()) {
      mkdirSync(dst, { recursive: true })
      for (const sub of readdirSync(src)) {
        const s = join(src, sub)
        const d = join(dst, sub)
        if (existsSync(d)) continue
        if (hostMode === 'copy' && name === '@deepseek-ai') cpSync(s, d, { recursive: true, dereference: true })
        else link(s, d)
      }
    } else {
      link(src, dst)
    }
  }
  return dir
}

/** The plugin's package.json as installed in `cwd` (for checks on `dsh.bundle.patch`). */
export function installedManifest(name, cwd = HOST_DIR) {
  const require = createRequire(join(resolve(cwd), 'package.json'))
  for (const base of require.resolve.paths(name) ?? []) {
    const file = join(base, name, 'package.json')
    if (existsSync(file)) return { dir: dirname(file), manifest: JSON.parse(readFileSync(file, 'utf8')) }
  }
  return undefined
}

/** A loader row for a host package, named as profiles name it. */
export const pkgRow = (name, config) => ({ id: name.replace('@deepseek-ai/', ''), name, ...(config ? { config } : {}) })

/** The agent stack, in production order (time-context last). */
export const AGENT_ROWS = Object.freeze([
  pkgRow('@deepseek-ai/dsh-llm'), pkgRow('@deepseek-ai/dsh-session'), pkgRow('@deepseek-ai/dsh-system-prompt'),
  pkgRow('@deepseek-ai/dsh-tools'), pkgRow('@deepseek-ai/dsh-agent'), pkgRow('@deepseek-ai/dsh-agent-loop'),
  pkgRow('@deepseek-ai/dsh-time-context', { timeZone: 'UTC' }),
])
/** The Cordis host runner, which provides `cordisInspect`. */
export const RUNNER_ROW = Object.freeze(pkgRow('@deepseek-ai/dsh-cordis-host-runner'))
/** A profile with agents and the host runner. */
export const HOST_ROWS = Object.freeze([...AGENT_ROWS, RUNNER_ROW])

/**
 * An offline model adapter class over a given `LlmAdapter` (the consumer's own
 * copy): every request is pushed to `requests`, each answered with `ok`.
 */
export function fakeModelClass(LlmAdapter, requests = []) {
  return class extends LlmAdapter {
    async *stream(request) {
      requests.push(request)
      yield { type: 'block-start', index: 0, blockType: 'text' }
      yield { type: 'text-delta', index: 0, text: 'ok' }
      yield { type: 'block-end', index: 0, block: { type: 'text', text: 'ok' } }
      yield { type: 'usage', usage: { inputTokens: 1, outputTokens: 1 } }
      yield { type: 'finish', reason: { kind: 'stop' } }
    }
  }
}
