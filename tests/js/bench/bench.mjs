// `make bench`: overhead, scale, memory, start-up and size of harness-guard,
// against the built package (imported by name) and the real host classes.
//
//   node --expose-gc tests/js/bench/bench.mjs            full run, writes BENCHMARKS.md and benchmarks.svg
//   node --expose-gc tests/js/bench/bench.mjs --quick    smoke run, prints only
//   node --expose-gc tests/js/bench/bench.mjs --only=3 [--quick] [--sizes=100000] [--arms=hg] [--profile]
//                                                         one section, printed only; --profile runs it in a
//                                                         child under --cpu-prof and --trace-gc
//   node --expose-gc tests/js/bench/bench.mjs --against=DIR [--quick]
//                                                         this build against another (DIR: its package, e.g.
//                                                         another checkout's pkg/), side by side in each
//                                                         child: the claim rows and the two queries, printed
//   node --expose-gc tests/js/bench/bench.mjs --beside=pj [--quick]
//                                                         the same, against a peer (pj, pp or sd) in one process
//   ... --beside=sd --other-timer=15000                   the same, with another timer alive in each child
//
// Sections (see README.md next to this file): 1 per-call overhead, 2 claim
// overhead, 3 scale, 4 growth, 5 start-up and size. The claim rows, and the
// host and client queries through the real registry, run each arm in child
// processes beside an unguarded host of its own, call by call in alternating
// order, and compare arms through their per-cycle ratios to that host; the
// other per-call rows run the arms side by side in one process, interleaved
// round by round. Every figure is a median over the cycles, the rounds or
// repeated child processes.
//
// Arms: un (unguarded), hg (harness-guard, the installed package), pj (the
// plain-JS guard, plain-js-guard.mjs), sd (the seed's own guard: seed 000's
// inspect guard in sections 1 and 3, seed-inspect-guard.mjs; seed 002's inbox
// guard in section 2, seed-inbox-guard.mjs), xc (section 1's crossing floor: the
// plain-JS guard, entering harness-guard's wasm twice per guarded client query,
// where harness-guard's begin and settle do), nl (a diagnostic of section 2:
// no guard, one no-op session/event listener), xf (section 2's crossing floor:
// the plain-JS guard, entering harness-guard's wasm once per batch it judges),
// aa (section 2's A/A arm: the plain-JS guard again, in children of its own, so
// that the plain-JS guard ÷ itself in the same rounds gives the bench's resolution),
// ht (section 2's baseline-tier floor: harness-guard again, in children run with
// V8's --no-liftoff, so that its wasm is optimized from its first call).

import { createHash } from 'node:crypto'
import { spawn, spawnSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { PerformanceObserver, constants as perfConstants } from 'node:perf_hooks'
import { gzipSync } from 'node:zlib'
import { getEventListeners } from 'node:events'

import { Context } from '@deepseek-ai/cordis'
import { CordisInspectRegistryService } from '@deepseek-ai/dsh-cordis-host-runner'
import { LlmAdapter, LlmRuntime, createUserMessage } from '@deepseek-ai/dsh-llm'
import { SessionStore } from '@deepseek-ai/dsh-session'
import { SystemPrompt } from '@deepseek-ai/dsh-system-prompt'
import { ToolRuntime } from '@deepseek-ai/dsh-tools'
import { AgentRegistry } from '@deepseek-ai/dsh-agent'
import { AgentLoop } from '@deepseek-ai/dsh-agent-loop'

import { installPlainInboxGuard, installPlainInspectGuard } from './plain-js-guard.mjs'
import { installInspectClientGuard as installSeedInspectGuard } from './seed-inspect-guard.mjs'
import { plugin as seedInboxGuard } from './seed-inbox-guard.mjs'
import { writeChart } from './chart.mjs'
import { fixed, int } from './format.mjs'
import { requireAgentLoopNode } from '../support/agent-rig.mjs'

const HERE = path.dirname(fileURLToPath(import.meta.url))
const RIG = path.resolve(HERE, '..')
const REPO = path.resolve(RIG, '..', '..')
const PACKAGE = 'cordis-plugin-harness-guard'
const ORIGINAL = Symbol.for('cordis.original')

const argv = process.argv.slice(2)
try {
  requireAgentLoopNode('the benchmark')
} catch (error) {
  console.error(error.message)
  process.exit(1)
}
const QUICK = argv.includes('--quick')
const CHILD = argv.includes('--child') ? argv[argv.indexOf('--child') + 1] : undefined
const option = (key) => argv.find((a) => a.startsWith(`--${key}=`))?.slice(key.length + 3)
/** `--only=<section>`: run one section (1-5, or per-call, claims, scale, growth, startup) and print it. */
const ONLY = option('only')
const PROFILE = argv.includes('--profile')
/** `--sizes=1000,100000`: section 3's numbers of waiting queries; `--arms=hg,sd`: the arms run there. */
const SIZES = option('sizes')?.split(',').map(Number)
const ARMS = option('arms')?.split(',')
/**
 * `--against=DIR`: another build of the package (its directory), installed
 * beside this one as AGAINST_NAME for the run, so that it resolves the same host
 * packages.
 */
const AGAINST = option('against')
const AGAINST_NAME = 'harness-guard-against'
/**
 * `--beside=pj` (or `pp`, `sd`): harness-guard against a peer as `--against` sets two
 * builds side by side, the peer's host in the unguarded host's place.
 */
const BESIDE = option('beside')
/**
 * `--other-timer=MS` (with `--beside` or `--against`): each child keeps one
 * unrelated interval of MS ms alive, let go, as a host with timers of its own
 * does. A guard that makes a Node timer per query (the seed's) pays less for it
 * while another timer is alive, and least while one of its own delay is
 * (README.md next to this file).
 */
const OTHER_TIMER = option('other-timer')
const otherTimer = OTHER_TIMER === undefined ? undefined : Number(OTHER_TIMER)
if (OTHER_TIMER !== undefined && AGAINST === undefined && BESIDE === undefined) {
  console.error('--other-timer goes with --beside or --against')
  process.exit(2)
}
if (otherTimer !== undefined && !(Number.isInteger(otherTimer) && otherTimer > 0 && otherTimer < 2 ** 31)) {
  console.error(`--other-timer=${OTHER_TIMER}: a delay in ms, a positive integer below 2^31`)
  process.exit(2)
}
const PARTIAL = ONLY !== undefined || SIZES !== undefined || ARMS !== undefined || AGAINST !== undefined || BESIDE !== undefined
/** Cycles per child (and warm-up cycles before them) of the claim rows and of section 1's calls. */
const CLAIM_CYCLES = { cycles: QUICK ? 300 : 1200, warm: QUICK ? 100 : 400 }
const CALL_CYCLES = { cycles: QUICK ? 1000 : 3000, warm: QUICK ? 300 : 1000 }

if (typeof globalThis.gc !== 'function') {
  console.error('bench.mjs needs --expose-gc (run it through `make bench`)')
  process.exit(2)
}

// ---- small helpers -----------------------------------------------------------

const tick = () => new Promise((resolve) => setImmediate(resolve))
/**
 * Collect garbage after one macrotask turn: a WeakRef keeps its target alive
 * until the current job ends, and a chain of awaits never ends it.
 */
const gc = async () => {
  // Three passes, each after a turn: FinalizationRegistry callbacks (AbortSignal.any's
  // bookkeeping among them) run between passes and release what they held.
  for (let pass = 0; pass < 3; pass += 1) {
    await tick()
    globalThis.gc()
  }
}
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2
}
const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]
/** Median and interquartile range of `xs`. */
const summary = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return { median: median(s), q1: percentile(s, 25), q3: percentile(s, 75), n: s.length }
}
/** Per-round ratios of `a` to `b` (paired: the same round), summarized. */
const paired = (a, b) => summary(a.map((v, r) => v / b[r]))
const progress = (text) => console.log(`  ${text}`)

const ns = (n) => `${int(n)} ns`
const signedNs = (n) => `${n >= 0 ? '+' : '−'}${int(Math.abs(n))} ns`
const ms = (n, digits = 1) => `${fixed(n, digits)} ms`
const kib = (b) => `${(b / 1024).toLocaleString('en-US', { maximumFractionDigits: 1 })} KiB`
const mib = (b) => `${(b / 1048576).toFixed(1)} MiB`
/** Section 3's p99 of each child, in ms: "20.4, 181.0, 133.1". */
const p99s = (r) => r.p99s.map((x) => fixed(x, 1)).join(', ')
/** Section 3's longest collection pause of each child while its queries ended, its kind named past 50 ms. */
const pauses = (r) => `${r.pauses.map(([t, kind]) => `${fixed(t, 1)}${t >= 50 ? ` (${kind})` : ''}`).join(', ')} ms`

/** Least-squares slope of y over x, with its standard error. */
function slope(points) {
  const n = points.length
  const mx = points.reduce((a, p) => a + p[0], 0) / n
  const my = points.reduce((a, p) => a + p[1], 0) / n
  let sxx = 0
  let sxy = 0
  for (const [x, y] of points) { sxx += (x - mx) ** 2; sxy += (x - mx) * (y - my) }
  const b = sxy / sxx
  let sse = 0
  for (const [x, y] of points) sse += (y - (my + b * (x - mx))) ** 2
  const se = n > 2 ? Math.sqrt(sse / (n - 2) / sxx) : NaN
  return { slope: b, se }
}

// ---- the package, and its wasm memory ------------------------------------------

let wasmInstance
/**
 * Import the package by name. The glue module keeps its `WebAssembly.Instance`
 * private, so the one instance it creates is observed while the package is
 * imported and started; nothing else about instantiation changes.
 */
async function loadPackage(name = PACKAGE) {
  const Instance = WebAssembly.Instance
  WebAssembly.Instance = new Proxy(Instance, {
    construct(target, args, newTarget) {
      const instance = Reflect.construct(target, args, newTarget)
      if (name === PACKAGE) wasmInstance ??= instance
      return instance
    },
  })
  try {
    const plugin = await import(name)
    const { installInspectClientGuard } = await import(`${name}/guard`)
    const glue = await import(new URL('./harness_guard.js', import.meta.resolve(name)).href)
    // Importing runs no wasm: start it here, as the first mount would, so that
    // its instance is made while it can be observed.
    const { ready, host } = await import(new URL('./host.js', import.meta.resolve(name)).href)
    ready()
    return { plugin, installInspectClientGuard, glue, life: host.state.life }
  } finally {
    WebAssembly.Instance = Instance
  }
}
const wasmBytes = () => wasmInstance?.exports.memory?.buffer.byteLength ?? NaN

/**
 * A hash of every file of the installed package. Child processes import it
 * afresh, so a package rebuilt and reinstalled while the benchmark runs (by
 * someone else's `make`) would mix two builds in one table: the run compares
 * this at its start and its end, and writes nothing if it changed.
 */
function packageFingerprint() {
  const dir = path.dirname(fileURLToPath(import.meta.resolve(PACKAGE)))
  const hash = createHash('sha1')
  const walk = (d) => {
    for (const entry of readdirSync(d, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const file = path.join(d, entry.name)
      if (entry.isDirectory()) walk(file)
      else hash.update(`${path.relative(dir, file)}\0`).update(readFileSync(file))
    }
  }
  walk(dir)
  return hash.digest('hex')
}

// ---- hosts ------------------------------------------------------------------------

const METHOD = { name: 'read', description: 'Read a value.', inputSchema: { type: 'object' }, outputSchema: { type: 'object' } }
const AGENT = { id: 'bench-agent' }
const ANSWER = { ok: true, data: {} }

/** A real registry in a real Context, with a client provider no page serves and a host provider. */
async function inspectHost({ page = false } = {}) {
  const ctx = new Context()
  await ctx.plugin(CordisInspectRegistryService)
  const handle = ctx.get('cordisInspect')
  const raw = handle[ORIGINAL]
  raw.syncClientManifest([{ id: 'Bench', description: 'Client provider of the benchmark.', methods: [METHOD] }])
  raw.register({ manifest: { id: 'HostBench', description: 'Host provider of the benchmark.', methods: [METHOD] }, query: async () => ({}) })
  // The in-process page: answers each announced query at once, through the raw
  // instance as the host runner's page gateway does; or only collects the ids.
  const pageState = { answer: page, ids: [] }
  ctx.on('cordis/inspect-query', (request) => {
    if (pageState.answer) raw.resolveClientQuery({ id: request.agentId }, request.requestId, ANSWER)
    else pageState.ids.push(request.requestId)
  })
  const logger = ctx.logger('bench')
  return { ctx, handle, raw, page: pageState, warn: (text) => logger.warn(text) }
}

/** Install one arm on an inspect host; returns its async disposer. */
async function armInspect(arm, host, pkg, deadlineMs) {
  if (arm === 'hg') {
    const fiber = host.ctx.plugin(pkg.plugin, { inspect: { deadlineMs }, inbox: { enabled: false } })
    await fiber
    return () => fiber.dispose()
  }
  // pp mounts only the inbox half as a plugin (agentHost); its inspect half is installed as pj's is.
  if (arm === 'pj' || arm === 'pp') return installPlainInspectGuard(host.raw, { deadlineMs, warn: host.warn })
  if (arm === 'sd') return installSeedInspectGuard(host.raw, { deadlineMs })
  if (arm === 'xc') return installPlainInspectGuard(host.raw, { deadlineMs, warn: host.warn, ...queryCrossings(pkg.life) })
  // The floor arm of section 3: the seed's guard, leaving nothing on the call's signal.
  if (arm === 'sc') return installSeedInspectGuard(host.raw, { deadlineMs, settleEntry: true })
  return () => {}
}

class SilentModel extends LlmAdapter {
  async * stream() { yield { type: 'finish', reason: { kind: 'stop' } } }
}

/** A real agent host (llm, sessions, system prompt, tools, agents, loop), in production order. */
async function agentHost(arm, pkg) {
  const ctx = new Context()
  for (const plugin of [LlmRuntime, SessionStore, SystemPrompt, ToolRuntime, AgentRegistry, AgentLoop]) await ctx.plugin(plugin)
  ctx.llm.registerAdapter(['bench'], new SilentModel())
  const logger = ctx.logger('bench')
  const warn = (text) => logger.warn(text)
  // The plain-JS guard's options, as its arms (pj, aa, pp, xf) install it.
  const plain = { mode: 'repair', previewChars: 80, createUserMessage, warn }
  if (arm === 'hg' || arm === 'ht') await ctx.plugin(pkg.plugin, { inbox: { mode: 'repair' } })
  if (arm === 'pj' || arm === 'aa') installPlainInboxGuard(ctx, plain)
  // The same guard mounted as a cordis plugin, as a cordis.patch.yml row is: its
  // listeners owned by the plugin's fiber and taken off with it (`--beside=pp`).
  if (arm === 'pp') {
    await ctx.plugin({
      name: 'plain-js-guard',
      apply: (c) => {
        c.on('dispose', installPlainInboxGuard(c, plain))
      },
    })
  }
  if (arm === 'sd') await ctx.plugin(seedInboxGuard, { mode: 'repair' })
  // No guard: a plugin with one no-op `session/event` listener, what any durable-write observer pays.
  if (arm === 'nl') await ctx.plugin({ name: 'bench-listener', apply: (c) => { c.on('session/event', () => {}) } })
  if (arm === 'xf') installPlainInboxGuard(ctx, { ...plain, onBad: crossing(pkg.life) })
  let sessions = 0
  return {
    ctx,
    async agent() {
      sessions += 1
      return ctx.agents.create({ sessionId: `bench-${arm}-${sessions}`, agentOptions: { provider: 'bench', model: 'bench' } })
    },
  }
}

/**
 * The crossing floor's hook (arm xf): for each batch the plain-JS guard is about
 * to sanitize, one entry into harness-guard's claim entry with what its claim
 * wrapper hands over (the batch, a shape code per entry, the split, the
 * next-turn length, the flags, the session id), under a token that names no
 * guard, so Rust answers at once. What a guard whose rules live in wasm pays
 * per batch it judges, and a JavaScript guard does not.
 */
const crossing = (life) => (batch, split, inbox) => {
  const codes = new Uint32Array(batch.length)
  life.depth += 1
  try {
    life.claim(0, batch, split ?? -1, inbox.nextTurn?.length ?? -1, codes, 0, inbox.session?.id)
  } finally {
    life.depth -= 1
  }
}

/**
 * The hooks of section 1's crossing floor (arm xc): where the plain-JS guard's
 * client query begins to wait, one entry into harness-guard's `begin` under a
 * guard token that names no guard (0), and where it lands, one into `settle` with
 * a key no flight has (0), so Rust answers at once each time. What a guard whose
 * deadline lives in wasm pays per client query, and a JavaScript guard does not.
 */
const queryCrossings = (life) => ({
  onBegin(startedAt) {
    life.depth += 1
    try {
      life.begin(0, startedAt, false)
    } finally {
      life.depth -= 1
    }
  },
  onLand() {
    life.depth += 1
    try {
      life.settle(0)
    } finally {
      life.depth -= 1
    }
  },
})

const clean = (i) => createUserMessage({ content: [{ type: 'text', text: `message ${i}` }], source: { kind: 'user' } })
/**
 * The batches a claim benchmark cycles through. `bad`: every tenth entry is
 * bad; in a batch, the first bad one is an id-less scalar (a bare string or a
 * number: repaired), the others are malformed objects (dropped). For batches
 * of 1, every tenth batch is the bare string.
 */
function batches(size, bad) {
  const base = Array.from({ length: size }, (_, i) => clean(i))
  if (!bad) return [base]
  if (size === 1) return [...Array.from({ length: 9 }, () => base), ['a bare string']]
  return [0, 1].map((variant) => base.map((message, i) => {
    if (i % 10 !== 9) return message
    if (i === 9) return variant === 0 ? 'a bare string' : 42
    return { id: `bad-${i}`, role: 'user', content: 'not an array', source: { kind: 'user' } }
  }))
}

/**
 * A stand-in with the registry's shape and nothing else: `query` announces a
 * client request synchronously and waits for `resolveClientQuery` or the
 * signal, as the real one does, without cordis contexts, events or validation.
 * Only for the diagnostic row of section 1: the guards' own cost, host removed.
 */
class MinimalRegistry {
  pending = new Map()
  next = 1
  listeners = []
  ctx = {
    on: (event, listener) => {
      if (event === 'cordis/inspect-query') this.listeners.push(listener)
      return () => { this.listeners = this.listeners.filter((l) => l !== listener) }
    },
    emit: () => {}, // the seed's expiry emits through it; nothing listens here
  }

  async query(platform, providerId, methodName, input, agent, signal) {
    signal.throwIfAborted()
    if (platform === 'host') return {}
    const requestId = `inspect-${this.next++}`
    const request = { requestId, agentId: agent.id, provider: providerId, method: methodName, input }
    const result = new Promise((resolve) => this.pending.set(requestId, { request, settle: resolve }))
    const onAbort = () => {
      const entry = this.pending.get(requestId)
      if (entry === undefined) return
      this.pending.delete(requestId)
      entry.settle({ ok: false, message: `Client inspect query ${providerId}.${methodName} was cancelled` })
    }
    signal.addEventListener('abort', onAbort, { once: true })
    for (const listener of this.listeners) listener(request)
    try {
      const resolution = await result
      if (!resolution.ok) throw new Error(`${providerId}.${methodName}: ${resolution.message}`)
      return resolution.data
    } finally {
      signal.removeEventListener('abort', onAbort)
    }
  }

  resolveClientQuery(agent, requestId, resolution) {
    const entry = this.pending.get(requestId)
    if (entry === undefined || entry.request.agentId !== agent.id || !resolution.ok) return { accepted: false }
    this.pending.delete(requestId)
    entry.settle(resolution)
    return { accepted: true }
  }
}

// ---- the package really guards (a tampered or half-built install would measure nothing) ---------

const ARM_NAMES = { un: 'unguarded', hg: 'harness-guard', pj: 'plain-JS guard', pp: 'plain-JS guard mounted as a cordis plugin', sd: 'seed guard', nl: 'no-op listener', xc: 'crossing floor of a client query', xf: 'crossing floor', aa: 'plain-JS guard again (A/A)', ht: 'harness-guard, wasm optimized from its first call', sc: 'seed guard settling each expired entry (the floor arm)' }

/**
 * One arm really guards: an unanswered query rejects with INSPECT_CLIENT_DEADLINE
 * and leaves no pending entry, and nothing on the call's signal but where the
 * seed's guard leaves the registry's listener (the one difference the floor arm,
 * the inspect half alone, makes); a bare string is repaired (not for the floor
 * arms of the inspect half, sc and xc).
 */
async function checkArm(arm, pkg) {
  const host = await inspectHost()
  let resolved = 0
  host.ctx.on('cordis/inspect-query-resolved', () => { resolved += 1 })
  const dispose = await armInspect(arm, host, pkg, 20)
  const caller = new AbortController()
  const error = await host.handle.query('client', 'Bench', 'read', {}, AGENT, caller.signal).then(() => undefined, (e) => e)
  const pending = host.raw.pending.size
  const listeners = getEventListeners(caller.signal, 'abort').length
  await dispose()
  const inspect = [
    error?.code === 'INSPECT_CLIENT_DEADLINE' ? undefined : `an unanswered client query did not reject with INSPECT_CLIENT_DEADLINE (got ${error?.code ?? error})`,
    pending === 0 ? undefined : 'a pending entry was left behind',
    resolved === 1 ? undefined : `cordis/inspect-query-resolved was emitted ${resolved} times, not once`,
    arm !== 'sd' && listeners > 0 ? `${listeners} listener(s) left on the call's AbortSignal` : undefined,
    arm === 'sd' && listeners === 0 ? 'the registry\'s listener was taken off the call\'s signal, which the floor arm (sc) is there to add' : undefined,
  ]
  if (arm === 'sc' || arm === 'xc') return inspect.filter(Boolean)
  const agents = await agentHost(arm, pkg)
  const handle = await agents.agent()
  handle.agent.inbox.splice('next-step', 0, 0, ['a bare string'])
  const [message] = handle.agent.inbox.claim('next-step', 1)
  await handle.dispose()
  return [
    ...inspect,
    message?.source?.plugin === 'inbox-input-guard' && message.content?.[0]?.text === 'a bare string' ? undefined : 'a bare string in the inbox was not repaired',
  ].filter(Boolean)
}

/** The package and every peer really guard (a tampered, half-built or broken arm would measure nothing). */
async function selfCheck(pkg) {
  const problems = await checkArm('hg', pkg)
  if (problems.length) {
    throw new Error(`the installed ${PACKAGE} does not guard: ${problems.join('; ')}. Rebuild it (make ${path.relative(REPO, path.join(RIG, 'node_modules', PACKAGE, 'package.json'))}) and run again.`)
  }
  for (const arm of ['pj', 'sd', 'sc', 'xc']) {
    const found = await checkArm(arm, pkg)
    if (found.length) throw new Error(`the ${ARM_NAMES[arm]} peer does not guard: ${found.join('; ')}; fix tests/js/bench/ before measuring against it.`)
  }
}

// ---- section 1: per-call overhead ---------------------------------------------------

/**
 * The figures of one row from per-round times per arm (`per[arm][round]`, ns):
 * medians, overheads (median of per-round differences from the unguarded arm,
 * with half their IQR), and the guard's paired per-call ratios to each peer
 * (median and IQR of per-round ratios of harness-guard's time to the peer's).
 */
function compare(per, size = 1) {
  const out = { per, size, vs: {} }
  for (const [arm, xs] of Object.entries(per)) {
    if (xs.length === 0) continue
    out[arm] = median(xs)
    if (arm === 'un') continue
    const d = xs.map((v, r) => (v - per.un[r]) / size).sort((a, b) => a - b)
    out[`${arm}Over`] = median(d)
    out[`${arm}Spread`] = (percentile(d, 75) - percentile(d, 25)) / 2
    if (arm === 'pj' || arm === 'sd') out.vs[arm] = paired(per.hg, xs)
  }
  // The ratio of overheads (harness-guard's added time ÷ a peer's), per round.
  out.overRatio = Object.fromEntries(Object.keys(out.vs).map((arm) => [arm, summary(per.hg.map((v, r) => (v - per.un[r]) / (per[arm][r] - per.un[r])))]))
  return out
}
/** A paired ratio, "1.02× (0.99–1.05)": median (interquartile range). */
const times = (x, digits = 2) => (x === undefined ? '—' : `${x.median.toFixed(digits)}× (${x.q1.toFixed(digits)}–${x.q3.toFixed(digits)})`)

async function perCall(pkg) {
  const rounds = QUICK ? 5 : 15
  const reps = QUICK ? 2 : 5
  // The host query and the client query on the real registry: children, one arm
  // beside the unguarded registry in each, call by call (see callsChild).
  const calls = pairedRounds('calls', ['hg', 'pj', 'sd', 'xc'], reps, CALL_CYCLES)
  const results = {}
  for (const [id, label] of [['host', 'host query, per call'], ['client', 'client query answered at once, per call']]) {
    const r = { label, reps, ...calls(id) }
    results[id] = r
    progress(`${id}: unguarded ${ns(r.un)}, harness-guard ${ns(r.hg)} (${signedNs(r.over.hg)}), plain-JS ${ns(r.pj)} (${signedNs(r.over.pj)}), seed ${ns(r.sd)} (${signedNs(r.over.sd)}); paired ÷ plain-JS ${times(r.vs.pj)}, ÷ seed ${times(r.vs.sd)}${id === 'client' ? `, ÷ (plain-JS + two crossings) ${times(r.vs.xc, 3)}` : ''}`)
  }
  const host = await inspectHost({ page: true })
  const signal = () => new AbortController().signal
  const workloads = [
    {
      id: 'resolve', label: 'resolveClientQuery (a pending query, accepted)', calls: QUICK ? 500 : 2000,
      async run(calls) {
        host.page.answer = false
        host.page.ids.length = 0
        const waits = []
        for (let i = 0; i < calls; i += 1) waits.push(host.handle.query('client', 'Bench', 'read', {}, AGENT, signal()))
        const ids = host.page.ids.splice(0)
        const t0 = performance.now()
        for (const id of ids) host.raw.resolveClientQuery(AGENT, id, ANSWER)
        const elapsed = performance.now() - t0
        await Promise.all(waits)
        host.page.answer = true
        return elapsed * 1e6 / calls
      },
    },
  ]
  const minimal = new MinimalRegistry()
  minimal.ctx.on('cordis/inspect-query', (request) => minimal.resolveClientQuery({ id: request.agentId }, request.requestId, ANSWER))
  workloads.push({
    id: 'minimal', label: 'client query on the minimal registry', calls: QUICK ? 4000 : 20000,
    install: (arm) => (arm === 'hg' ? pkg.installInspectClientGuard(minimal, { deadlineMs: 15000 })
      : arm === 'pj' ? installPlainInspectGuard(minimal, { deadlineMs: 15000 })
        : arm === 'sd' ? installSeedInspectGuard(minimal, { deadlineMs: 15000 }) : () => {}),
    async run(calls) {
      const t0 = performance.now()
      for (let i = 0; i < calls; i += 1) await minimal.query('client', 'Bench', 'read', {}, AGENT, signal())
      return (performance.now() - t0) * 1e6 / calls
    },
  })
  workloads.push({
    id: 'minimalHost', label: 'host query on the minimal registry: the pass-through alone', calls: QUICK ? 5000 : 20000, rounds: QUICK ? 5 : 15,
    install: workloads.at(-1).install,
    async run(calls) {
      const t0 = performance.now()
      for (let i = 0; i < calls; i += 1) await minimal.query('host', 'HostBench', 'read', {}, AGENT, signal())
      return (performance.now() - t0) * 1e6 / calls
    },
  })
  const install = (w, arm) => (w.install ? w.install(arm) : armInspect(arm, host, pkg, 15000))
  const arms = ['un', 'hg', 'pj', 'sd']
  for (const w of workloads) {
    for (const arm of arms) { // warm every path once before measuring
      const dispose = await install(w, arm)
      await w.run(Math.ceil(w.calls / 2))
      await dispose()
    }
    const per = Object.fromEntries(arms.map((arm) => [arm, []]))
    for (let round = 0; round < (w.rounds ?? rounds); round += 1) {
      for (let k = 0; k < arms.length; k += 1) {
        const arm = arms[(round + k) % arms.length]
        const dispose = await install(w, arm)
        await w.run(Math.ceil(w.calls / 10))
        await gc()
        per[arm].push(await w.run(w.calls))
        await dispose()
      }
    }
    results[w.id] = { label: w.label, ...compare(per) }
    const r = results[w.id]
    progress(`${w.id}: unguarded ${ns(r.un)}, harness-guard ${ns(r.hg)} (${signedNs(r.hgOver)}), plain-JS ${ns(r.pj)} (${signedNs(r.pjOver)}), seed ${ns(r.sd)} (${signedNs(r.sdOver)}); paired per call ÷ plain-JS ${times(r.vs.pj)}, ÷ seed ${times(r.vs.sd)}`)
  }
  if (host.raw.pending.size !== 0) throw new Error(`section 1 left ${host.raw.pending.size} pending entries`)
  return results
}

// ---- paired children: one arm beside the unguarded host, claim by claim --------------------

/**
 * The rows of section 2: a batch size, and whether one entry in ten is bad.
 * For a batch of 1 at 10% bad, every tenth claim is the bare string: a cycle
 * of ten claims is measured as one.
 */
const CLAIM_ROWS = [[1, false], [1, true], [10, false], [10, true], [100, false], [100, true]]
const rowKey = (size, bad) => `${size}${bad ? 'b' : 'c'}`
/** A claim row's name, as the table and `--against` print it. */
const claimLabel = (size, bad) => `claim, batch of ${size}, ${bad ? '10% bad' : 'clean'}`

/**
 * One arm beside the unguarded host in one process (two agent hosts), claim by
 * claim: each cycle claims the row's batches once on each host, in alternating
 * order, and times every claim alone (the splice that fills the inbox is not
 * timed). Per row: the median over cycles of each host's time per claim, and
 * of the arm's time over the unguarded one's in the same cycle. The median of a
 * cycle, not the mean: a collection or a preemption lands on whichever host
 * runs at that moment, and on this noisy 2-core machine one of them is worth
 * hundreds of claims. The arm is compared with the unguarded host of its own
 * process, so a child's ratio is independent of how busy the machine was.
 * (`cleanOnly`: the clean rows alone, for a profile of the clean path.)
 */
async function claimsChild({ arm, cycles, warm, against, beside = 'un', cleanOnly = false }) {
  const pkg = arm === 'hg' || arm === 'ht' || arm === 'xf' ? await loadPackage() : undefined
  // `--against`: the other build's guard takes the unguarded host's place; `--beside`, a peer's.
  const hosts = { un: against ? await agentHost('hg', await loadPackage(AGAINST_NAME)) : await agentHost(beside, pkg), x: await agentHost(arm, pkg) }
  const out = {}
  for (const [size, bad] of CLAIM_ROWS.filter(([, bad]) => !cleanOnly || !bad)) {
    const sets = batches(size, bad)
    const per = sets.length === 1 ? 2 : sets.length
    const handles = [await hosts.un.agent(), await hosts.x.agent()]
    const inbox = { un: handles[0].agent.inbox, x: handles[1].agent.inbox }
    const n = Math.max(40, Math.round(cycles / Math.sqrt(size)))
    const t = { un: new Float64Array(n), x: new Float64Array(n) }
    const run = (count, keep) => {
      for (let c = 0; c < count; c += 1) {
        let un = 0
        let x = 0
        for (let i = 0; i < per; i += 1) {
          for (const side of (c + i) % 2 ? ['un', 'x'] : ['x', 'un']) {
            const target = inbox[side]
            target.splice('next-step', target.nextStep.length, 0, sets[i % sets.length])
            const t0 = performance.now()
            target.claim('next-step', 1)
            const dt = performance.now() - t0
            if (side === 'un') un += dt
            else x += dt
          }
        }
        if (keep) {
          t.un[c] = un / per
          t.x[c] = x / per
        }
      }
    }
    run(warm, false)
    await gc()
    run(n, true)
    for (const handle of handles) await handle.dispose()
    const ratios = Array.from(t.x, (v, c) => v / t.un[c])
    out[rowKey(size, bad)] = { un: median(t.un) * 1e6, x: median(t.x) * 1e6, ratio: median(ratios) }
  }
  return out
}

/**
 * The calls of section 1 in the same way: a host query and a client query an
 * in-process page answers at once, each awaited, one arm beside the unguarded
 * registry in one process, call by call in alternating order.
 */
async function callsChild({ arm, cycles, warm, against, beside = 'un' }) {
  const pkg = arm === 'hg' || arm === 'xc' ? await loadPackage() : undefined
  const hosts = { un: await inspectHost({ page: true }), x: await inspectHost({ page: true }) }
  await armInspect(arm, hosts.x, pkg, 15000)
  // `--against`: the other build's guard on the registry the arm is compared with; `--beside`, a peer.
  if (against) await armInspect('hg', hosts.un, await loadPackage(AGAINST_NAME), 15000)
  else await armInspect(beside, hosts.un, pkg, 15000)
  const out = {}
  for (const [key, platform, provider] of [['client', 'client', 'Bench'], ['host', 'host', 'HostBench']]) {
    const t = { un: new Float64Array(cycles), x: new Float64Array(cycles) }
    const run = async (count, keep) => {
      for (let c = 0; c < count; c += 1) {
        for (const side of c % 2 ? ['un', 'x'] : ['x', 'un']) {
          const t0 = performance.now()
          await hosts[side].handle.query(platform, provider, 'read', {}, AGENT, new AbortController().signal)
          if (keep) t[side][c] = performance.now() - t0
        }
      }
    }
    await run(warm, false)
    await gc()
    await run(cycles, true)
    const ratios = Array.from(t.x, (v, c) => v / t.un[c])
    out[key] = { un: median(t.un) * 1e6, x: median(t.x) * 1e6, ratio: median(ratios) }
  }
  if (hosts.x.raw.pending.size !== 0) throw new Error(`calls ${arm}: pending entries left`)
  return out
}

/** Arm `a`'s ratio to its unguarded host over arm `b`'s, round by round: their median and IQR. */
const pairedRatio = (row, a, b) => summary(row.ratios[a].map((v, r) => v / row.ratios[b][r]))

/**
 * Children for every arm, `reps` rounds in rotating order, and per row (`key`)
 * the figures of the table: each arm's time per claim or call and its added
 * time over the unguarded host of its own children (medians over the rounds),
 * and harness-guard's paired ratio to each peer: in each round, harness-guard's
 * ratio to its unguarded host divided by the peer's to its own, the median of
 * those and their interquartile range.
 */
function pairedRounds(kind, arms, reps, params) {
  const runs = Object.fromEntries(arms.map((arm) => [arm, []]))
  for (let r = 0; r < reps; r += 1) {
    for (let k = 0; k < arms.length; k += 1) {
      const arm = arms[(r + k) % arms.length]
      runs[arm].push(child(kind, { arm, ...params }))
    }
  }
  return (key) => {
    const row = { vs: {}, over: {}, ratios: {} }
    const uns = []
    for (const arm of arms) {
      const got = runs[arm].map((c) => c[key])
      uns.push(...got.map((g) => g.un))
      row[arm] = median(got.map((g) => g.x))
      row.over[arm] = median(got.map((g) => g.x - g.un))
      row.ratios[arm] = got.map((g) => g.ratio)
    }
    row.un = median(uns)
    // The peers and the floors (harness-guard ÷ the baseline-tier arm is that floor);
    // not the no-op listener (a diagnostic) or the A/A arm (the bench's resolution).
    for (const peer of arms.filter((arm) => arm !== 'hg' && arm !== 'nl' && arm !== 'aa')) row.vs[peer] = pairedRatio(row, 'hg', peer)
    return row
  }
}

// ---- section 2: claim overhead ----------------------------------------------------------

/**
 * harness-guard optimized from its first call (ht) against the row's bar: its
 * paired ratio to the plain-JS guard or to the crossing floor arm, the lower, with
 * the arm's name. V8 runs a wasm function in its baseline tier (Liftoff) until it
 * has used its tiering budget; the few thousand bad batches of a row leave the
 * guard's rarely-run wasm there, while the plain-JS guard's judging reaches V8's
 * optimizing compiler within the row. At or below 1, harness-guard's excess over
 * its bar is no more than that tier costs it (harness-guard ÷ ht, the baseline-tier
 * floor). Judged where neither the plain-JS guard nor the crossing floor holds the
 * row.
 */
function tierOf(r) {
  const [pj, xf] = ['pj', 'xf'].map((arm) => pairedRatio(r, 'ht', arm).median)
  return pj <= xf ? { ratio: pj, arm: 'the plain-JS guard' } : { ratio: xf, arm: 'the crossing floor arm' }
}

async function claims() {
  const reps = QUICK ? 2 : 5
  const rows = pairedRounds('claims', ['hg', 'pj', 'sd', 'nl', 'xf', 'aa', 'ht'], reps, CLAIM_CYCLES)
  const results = []
  for (const [size, bad] of CLAIM_ROWS) {
    const r = { size, bad, reps, ...rows(rowKey(size, bad)) }
    // The bench's resolution on this row: the plain-JS guard ÷ itself, paired in the same rounds.
    r.aa = pairedRatio(r, 'aa', 'pj')
    // On a row with bad entries, the baseline-tier arm against the row's bar (`withinTier`).
    if (bad) r.tier = tierOf(r)
    results.push(r)
    progress(`batch ${size}${bad ? ', 10% bad' : ', clean'}: per claim unguarded ${ns(r.un)}, harness-guard ${ns(r.hg)} (${signedNs(r.over.hg)}), plain-JS ${ns(r.pj)} (${signedNs(r.over.pj)}), seed ${ns(r.sd)} (${signedNs(r.over.sd)}), no-op listener ${signedNs(r.over.nl)}; paired ÷ plain-JS ${times(r.vs.pj)}, ÷ seed ${times(r.vs.sd)}${bad ? `, ÷ (plain-JS + one crossing) ${times(r.vs.xf)}, ÷ (harness-guard, wasm optimized from its first call) ${times(r.vs.ht)}` : ''}; A/A (plain-JS ÷ itself) ${times(r.aa)}`)
  }
  return results
}

// ---- section 3: scale (child process per run) ------------------------------------------------

/**
 * Memory per waiting query: N unanswered queries issued, then the JS heap
 * (after collection) and the wasm memory read against the same before
 * issuing; then the callers abort them all. The deadline is far away, so
 * nothing expires while they are counted.
 */
async function heapChild({ arm, n }) {
  const pkg = await loadPackage()
  const host = await inspectHost()
  const dispose = await armInspect(arm, host, pkg, 600000)
  await gc()
  const before = process.memoryUsage()
  const baseWasm = wasmBytes()
  const callers = new Array(n)
  const waits = new Array(n)
  for (let i = 0; i < n; i += 1) {
    callers[i] = new AbortController()
    waits[i] = host.handle.query('client', 'Bench', 'read', {}, AGENT, callers[i].signal).then(() => {}, () => {})
  }
  await gc()
  const after = process.memoryUsage()
  const wasm = wasmBytes()
  for (const caller of callers) caller.abort()
  await Promise.all(waits)
  const pending = host.raw.pending.size
  await dispose()
  return {
    arm, n, pending,
    heap: after.heapUsed - before.heapUsed, external: after.external - before.external,
    rss: after.rss - before.rss, wasm: wasm - baseWasm,
  }
}

/**
 * N unanswered queries issued at once, each ended at its deadline. `startAfterMs`
 * (a diagnostic only; make bench never sets it) waits that long before issuing, so
 * that a run can tell what the process's age does to the collections among the endings.
 */
async function scaleChild({ arm, n, deadlineMs, startAfterMs = 0 }) {
  const pkg = await loadPackage()
  const host = await inspectHost()
  const dispose = await armInspect(arm, host, pkg, deadlineMs)
  if (startAfterMs > 0) await new Promise((resolve) => setTimeout(resolve, startAfterMs))
  await gc()
  const baseRss = process.memoryUsage().rss
  const baseWasm = wasmBytes()
  let peakRss = baseRss
  let peakWasm = baseWasm
  const sample = () => {
    peakRss = Math.max(peakRss, process.memoryUsage().rss)
    peakWasm = Math.max(peakWasm, wasmBytes())
  }
  const sampler = setInterval(sample, 20)
  const collections = observeCollections()
  const starts = new Float64Array(n)
  const ends = new Float64Array(n)
  let wrongCode = 0
  let resolved = 0
  const waits = new Array(n)
  // Unguarded, nothing ever ends these queries: the arm only shows the host's
  // own memory for them, and is cancelled by its callers after the deadline.
  const callers = arm === 'un' ? new Array(n) : undefined
  const t0 = performance.now()
  for (let i = 0; i < n; i += 1) {
    const caller = new AbortController()
    if (callers) callers[i] = caller
    starts[i] = performance.now()
    waits[i] = host.handle.query('client', 'Bench', 'read', {}, AGENT, caller.signal).then(
      () => { ends[i] = performance.now(); resolved += 1 },
      (error) => { ends[i] = performance.now(); if (error?.code !== 'INSPECT_CLIENT_DEADLINE') wrongCode += 1 },
    )
  }
  const issuedMs = performance.now() - t0
  sample()
  if (callers) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    sample()
    for (const caller of callers) caller.abort()
  }
  await Promise.all(waits)
  sample()
  clearInterval(sampler)
  const allMs = ends.reduce((a, b) => Math.max(a, b), 0) - t0
  // A query's deadline runs from its own start; the guard reads the clock a few µs later still.
  const late = Float64Array.from(ends, (end, i) => end - starts[i] - deadlineMs).sort()
  await tick()
  await new Promise((resolve) => setTimeout(resolve, 5))
  const timeouts = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length
  // A stop-the-world pause delays every query that falls due during it, whatever
  // ends them: the longest one from the first deadline to the last rejection.
  const pause = collections.longest(t0 + deadlineMs, t0 + allMs)
  const inFlight = arm === 'hg' ? pkg.glue.inFlight() : undefined
  const pending = host.raw.pending.size
  await dispose()
  return {
    arm, n, deadlineMs, issuedMs, allMs,
    p50: percentile(late, 50), p99: percentile(late, 99), max: late[late.length - 1], min: late[0],
    baseRss, peakRss, maxRss: process.resourceUsage().maxRSS * 1024, baseWasm, peakWasm,
    pending, timeouts, flights: inFlight?.[0], timerArmed: inFlight?.[1], wrongCode, resolved,
    pauseMs: pause.ms, pauseKind: pause.kind,
  }
}

/**
 * The process's garbage collections from now on (Node's `gc` performance entries):
 * `longest(from, to)` is the longest pause that overlaps [from, to] (ms on
 * `performance.now()`'s clock), with its kind, and stops observing.
 */
function observeCollections() {
  const seen = []
  const observer = new PerformanceObserver((list) => { seen.push(...list.getEntries()) })
  observer.observe({ entryTypes: ['gc'] })
  const KINDS = [[perfConstants.NODE_PERFORMANCE_GC_MAJOR, 'mark-compact'], [perfConstants.NODE_PERFORMANCE_GC_MINOR, 'scavenge']]
  return {
    longest(from, to) {
      seen.push(...observer.takeRecords())
      observer.disconnect()
      let longest = { ms: 0, kind: 'none' }
      for (const entry of seen) {
        if (entry.startTime + entry.duration < from || entry.startTime > to || entry.duration <= longest.ms) continue
        longest = { ms: entry.duration, kind: KINDS.find(([bit]) => entry.detail?.kind & bit)?.[1] ?? 'other' }
      }
      return longest
    },
  }
}

/**
 * The cost of ending one waiting query: N queries fall due at the same moment
 * (the event loop is held until every deadline has passed), and the time until
 * the last rejection is divided by N. Unguarded, the callers abort them at once:
 * that is the host's own clean-up, which every guard's abort path also runs.
 */
async function burstChild({ arm, n }) {
  const pkg = await loadPackage()
  const host = await inspectHost()
  const deadlineMs = 200
  const dispose = await armInspect(arm, host, pkg, deadlineMs)
  await gc()
  const callers = new Array(n)
  const waits = new Array(n)
  let last = 0
  let ended = 0
  const t0 = performance.now()
  for (let i = 0; i < n; i += 1) {
    callers[i] = new AbortController()
    waits[i] = host.handle.query('client', 'Bench', 'read', {}, AGENT, callers[i].signal)
      .then(() => {}, () => { last = performance.now(); ended += 1 })
  }
  const issuedMs = performance.now() - t0
  while (performance.now() < t0 + issuedMs + deadlineMs + 20) { /* hold the loop: every deadline passes */ }
  const t1 = performance.now()
  if (arm === 'un') for (const caller of callers) caller.abort()
  await Promise.all(waits)
  const pending = host.raw.pending.size
  await dispose()
  return { arm, n, ended, pending, issuedMs, perQuery: (last - t1) * 1e6 / n }
}

// ---- section 4: growth (child process per workload) ------------------------------------------

async function growthChild({ workload, ops, every, arm = 'hg' }) {
  const pkg = await loadPackage()
  const samples = []
  const record = async (done) => {
    await gc()
    samples.push({ ops: done, heap: process.memoryUsage().heapUsed, wasm: wasmBytes(), rss: process.memoryUsage().rss })
  }
  if (workload === 'queries') {
    const host = await inspectHost({ page: true })
    await armInspect(arm, host, pkg, 15000)
    // Through the raw instance (as the page gateway holds it): the guard is the same, the run shorter.
    const query = () => host.raw.query('client', 'Bench', 'read', {}, AGENT, new AbortController().signal)
    for (let i = 0; i < every; i += 1) await query() // warm-up, not counted
    await record(0)
    for (let done = 0; done < ops;) {
      for (let i = 0; i < every; i += 1) await query()
      done += every
      await record(done)
    }
    if (host.raw.pending.size !== 0) throw new Error('pending entries left')
  } else {
    // Claims of batches of 10 with one bad entry, on agents that come and go:
    // a fresh agent every 1,000 claims (its session log grows with every
    // splice, which is the host's memory, not the guard's).
    const host = await agentHost(arm, pkg)
    const sets = batches(10, true)
    const perAgent = 1000
    const run = async (count) => {
      for (let done = 0; done < count; done += perAgent) {
        const handle = await host.agent()
        const inbox = handle.agent.inbox
        for (let i = 0; i < perAgent; i += 1) {
          inbox.splice('next-step', inbox.nextStep.length, 0, sets[i % 2])
          inbox.claim('next-step', 1)
        }
        await handle.dispose()
      }
    }
    await run(every) // warm-up, not counted
    await record(0)
    for (let done = 0; done < ops;) {
      await run(every)
      done += every
      await record(done)
    }
  }
  const second = samples.filter((s) => s.ops >= ops / 2)
  const heap = slope(second.map((s) => [s.ops / 1000, s.heap]))
  const wasm = slope(second.map((s) => [s.ops / 1000, s.wasm]))
  return {
    workload, ops, samples,
    heapSlope: heap.slope, heapSe: heap.se, wasmSlope: wasm.slope,
    heapFirst: samples[0].heap, heapLast: samples.at(-1).heap,
    wasmFirst: samples[0].wasm, wasmLast: samples.at(-1).wasm,
  }
}

// ---- section 5: start-up and size -----------------------------------------------------------

/** What a running host has loaded before any plugin row is mounted. */
const HOST_MODULES = [
  '@deepseek-ai/cordis', '@deepseek-ai/schemastery', '@deepseek-ai/dsh-llm', '@deepseek-ai/dsh-session',
  '@deepseek-ai/dsh-tools', '@deepseek-ai/dsh-agent', '@deepseek-ai/dsh-agent-loop', '@deepseek-ai/dsh-cordis-host-runner',
]

function startup() {
  const runs = QUICK ? 3 : 9
  const scripts = {
    // Peers already loaded (as in a running host), then the package: its own cost.
    own: `const t0 = performance.now(); for (const m of ${JSON.stringify(HOST_MODULES)}) await import(m)
          const t1 = performance.now(); await import('${PACKAGE}'); console.log(JSON.stringify({ peers: t1 - t0, own: performance.now() - t1 }))`,
    // Nothing loaded before: the package with its peers, from cold.
    cold: `const t0 = performance.now(); await import('${PACKAGE}'); console.log(JSON.stringify({ cold: performance.now() - t0 }))`,
    // The first entry (a mount, a config check): read, compile and instantiate the
    // .wasm and start its runtime, which importing leaves to it.
    glue: `const h = await import(new URL('./host.js', import.meta.resolve('${PACKAGE}')).href); const t0 = performance.now(); h.ready(); console.log(JSON.stringify({ glue: performance.now() - t0 }))`,
  }
  const out = { peers: [], own: [], cold: [], glue: [] }
  for (let i = 0; i < runs; i += 1) {
    for (const script of Object.values(scripts)) {
      const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: RIG, encoding: 'utf8' })
      if (child.status !== 0) throw new Error(`start-up child failed: ${child.stderr}`)
      for (const [k, v] of Object.entries(JSON.parse(child.stdout.trim().split('\n').at(-1)))) out[k].push(v)
    }
  }
  const pkgDir = path.dirname(fileURLToPath(import.meta.resolve(PACKAGE)))
  const wasm = readFileSync(path.join(pkgDir, 'harness_guard_bg.wasm'))
  const version = JSON.parse(readFileSync(path.join(pkgDir, 'package.json'), 'utf8')).version
  const dist = path.join(REPO, 'dist')
  const tarball = existsSync(dist) ? readdirSync(dist).find((f) => f === `${PACKAGE}-${version}.tgz`) : undefined
  return {
    runs,
    peers: median(out.peers), own: median(out.own), cold: median(out.cold), glue: median(out.glue),
    wasmRaw: wasm.length, wasmGzip: gzipSync(wasm, { level: 9 }).length,
    tarball: tarball ? { name: tarball, bytes: statSync(path.join(dist, tarball)).size } : undefined,
  }
}

// ---- children -------------------------------------------------------------------------------

/**
 * A child's flags: this process's own (under --profile they carry --cpu-prof
 * and --trace-gc, so every child is profiled too), --expose-gc, and those of
 * the arm (`ht`) or the section (growth) that measures under a V8 setting.
 */
const childFlags = (kind, name, params) => [...new Set(['--expose-gc', ...process.execArgv.filter((f) => !f.startsWith('--cpu-prof-name'))]),
  ...(params.arm === 'ht' ? ['--no-liftoff'] : []),
  // Growth children keep the bytecode of functions gone cold: V8 drops it after a
  // while, which put steps of up to 1 MiB into the heap samples of §4.
  ...(kind === 'growth' ? ['--no-flush-bytecode'] : []),
  ...(process.env.HARNESS_GUARD_BENCH_PROFILE ? [`--cpu-prof-name=${name}.cpuprofile`] : [])]
/** The child's result: the last line of its stdout that is a JSON object (--trace-gc lines come before). */
const resultOf = (stdout) => JSON.parse(stdout.trim().split('\n').filter((line) => line.startsWith('{')).at(-1))
let childSeq = 0
/** A child's name under --profile: its CPU profile and --trace-gc lines are filed under it. */
const childName = (kind, params) => {
  childSeq += 1
  return `child-${String(childSeq).padStart(2, '0')}-${kind}-${params.arm ?? 'hg'}${params.workload ? `-${params.workload}` : ''}${params.n ? `-${params.n}` : ''}`
}
/** Under --profile, keep a child's --trace-gc lines beside its CPU profile. */
function keepTrace(name, stdout) {
  const dir = process.env.HARNESS_GUARD_BENCH_PROFILE
  if (!dir) return
  writeFileSync(path.join(dir, `${name}.trace-gc.txt`), stdout.split('\n').filter((line) => !line.startsWith('{')).join('\n'))
}

function child(kind, params) {
  const name = childName(kind, params)
  const result = spawnSync(process.execPath, [...childFlags(kind, name, params), fileURLToPath(import.meta.url), '--child', kind, JSON.stringify(params)], {
    cwd: RIG, encoding: 'utf8', maxBuffer: 256 << 20,
  })
  if (result.status !== 0) throw new Error(`child ${kind} ${JSON.stringify(params)} failed (${result.status}): ${result.stderr}`)
  keepTrace(name, result.stdout)
  return resultOf(result.stdout)
}

/** Two growth children at once (memory, not time, is measured there), as promises. */
function childAsync(kind, params) {
  const name = childName(kind, params)
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [...childFlags(kind, name, params), fileURLToPath(import.meta.url), '--child', kind, JSON.stringify(params)], { cwd: RIG })
    let stdout = ''
    let stderr = ''
    proc.stdout.on('data', (d) => { stdout += d })
    proc.stderr.on('data', (d) => { stderr += d })
    proc.on('close', (code) => {
      if (code !== 0) return reject(new Error(`child ${kind} failed (${code}): ${stderr}`))
      keepTrace(name, stdout)
      resolve(resultOf(stdout))
    })
  })
}

if (CHILD) {
  const params = JSON.parse(argv[argv.indexOf('--child') + 2])
  const run = { scale: scaleChild, heap: heapChild, burst: burstChild, growth: growthChild, claims: claimsChild, calls: callsChild }[CHILD]
  // `--other-timer`: an unrelated timer alive for the child's whole run, let go.
  const other = params.otherTimer === undefined ? undefined : setInterval(() => {}, params.otherTimer).unref()
  const result = await run(params)
  clearInterval(other)
  console.log(JSON.stringify(result))
  process.exit(0)
}

// ---- --profile: one section in a child under --cpu-prof and --trace-gc ------------------------

/** The functions with the most self time in a .cpuprofile, one line. */
function profileSummary(file) {
  const profile = JSON.parse(readFileSync(file, 'utf8'))
  const byNode = new Map(profile.nodes.map((node) => [node.id, node]))
  const self = new Map()
  let total = 0
  for (let i = 0; i < profile.samples.length; i += 1) {
    const node = byNode.get(profile.samples[i])
    const dt = profile.timeDeltas[i] ?? 0
    total += dt
    const { functionName, url, lineNumber } = node.callFrame
    // Where: the package path under node_modules (`@deepseek-ai/cordis/lib/index.js`), else the file name.
    const where = url.includes('node_modules/') ? url.slice(url.lastIndexOf('node_modules/') + 13) : path.basename(url)
    const key = `${functionName || '(anonymous)'}${url ? ` ${where}:${lineNumber + 1}` : ''}`
    self.set(key, (self.get(key) ?? 0) + dt)
  }
  const top = [...self].sort((a, b) => b[1] - a[1]).slice(0, 8)
  return `${(total / 1000).toFixed(0)} ms sampled; most self time: ${top.map(([k, v]) => `${k} ${(100 * v / total).toFixed(1)}%`).join(', ')}`
}

/** Collections in a --trace-gc file: count and total pause per kind, the longest pause. */
function gcSummary(file) {
  const kinds = new Map()
  let longest = [0, '']
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const m = /ms: ([A-Za-z -]+?) [\d.]+ \([\d.]+\) -> [\d.]+ \([\d.]+\) MB, (?:pooled: [\d.]+ MB, )?([\d.]+) \/ [\d.]+ ms/.exec(line)
    if (!m) continue
    const [, kind, pause] = m
    const k = kinds.get(kind) ?? { n: 0, ms: 0 }
    k.n += 1
    k.ms += Number(pause)
    kinds.set(kind, k)
    if (Number(pause) > longest[0]) longest = [Number(pause), `${kind} ${line.split('ms: ')[1].split(',')[0].replace(kind, '').trim()}`]
  }
  if (kinds.size === 0) return 'no collections'
  return `${[...kinds].map(([kind, k]) => `${k.n} × ${kind} (${k.ms.toFixed(1)} ms)`).join(', ')}; longest pause ${longest[0].toFixed(1)} ms (${longest[1]})`
}

const SECTIONS = { 1: 'per-call', 2: 'claims', 3: 'scale', 4: 'growth', 5: 'startup' }
const only = ONLY === undefined ? undefined
  : Object.entries(SECTIONS).find(([k, v]) => ONLY === k || ONLY === v)?.[0]
if (ONLY !== undefined && only === undefined) {
  console.error(`--only=${ONLY}: not a section (${Object.entries(SECTIONS).map(([k, v]) => `${k} or ${v}`).join(', ')})`)
  process.exit(2)
}
const runs = (section) => only === undefined || only === String(section)

if (PROFILE) {
  if (only === undefined) {
    console.error('--profile needs --only=<section>: a profile of the whole run would mix every row')
    process.exit(2)
  }
  const stamp = new Date().toISOString().replace(/[:.]/g, '-').slice(0, 19)
  const dir = path.join(HERE, 'profiles', `${stamp}-section-${only}`)
  mkdirSync(dir, { recursive: true })
  const gcLog = path.join(dir, 'main.trace-gc.txt')
  const args = ['--expose-gc', '--cpu-prof', `--cpu-prof-dir=${dir}`, '--cpu-prof-name=main.cpuprofile', '--trace-gc', fileURLToPath(import.meta.url), ...argv.filter((a) => a !== '--profile')]
  console.log(`profiling section ${only} (${SECTIONS[only]}) in a child: node ${args.map((a) => path.isAbsolute(a) ? path.relative(process.cwd(), a) : a).join(' ')}`)
  const traced = []
  const proc = spawn(process.execPath, args, { cwd: RIG, stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, HARNESS_GUARD_BENCH_PROFILE: dir } })
  let rest = ''
  proc.stdout.on('data', (d) => {
    const lines = (rest + d).split('\n')
    rest = lines.pop()
    for (const line of lines) {
      if (/^\[\d+:0x[0-9a-f]+\]/.test(line)) traced.push(line) // a --trace-gc line
      else console.log(line)
    }
  })
  const code = await new Promise((resolve) => proc.on('close', resolve))
  writeFileSync(gcLog, traced.join('\n') + '\n')
  const files = readdirSync(dir).sort()
  const rel = (f) => path.relative(process.cwd(), path.join(dir, f))
  console.log(`\nprofile of section ${only} (exit ${code}), in ${path.relative(process.cwd(), dir)}/ (timings under the profiler are slower than a plain run's):`)
  for (const f of files.filter((x) => x.endsWith('.cpuprofile'))) {
    const base = f.replace(/\.cpuprofile$/, '')
    console.log(`\n  ${rel(f)}: ${profileSummary(path.join(dir, f))}`)
    if (files.includes(`${base}.trace-gc.txt`)) console.log(`  ${rel(`${base}.trace-gc.txt`)}: ${gcSummary(path.join(dir, `${base}.trace-gc.txt`))}`)
  }
  console.log('\nOpen a .cpuprofile in Chrome DevTools (Performance → Load profile) or https://www.speedscope.app. Sections 3 and 4 do their work in child processes: one profile and one --trace-gc file per child, named by what it ran.')
  process.exit(code ?? 1)
}

// ---- main ---------------------------------------------------------------------------------

/**
 * The claim rows and the two queries of section 1, harness-guard in each of 7
 * children (`--quick`: 3) side by side with what `params` puts in the unguarded
 * host's place, claim by claim and call by call: per row, the median over the
 * children of harness-guard's per-cycle time over the other's, with the
 * interquartile range, printed under `title` (`faster`: who is, below 1.00×).
 */
function sideBySide(title, faster, params) {
  const reps = QUICK ? 3 : 7
  const also = otherTimer === undefined ? '' : `, another ${otherTimer} ms timer alive in each`
  console.log(`${title}, side by side in each of ${reps} children${also}, per claim or call (below 1.00×: ${faster} is faster)`)
  for (const [kind, keys, cycles] of [
    ['claims', CLAIM_ROWS.map(([size, bad]) => [rowKey(size, bad), claimLabel(size, bad)]), CLAIM_CYCLES],
    ['calls', [['client', 'client query answered at once'], ['host', 'host query']], CALL_CYCLES],
  ]) {
    const got = Array.from({ length: reps }, () => child(kind, { arm: 'hg', ...params, ...cycles, otherTimer }))
    for (const [key, label] of keys) console.log(`  ${label}: ${times(summary(got.map((g) => g[key].ratio)), 3)}`)
  }
}

/**
 * `--against=DIR`: this build against the other, the other in the unguarded
 * host's place. Nothing else runs; nothing is written.
 */
if (AGAINST !== undefined && !CHILD) {
  const from = path.resolve(process.cwd(), AGAINST)
  if (!existsSync(path.join(from, 'package.json')) || !existsSync(path.join(from, 'harness_guard_bg.wasm'))) {
    console.error(`--against=${AGAINST}: not a built package (no package.json and harness_guard_bg.wasm in ${from})`)
    process.exit(2)
  }
  const into = path.join(RIG, 'node_modules', AGAINST_NAME)
  rmSync(into, { recursive: true, force: true })
  cpSync(from, into, { recursive: true })
  try {
    sideBySide(`this build (${PACKAGE}) ÷ ${from}`, 'this build', { against: true })
  } finally {
    rmSync(into, { recursive: true, force: true })
  }
  process.exit(0)
}

/**
 * `--beside=pj` (or `pp`, `sd`): harness-guard against a peer, the peer's host in the
 * unguarded host's place, as `--against` sets two builds. Both share one process,
 * timers included (see OTHER_TIMER). Nothing else runs; nothing is written.
 */
if (BESIDE !== undefined && !CHILD) {
  if (BESIDE !== 'pj' && BESIDE !== 'pp' && BESIDE !== 'sd') {
    console.error(`--beside=${BESIDE}: a peer, pj (the plain-JS guard), pp (the same mounted as a cordis plugin) or sd (the seed's guard)`)
    process.exit(2)
  }
  sideBySide(`harness-guard ÷ the ${ARM_NAMES[BESIDE]}`, 'harness-guard', { beside: BESIDE })
  process.exit(0)
}

const started = performance.now()
const fingerprint = packageFingerprint()
const pkg = await loadPackage()
console.log(`harness-guard benchmark${QUICK ? ' (--quick: smoke run, BENCHMARKS.md not written)' : PARTIAL ? ' (a partial run: BENCHMARKS.md not written)' : ''}: Node ${process.version}, ${os.cpus().length} cores`)

await selfCheck(pkg)

const at = () => `[${((performance.now() - started) / 1000).toFixed(0)} s]`
let s1, s2, s4q, s4c, s4cu, s5
if (runs(1)) {
  console.log(`== 1. per-call overhead ${at()}`)
  s1 = await perCall(pkg)
}
if (runs(2)) {
  console.log(`== 2. claim overhead ${at()}`)
  s2 = await claims()
}

const s3 = []
/** Section 3's sizes, in the order they ran, and the row of `arm` at `n` waiting queries. */
const scaleSizes = () => [...new Set(s3.map((r) => r.n))]
const scaleRow = (n, arm) => s3.find((r) => r.n === n && r.arm === arm)
const s3heap = {}
const s3b = {}
const BURST = QUICK ? 5000 : 20000
// Every query is issued before the first deadline, so that lateness measures the
// expiry of N waiting queries, not the benchmark's own issuing loop.
const DEADLINES = { 1000: 500, 3000: 800, 10000: 1500, 30000: 4000, 100000: 12000, 300000: 36000 }
const HEAP_N = QUICK ? 10000 : 100000
const SCALE_ARMS = ['un', 'hg', 'pj', 'sd', 'sc']
const scaleArms = (ARMS ?? SCALE_ARMS).filter((arm) => SCALE_ARMS.includes(arm))
/** Where the p99 is judged, and the floor arm (sc) runs: 100,000 queries and more; memory and the burst of endings measure the other arms. */
const JUDGED_N = 100000
const nonFloorArms = scaleArms.filter((arm) => arm !== 'sc')
if (runs(3)) {
  console.log(`== 3. scale: concurrent unanswered client queries ${at()}`)
  for (const n of SIZES ?? (QUICK ? [1000, 10000] : [1000, 10000, 30000, 100000])) {
    const deadlineMs = DEADLINES[n] ?? Math.max(500, Math.ceil(n / 10000) * 1200)
    for (const arm of scaleArms) {
      if (arm === 'sc' && n < JUDGED_N) continue
      // Three children for harness-guard, the seed's guard and the floor arm (the
      // 100,000-query budget compares them in the same run), one for the plain-JS guard above 30,000.
      const reps = QUICK || arm === 'un' || (n >= 30000 && arm === 'pj') ? 1 : 3
      const results = []
      for (let r = 0; r < reps; r += 1) results.push(child('scale', { arm, n, deadlineMs }))
      if (arm !== 'un' && results.some((x) => x.issuedMs >= deadlineMs)) {
        console.warn(`  warning: issuing ${n} queries took longer than the ${deadlineMs} ms deadline; lateness includes the issuing loop`)
      }
      const pick = (k) => median(results.map((x) => x[k]))
      const worst = (k) => Math.max(...results.map((x) => x[k]))
      const r = {
        arm, n, reps, deadlineMs,
        issuedMs: pick('issuedMs'), allMs: pick('allMs'), p50: pick('p50'), p99: pick('p99'), max: pick('max'),
        p99s: results.map((x) => x.p99), pauses: results.map((x) => [x.pauseMs, x.pauseKind]),
        baseRss: pick('baseRss'), peakRss: pick('peakRss'), maxRss: pick('maxRss'), baseWasm: pick('baseWasm'), peakWasm: pick('peakWasm'),
        pending: worst('pending'), timeouts: worst('timeouts'), flights: arm === 'hg' ? worst('flights') : undefined,
        wrongCode: worst('wrongCode') + worst('resolved'),
      }
      s3.push(r)
      if (arm === 'un') {
        progress(`${int(n)} unguarded: issued in ${ms(r.issuedMs, 0)}, peak RSS ${mib(r.maxRss)} (+${mib(r.peakRss - r.baseRss)}); nothing ends them (the bench cancels them)`)
        continue
      }
      progress(`${int(n)} ${ARM_NAMES[arm]}: all rejected after ${ms(r.allMs, 0)} (issued in ${ms(r.issuedMs, 0)}), lateness p50 ${ms(r.p50)} p99 ${ms(r.p99)}${reps > 1 ? ` (${p99s(r)})` : ''} max ${ms(r.max)}, longest GC pause while they ended ${pauses(r)}, peak RSS ${mib(r.maxRss)}, pending ${r.pending}, Timeouts ${r.timeouts}`)
    }
  }
  if (SIZES === undefined || SIZES.includes(HEAP_N)) {
    for (const arm of nonFloorArms) {
      const h = child('heap', { arm, n: HEAP_N })
      if (h.pending !== 0) throw new Error(`heap ${arm}: ${h.pending} pending entries left`)
      s3heap[arm] = h
    }
    progress(`${int(HEAP_N)} waiting queries, JS heap after collection + wasm memory, per query: ${nonFloorArms.map((arm) => `${ARM_NAMES[arm]} ${int((s3heap[arm].heap + s3heap[arm].wasm) / HEAP_N)} B`).join(', ')}`)
  }
  if (SIZES === undefined) {
    for (const arm of nonFloorArms) {
      const results = Array.from({ length: QUICK ? 1 : 3 }, () => child('burst', { arm, n: BURST }))
      if (results.some((x) => x.ended !== BURST || x.pending !== 0)) throw new Error(`burst ${arm}: not every query ended`)
      s3b[arm] = median(results.map((x) => x.perQuery))
    }
    progress(`ending ${int(BURST)} queries that fall due at once, per query: ${nonFloorArms.map((arm) => `${ARM_NAMES[arm]}${arm === 'un' ? ' (the callers abort)' : ''} ${ns(s3b[arm])}`).join(', ')}`)
  }
}

if (runs(4)) {
  console.log(`== 4. growth (two child processes side by side) ${at()}`)
  const claimsGrowth = { workload: 'claims', ops: QUICK ? 20000 : 300000, every: QUICK ? 2000 : 10000 }
  ;[s4q, [s4c, s4cu]] = await Promise.all([
    childAsync('growth', { workload: 'queries', ops: QUICK ? 100000 : 1000000, every: QUICK ? 10000 : 50000 }),
    // The same claims unguarded, after the guarded run: the host's own drift, for comparison.
    childAsync('growth', claimsGrowth).then(async (g) => [g, await childAsync('growth', { ...claimsGrowth, arm: 'un' })]),
  ])
  for (const g of [s4q, s4c]) {
    progress(`${int(g.ops)} ${g.workload}: JS heap ${mib(g.heapFirst)} → ${mib(g.heapLast)}, second-half slope ${int(g.heapSlope)} ± ${int(g.heapSe)} B per 1,000; wasm ${kib(g.wasmFirst)} → ${kib(g.wasmLast)}`)
  }
}

if (runs(5)) {
  console.log(`== 5. start-up and size ${at()}`)
  s5 = startup()
  progress(`import: package alone ${ms(s5.own, 2)} (host packages first: ${ms(s5.peers, 1)}), cold ${ms(s5.cold, 1)}, first entry (compile, instantiate, start) ${ms(s5.glue, 2)}; wasm ${int(s5.wasmRaw)} B, ${int(s5.wasmGzip)} B gzipped; tarball ${s5.tarball ? `${int(s5.tarball.bytes)} B` : 'not built'}`)
}

await selfCheck(pkg) // again: the install must not have changed under the run
if (packageFingerprint() !== fingerprint) {
  console.error(`the installed ${PACKAGE} changed while the benchmark ran (rebuilt or reinstalled): its figures would mix two builds, so nothing is written. Run again once the package stays put.`)
  process.exit(1)
}

// ---- the table ----------------------------------------------------------------------------

const rows = []
const row = (section, measure, un, hg, pj, sd, vs, budget, ok) => rows.push({ section, measure, un, hg, pj, sd, vs, budget, ok })
const PARITY = 'parity'
/** ✓ held, ✗ failed, ≈ above its bar by no more than the bench resolves (`atParity`). */
const mark = (ok) => (ok === undefined ? '' : ok === PARITY ? '≈' : ok ? '✓' : '✗')
/** A figure with its overhead: "5,061 ns (+60 ns ± 112)". */
const withOver = (r, arm) => (r[arm] === undefined ? '—' : `${ns(r[arm])} (${signedNs(r[`${arm}Over`])} ± ${int(r[`${arm}Spread`])})`)
/**
 * Whether a claim row holds its budget: at or below the plain-JS guard, or, with
 * bad entries, at or below the crossing floor arm (xf: the plain-JS guard plus
 * the one entry into wasm such a batch costs; a clean batch never crosses), or
 * within the baseline-tier floor (`tierOf`, where neither of those holds).
 */
const withinCrossing = (r) => r.bad && r.vs.xf.median <= 1
const withinTier = (r) => r.bad && r.vs.pj.median > 1 && !withinCrossing(r) && r.tier.ratio <= 1
const claimHolds = (r) => r.vs.pj.median <= 1 || withinCrossing(r) || withinTier(r)
/**
 * The bench's resolution on a claim row: how far from 1 the A/A arm (the
 * plain-JS guard ÷ itself in the same rounds) reads at the further of its
 * quartiles, where two copies of one guard differ by noise alone.
 */
const resolves = (r) => Math.max(Math.abs(r.aa.q1 - 1), Math.abs(r.aa.q3 - 1))
/**
 * A claim row above its budget by no more than that: harness-guard ÷ its bar
 * (the plain-JS guard; for a row with bad entries, the crossing floor if lower)
 * within 1 + the resolution. Marked ≈, never ✓: the budget itself was not met.
 */
const bar = (r) => (r.bad ? Math.min(r.vs.pj.median, r.vs.xf.median) : r.vs.pj.median)
const atParity = (r) => !claimHolds(r) && bar(r) <= 1 + resolves(r)
const claimMark = (r) => (claimHolds(r) ? true : atParity(r) ? PARITY : false)
/**
 * The client query against the plain-JS guard: at or below it, or above it by no
 * more than the crossing floor (arm xc: the plain-JS guard entering harness-guard's
 * wasm where harness-guard's begin and settle do, answered at once), or above that
 * arm too; said as it reads, beside the row's budget (the seed's guard).
 */
function clientFloor(c) {
  if (c.vs.pj.median <= 1) return `at or below the plain-JS guard (${c.vs.pj.median.toFixed(3)}×)`
  const within = c.vs.xc.median <= 1 ? 'within the crossing floor' : 'and above the crossing floor arm'
  return `above the plain-JS guard (${c.vs.pj.median.toFixed(3)}×) ${within}: ÷ the plain-JS guard with two entries into the guard's wasm per query ${times(c.vs.xc, 3)}; the floor, that arm ÷ plain-JS, ${times(pairedRatio(c, 'xc', 'pj'), 3)}`
}
/**
 * The 100,000-query p99 holds at or below the seed's guard's, or the floor
 * arm's: the same guard, settling each expired entry so that nothing is left on
 * the call's signal. That clean-up allocates in the old generation at every
 * ending, which the seed's guard's endings do not (bench/README.md, "The floor arm").
 */
const latenessHolds = (h, d, f) => h.p99 <= d.p99 || (f !== undefined && h.p99 <= f.p99)
const resolution = (r) => `the A/A arm (the plain-JS guard ÷ itself in the same rounds) ${times(r.aa, 3)}, a resolution of ±${(100 * resolves(r)).toFixed(1)}%`
const versus = (r) => `÷ plain-JS ${times(r.vs.pj)} · ÷ seed ${times(r.vs.sd)}`
const worse = (r) => Math.max(r.vs.pj.median, r.vs.sd.median)
// The figures the chart draws, gathered as the rows are written.
const chart = { rows: [], lateness: [], memory: undefined }
const chartRow = (label, r, unit, extra = {}) => chart.rows.push({
  label, unit,
  values: r.over !== undefined
    ? Object.fromEntries(['hg', 'pj', 'sd'].filter((arm) => r.over[arm] !== undefined).map((arm) => [arm, r.over[arm]]))
    : Object.fromEntries(['hg', 'pj', 'sd'].filter((arm) => r[`${arm}Over`] !== undefined).map((arm) => [arm, r[`${arm}Over`]])),
  vs: r.vs, ...extra,
})
/** A figure of a paired row with its added time: "16,600 ns (+2,213 ns)". */
const withAdded = (r, arm) => (r[arm] === undefined ? '—' : `${ns(r[arm])} (${signedNs(r.over[arm])})`)

if (s1) {
  const h = s1.host
  row('1', `host query through the real registry, per call (${h.reps} rounds of children, each beside its own unguarded registry)`, ns(h.un),
    withAdded(h, 'hg'), withAdded(h, 'pj'), withAdded(h, 'sd'), versus(h), '— (a host query never enters wasm: one comparison in the wrapper)')
  chartRow('host query, real registry', h, 'per call', { base: h.un })
  const mh = s1.minimalHost
  row('1', 'host query on a stand-in registry of the same shape (no cordis, not the host): the wrapper\'s pass-through alone', ns(mh.un),
    withOver(mh, 'hg'), withOver(mh, 'pj'), withOver(mh, 'sd'), versus(mh), `< 100 ns added on the stand-in: ${signedNs(mh.hgOver)}`, mh.hgOver < 100)
  chartRow('host query, stand-in registry: the pass-through alone', mh, 'per call', { budget: 100, base: mh.un })
  const c = s1.client
  // Judged in every run, with margin: the median of the paired rounds and their upper quartile.
  const cOk = c.vs.sd.median <= 1 && c.vs.sd.q3 <= 1
  row('1', `client query answered at once, per call (${c.reps} rounds of children, each beside its own unguarded registry)`, ns(c.un),
    withAdded(c, 'hg'), withAdded(c, 'pj'), withAdded(c, 'sd'), versus(c),
    `≤ 1.00× the seed's guard per call, paired, in the median and the upper quartile of the rounds: ${times(c.vs.sd, 3)}; ${clientFloor(c)}`, cOk)
  chartRow('client query answered at once', c, 'per call', { base: c.un })
  const v = s1.resolve
  row('1', 'resolveClientQuery (a pending query, accepted), per call (diagnostic)', ns(v.un), withOver(v, 'hg'), withOver(v, 'pj'), withOver(v, 'sd'), versus(v), '—')
  const m = s1.minimal
  row('1', 'client query on the stand-in registry (diagnostic: the guards\' own cost, the host\'s removed)', ns(m.un), withOver(m, 'hg'), withOver(m, 'pj'), withOver(m, 'sd'), versus(m),
    `— (ratio of added times: ÷ plain-JS ${m.overRatio.pj.median.toFixed(2)}×, ÷ seed ${m.overRatio.sd.median.toFixed(2)}×)`)
}
if (s2) {
  for (const r of s2) {
    const name = claimLabel(r.size, r.bad)
    // The seed's guard does less than the contract (no escaping, no warn-line bound,
    // no value identity, no plain-copy judging of another plugin's batch or of an entry
    // no durable write put in the inbox); the plain-JS
    // guard does it all. Where harness-guard is above the seed's guard but not the
    // plain-JS guard's, that difference, plain-JS ÷ seed in the same rounds, is the floor.
    const floor = pairedRatio(r, 'pj', 'sd')
    const belowSeed = r.vs.sd.median <= 1
    const belowPlain = r.vs.pj.median <= 1
    const crossingFloor = r.bad ? pairedRatio(r, 'xf', 'pj') : undefined
    const budget = belowSeed && belowPlain
      ? `at or below both peers per claim, paired: ${worse(r).toFixed(3)}× (the higher ratio)`
      : belowPlain
        ? `at or below the plain-JS guard (${r.vs.pj.median.toFixed(3)}×); above the seed's guard (${r.vs.sd.median.toFixed(3)}×) within the floor: the contract's work that guard skips, plain-JS ÷ seed in the same rounds ${times(floor, 3)}`
        : withinCrossing(r)
          ? `above the plain-JS guard (${r.vs.pj.median.toFixed(3)}×) within the crossing floor: at or below the plain-JS guard plus one entry into the guard's wasm per judged batch (÷ that arm ${r.vs.xf.median.toFixed(3)}×; the floor, that arm ÷ plain-JS, ${times(crossingFloor, 3)}); ÷ seed ${r.vs.sd.median.toFixed(3)}×`
          : withinTier(r)
            ? `above the plain-JS guard (${r.vs.pj.median.toFixed(3)}×) and the crossing floor arm (${r.vs.xf.median.toFixed(3)}×) within the baseline-tier floor: the same guard with its wasm optimized from its first call (--no-liftoff in its children) reads ${r.tier.ratio.toFixed(3)}× ${r.tier.arm}; the floor, harness-guard ÷ that arm, ${times(r.vs.ht, 3)}; ÷ seed ${r.vs.sd.median.toFixed(3)}×`
            : `above the plain-JS guard, paired: ${r.vs.pj.median.toFixed(3)}× (÷ seed ${r.vs.sd.median.toFixed(3)}×; plain-JS ÷ seed ${times(floor, 3)}${r.bad ? `; ÷ the plain-JS guard plus one entry into the guard's wasm ${times(r.vs.xf, 3)}; the same guard with its wasm optimized from its first call ${r.tier.ratio.toFixed(3)}× ${r.tier.arm}` : ''})${atParity(r) ? ', by no more than the bench resolves' : ''}`
    row('2', `${name}: per claim (${r.reps} rounds of children, each beside its own unguarded host)`, ns(r.un),
      withAdded(r, 'hg'), withAdded(r, 'pj'), withAdded(r, 'sd'), versus(r), `${budget}; ${resolution(r)}`, claimMark(r))
    chartRow(name, r, 'per claim', { base: r.un })
    if (r.size === 1 && !r.bad) {
      row('2', 'claim, batch of 1, clean, with no guard but a plugin with one no-op session/event listener (diagnostic: the host\'s dispatch of the claim\'s event to one more observer, which every arm pays)', ns(r.un),
        withAdded(r, 'nl'), '—', '—', '—', '—')
    }
  }
}
if (s3.length) {
  const cell = (r, text) => (r === undefined ? '—' : text(r))
  for (const n of scaleSizes()) {
    const [u, h, p, d, f] = SCALE_ARMS.map((arm) => scaleRow(n, arm))
    const big = n >= JUDGED_N
    const full = n === 10000 || big
    const deadline = (h ?? p ?? d ?? u).deadlineMs
    if (full) {
      row('3', `${int(n)} unanswered (deadline ${int(deadline)} ms): all rejected after (issuing took)`, cell(u, (x) => `never (${ms(x.issuedMs, 0)})`),
        cell(h, (x) => `${ms(x.allMs, 0)} (${ms(x.issuedMs, 0)})`), cell(p, (x) => `${ms(x.allMs, 0)} (${ms(x.issuedMs, 0)})`), cell(d, (x) => `${ms(x.allMs, 0)} (${ms(x.issuedMs, 0)})`), '—', '—')
    }
    const late = (x) => `${ms(x.p50)} / ${ms(x.p99)} / ${ms(x.max)}${x.reps > 1 ? ` (p99 of ${x.reps} children: ${p99s(x)})` : ''}; longest GC pause while they ended${x.reps > 1 ? ', per child' : ''}: ${pauses(x)}`
    // At 100,000: harness-guard's p99 at or below the seed's guard's, or the floor
    // arm's (that guard leaving nothing on the call's signal, as the contract
    // requires), the medians of three children each in this run.
    const vsSeed = big && h && d ? latenessHolds(h, d, f) : undefined
    row('3', `${int(n)}${full ? '' : ` unanswered (deadline ${int(deadline)} ms)`}: lateness past deadline p50 / p99 / max`, '—',
      cell(h, late), cell(p, late), cell(d, late), '—',
      vsSeed === undefined ? '—' : `p99 at or below the seed's guard's${f ? ', or the floor arm\'s' : ''} (medians of ${[h, d, f].filter(Boolean).map((x) => x.reps).join(', ')} children): ${ms(h.p99)} against ${ms(d.p99)}${f ? ` and ${ms(f.p99)}` : ''}; under 50 ms in ${h.p99s.filter((y) => y < 50).length} of ${h.reps}`, vsSeed)
    if (f) {
      row('3', `${int(n)}: the floor arm, the seed's guard settling each expired entry as the registry's abort path does, so that the registry takes its listener off the call's signal (the contract's "no listener left", which the seed's guard does not keep): lateness p50 / p99 / max`, '—',
        '—', '—', late(f), '—', '—')
    }
    chart.lateness.push({ n, ...Object.fromEntries([['hg', h], ['pj', p], ['sd', d]].filter(([, x]) => x).map(([arm, x]) => [arm, x.p99])) })
    if (full) {
      // A guard's added RSS over the unguarded arm's, per waiting query.
      const rss = (x) => `${mib(x.maxRss)} (+${mib(x.peakRss - x.baseRss)}${u && x !== u ? `; ${int((x.peakRss - x.baseRss - (u.peakRss - u.baseRss)) / n)} B per query over unguarded` : ''})`
      row('3', `${int(n)}: peak RSS (added over the RSS before issuing) · wasm memory`, cell(u, rss), cell(h, (x) => `${rss(x)} · ${kib(x.peakWasm)}`), cell(p, rss), cell(d, rss), '—', '—')
      const left = (x) => `${x.pending} / ${x.timeouts}${x.wrongCode ? ` (${x.wrongCode} not INSPECT_CLIENT_DEADLINE)` : ''}`
      row('3', `${int(n)}: pending entries / Timeouts left afterwards`, '—', cell(h, left), cell(p, left), cell(d, left), '—',
        big && h ? 'pending empty, no Timeout' : '—', big && h ? h.pending === 0 && h.timeouts === 0 && h.wrongCode === 0 : undefined)
    }
    if (n === HEAP_N && s3heap.un) {
      const base = s3heap.un
      const per = (x) => (x.heap - base.heap + x.wasm) / n
      const mem = (x) => `${int(per(x))} B (JS heap ${int((x.heap - base.heap) / n)} + wasm ${int(x.wasm / n)})`
      const guards = ['hg', 'pj', 'sd'].filter((arm) => s3heap[arm])
      row('3', `${int(n)} waiting: memory per waiting query (JS heap after collection, over the unguarded arm's, plus the wasm memory's growth, ÷ N; the unguarded column is the host's own)`,
        `${int(base.heap / n)} B`, cell(s3heap.hg, mem), cell(s3heap.pj, mem), cell(s3heap.sd, mem), '—',
        `stated: ${s3heap.hg ? int(per(s3heap.hg)) : '—'} B per waiting query`)
      chart.memory = { n, host: base.heap / n, ...Object.fromEntries(guards.map((arm) => [arm, per(s3heap[arm])])) }
    }
  }
  if (s3b.un !== undefined) {
    const over = (arm) => (s3b[arm] === undefined ? '—' : `${ns(s3b[arm])} (${signedNs(s3b[arm] - s3b.un)})`)
    row('3', `ending ${int(BURST)} queries that fall due at once, per query (unguarded: the callers abort them)`,
      ns(s3b.un), over('hg'), over('pj'), over('sd'), '—',
      `— (floor for a guard that ends a query through the registry's abort path: that path itself, the unguarded figure, ${ns(s3b.un)})`)
  }
}
// "No growth": less than one byte per operation over the second half (a leak of
// a single object per operation would be 16 B or more). A negative slope is no growth.
const flat = (b) => b < 1000
if (s4q) {
  for (const g of [s4q, s4c]) {
    const what = g.workload === 'queries' ? 'answered client queries' : 'claims (batches of 10, 1 bad), agents recycled'
    const claims = g.workload === 'claims'
    const control = claims ? `${int(s4cu.heapSlope)} ± ${int(s4cu.heapSe)} B / 1,000 (${mib(s4cu.heapFirst)} → ${mib(s4cu.heapLast)})` : '—'
    // The claims workload grows the host's own heap too (the unguarded run beside it):
    // the guard's growth is the difference.
    const own = claims ? g.heapSlope - s4cu.heapSlope : g.heapSlope
    const ownSe = claims ? Math.hypot(g.heapSe, s4cu.heapSe) : g.heapSe
    row('4', `${int(g.ops)} ${what}: JS heap, second-half slope`, control,
      `${int(g.heapSlope)} ± ${int(g.heapSe)} B / 1,000 (${mib(g.heapFirst)} → ${mib(g.heapLast)})`, '—', '—', '—',
      QUICK ? 'not judged (--quick: too short)'
        : claims ? `no growth beyond the unguarded run's (< 1,000 B / 1,000): ${int(own)} ± ${int(ownSe)}`
          : 'no growth (< 1 B per op, i.e. < 1,000 B / 1,000)',
      QUICK ? undefined : flat(own))
    row('4', `${int(g.ops)} ${g.workload}: wasm memory, second-half slope`, '—',
      `${int(g.wasmSlope)} B / 1,000 (${kib(g.wasmFirst)} → ${kib(g.wasmLast)})`, '—', '—', '—', QUICK ? 'not judged (--quick)' : 'no growth (0)', QUICK ? undefined : g.wasmSlope === 0)
  }
}
if (s5) {
  row('5', 'import: package alone (host packages loaded) · cold with its peers · then the first entry (a mount or config check: compile, instantiate, start; importing runs no wasm)', '—',
    `${ms(s5.own, 2)} · ${ms(s5.cold, 1)} · ${ms(s5.glue, 2)}`, '—', '—', '—', `< 10 ms: ${ms(s5.own, 2)}`, s5.own < 10)
  row('5', '.wasm raw · gzipped (-9)', '—', `${int(s5.wasmRaw)} B · ${int(s5.wasmGzip)} B`, '—', '—', '—',
    `< 64 KB gzipped: ${(s5.wasmGzip / 1000).toFixed(1)} KB`, s5.wasmGzip < 64000)
  row('5', 'tarball (npm pack)', '—', s5.tarball ? `${int(s5.tarball.bytes)} B` : 'not built (make pack)', '—', '—', '—', '—')
}

const header = '| § | Measure | Unguarded | harness-guard | Plain-JS guard | Seed\'s guard (§1, §3: 000 inspect; §2: 002 inbox) | harness-guard ÷ peer, per call (paired: median, IQR) | Budget (harness-guard) | |'
const table = [header, '|---|---|---|---|---|---|---|---|---|',
  ...rows.map((r) => `| ${r.section} | ${r.measure} | ${r.un} | ${r.hg} | ${r.pj} | ${r.sd} | ${r.vs} | ${r.budget} | ${mark(r.ok)} |`)].join('\n')

/**
 * The READMEs' summary (at most 7 rows, four columns): what a user weighs, each
 * figure from a row of the full table above, with the comparison it was judged on.
 */
function summaryTable() {
  const out = ['| Measure | harness-guard | Against | |', '|---|---|---|---|']
  const add = (measure, figure, against, ok) => out.push(`| ${measure} | ${figure} | ${against} | ${mark(ok)} |`)
  if (s1) {
    const c = s1.client
    add('Client query a page answers at once, per call', `${times(c.vs.sd, 3)} the seed's guard's time`,
      `÷ plain-JS guard ${times(c.vs.pj, 3)}${c.vs.pj.median > 1 ? `, ÷ plain-JS guard with two crossings into wasm per query (the crossing floor) ${times(c.vs.xc, 3)}` : ''}; paired per call in ${c.reps} rounds`, c.vs.sd.median <= 1 && c.vs.sd.q3 <= 1)
    const h = s1.host
    add('Host query through the real registry, per call', `${signedNs(h.over.hg)} added (never enters wasm)`,
      `unguarded ${ns(h.un)}; on a stand-in registry of its shape ${signedNs(s1.minimalHost.hgOver)} (budget < 100 ns)`, s1.minimalHost.hgOver < 100)
  }
  if (s2) {
    // The claim row harness-guard does worst on against the same contract in plain
    // JavaScript, among the rows that decide the mark (above their budget, else at
    // parity within the bench's resolution, else all: a row with bad entries holds
    // within the crossing floor or the baseline-tier floor, §2), so the row named is
    // one the mark is for.
    const marks = s2.map(claimMark)
    const ok = marks.includes(false) ? false : marks.includes(PARITY) ? PARITY : true
    const named = s2.filter((_, i) => marks[i] === ok)
    const r = named.reduce((a, b) => (b.vs.pj.median > a.vs.pj.median ? b : a))
    const which = ok === false ? `${named.length} of ${s2.length} rows above budget; the worst`
      : ok === PARITY ? `${named.length} of ${s2.length} rows at parity, within the bench's resolution (the rest at or below); the highest`
        : 'worst row'
    add('Claims (batches of 1, 10, 100; clean and 10% bad), per claim',
      `${which}: batch of ${r.size} ${r.bad ? '10% bad' : 'clean'}, ${times(r.vs.pj, 3)} the plain-JS guard's${r.bad ? `; ${times(r.vs.xf, 3)} the plain-JS guard's with one entry into the guard's wasm (the crossing floor)` : ''}${withinTier(r) ? `; harness-guard with its wasm optimized from its first call ${r.tier.ratio.toFixed(3)}× ${r.tier.arm}'s (the baseline-tier floor ${times(r.vs.ht, 3)})` : ''}; A/A ${times(r.aa, 3)}`,
      `÷ seed's guard ${times(r.vs.sd, 3)} (that guard skips escaping, the warn-line bound, value identity and the check of entries no durable write put in the inbox)`, ok)
  }
  const big = s3.filter((x) => x.n >= JUDGED_N)
  const [h100, d100, f100] = ['hg', 'sd', 'sc'].map((arm) => big.find((x) => x.arm === arm))
  if (h100 && d100) {
    add('100,000 unanswered queries: p99 lateness past the deadline', `${ms(h100.p99)} (${p99s(h100)})`,
      `seed's guard ${ms(d100.p99)} (${p99s(d100)})${f100 ? `; the same guard leaving nothing on the call's signal, as the contract requires (the floor arm) ${ms(f100.p99)} (${p99s(f100)})` : ''}`,
      latenessHolds(h100, d100, f100))
  }
  if (s3heap.hg && s3heap.un) {
    const per = (x) => (x.heap - s3heap.un.heap + x.wasm) / HEAP_N
    add(`Memory per waiting query (${int(HEAP_N)} waiting)`, `${int(per(s3heap.hg))} B`,
      `seed's guard ${s3heap.sd ? `${int(per(s3heap.sd))} B` : '—'}; the host's own ${int(s3heap.un.heap / HEAP_N)} B`, undefined)
  }
  if (s4q && s4c) {
    const claimsOwn = s4c.heapSlope - s4cu.heapSlope
    add(`Memory over 1,000,000 queries and ${int(s4c.ops)} claims`, `${int(s4q.heapSlope)} and ${int(claimsOwn)} B per 1,000 (JS heap); wasm ${int(s4q.wasmSlope)} and ${int(s4c.wasmSlope)}`,
      'flat: under 1 B per operation', QUICK ? undefined : flat(s4q.heapSlope) && flat(claimsOwn) && s4q.wasmSlope === 0 && s4c.wasmSlope === 0)
  }
  if (s5) {
    add('Import (host packages loaded) · .wasm gzipped', `${ms(s5.own, 2)} · ${(s5.wasmGzip / 1000).toFixed(1)} KB`,
      'budgets: < 10 ms · < 64 KB', s5.own < 10 && s5.wasmGzip < 64000)
  }
  return out.join('\n')
}

const elapsed = (performance.now() - started) / 1000
console.log('')
console.log(table)
console.log('')
const held = rows.filter((r) => r.ok === true).length
const failed = rows.filter((r) => r.ok === false)
const level = rows.filter((r) => r.ok === PARITY)
const levelText = level.length ? `, ${level.length} at parity within the bench's resolution (${level.map((r) => `§${r.section} ${r.measure}`).join('; ')})` : ''
console.log(`budgets: ${held} held, ${failed.length} failed${failed.length ? `: ${failed.map((r) => `§${r.section} ${r.measure}`).join('; ')}` : ''}${levelText}; ${elapsed.toFixed(0)} s`)

const CHART = 'benchmarks.svg'
if (QUICK || PARTIAL) {
  // A smoke run draws its chart where it cannot be mistaken for the full run's.
  const file = path.join(os.tmpdir(), `harness-guard-${CHART}`)
  writeChart(file, chart, { title: `make bench ${QUICK ? '--quick' : '(partial)'} (smoke run: not the recorded figures)` })
  console.log(`chart of this run: ${file}`)
} else {
  const cpus = os.cpus()
  const version = JSON.parse(readFileSync(path.join(path.dirname(fileURLToPath(import.meta.resolve(PACKAGE))), 'package.json'), 'utf8')).version
  writeChart(path.join(REPO, CHART), chart, { title: `make bench: ${PACKAGE}@${version}, Node ${process.version}, ${cpus.length} cores, ${new Date().toISOString().slice(0, 10)}` })
  // The figures' history is written by hand between its markers and carried
  // over from the previous BENCHMARKS.md; everything else is this run's.
  const previous = existsSync(path.join(REPO, 'BENCHMARKS.md')) ? readFileSync(path.join(REPO, 'BENCHMARKS.md'), 'utf8') : ''
  const history = /<!-- history:start -->[\s\S]*?<!-- history:end -->/.exec(previous)?.[0] ??
    "<!-- history:start -->\n## The figures' history\n\nNone recorded yet.\n<!-- history:end -->"
  // How many children an arm ran at each of section 3's sizes ("3 / 3 / 1 / 1").
  const childrenPerSize = (arm) => scaleSizes().map((n) => scaleRow(n, arm)?.reps ?? 0).join(' / ')
  const md = `# Benchmarks

Generated by \`make bench\` (\`node --expose-gc tests/js/bench/bench.mjs\`), except the figures'
history at the end, which is written by hand between its markers and kept by each run.
What each section measures, and how: \`tests/js/bench/README.md\` in the repository.

<!-- readme:start -->
- ${new Date().toISOString().slice(0, 10)}, Node ${process.version} (${process.platform}-${process.arch}), ${cpus.length} cores (${cpus[0]?.model?.trim() ?? 'unknown CPU'}), ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB: \`make bench\`
- The full table, the chart and how each row is measured: [BENCHMARKS.md](BENCHMARKS.md)

${summaryTable()}
<!-- readme:end -->

- Package: ${PACKAGE}@${version}, against the pinned host packages in tests/js
- Run time: ${elapsed.toFixed(0)} s

Reproduce: \`make bench\` (a smoke run: \`node --expose-gc tests/js/bench/bench.mjs --quick\`).

![Added cost of each guard per row, and p99 lateness against the number of waiting queries](${CHART})

${table}

The client and host queries (§1) and the claims (§2) are measured in child
processes, each running one arm beside an unguarded host, call by call or claim
by claim in alternating order; a child's figure is the median over its cycles of
the arm's time over the unguarded host's in the same cycle, so it does not move
with how busy the machine was. Each arm has ${s2?.[0]?.reps ?? s1?.client?.reps ?? '—'} children, started in rotating
order; the paired ratio of a row is the median over those rounds of
harness-guard's child ratio divided by the peer's (with the interquartile range):
below 1.00× harness-guard is the faster. The per-call or per-claim times and the
added time (in brackets) are medians over the children. The other §1 rows
(diagnostics) are medians over interleaved rounds in one process; their added
time is the median of the per-round differences from the unguarded arm, ± half
their interquartile range. The peers: the plain-JS guard (the same contract in
plain JavaScript, \`tests/js/bench/plain-js-guard.mjs\`), and the seeds' own guards
(seed 000's inspect guard in §1 and §3, seed 002's inbox guard in §2),
reconstructed from their published documents. Scale figures are medians of
${childrenPerSize('hg')} child processes for harness-guard and
${childrenPerSize('sd')} for the seed's guard and ${childrenPerSize('pj')} for the plain-JS guard (${scaleSizes().map(int).join(' / ')}), ${s3.filter((r) => r.arm === 'sc').map((r) => `${r.reps} for the floor arm (${int(r.n)}), `).join('')}1 unguarded; start-up of ${s5.runs}.

Budgets: ${held} held, ${failed.length} failed${failed.length ? ` (${failed.map((r) => `§${r.section} ${r.measure}`).join('; ')})` : ''}${levelText}. ≈: above the budget by
no more than the bench resolves: within 1 plus the distance from 1 of the further
quartile of §2's A/A arm (the plain-JS guard beside itself in the same rounds).

## Growth samples (§4)

JS heap used after collection, in KiB, at each sample (operations done: heap):

${[s4q, s4c].map((g) => `- ${g.workload}: ${g.samples.map((x) => `${int(x.ops / 1000)}k: ${int(x.heap / 1024)}`).join(', ')}`).join('\n')}

${history}
`
  writeFileSync(path.join(REPO, 'BENCHMARKS.md'), md)
  console.log(`wrote BENCHMARKS.md and ${CHART}`)
}
