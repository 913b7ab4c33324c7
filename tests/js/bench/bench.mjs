// `make bench`: overhead, scale, memory, start-up and size of harness-guard,
// against the built package (imported by name) and the real host classes.
//
//   node --expose-gc tests/js/bench/bench.mjs            full run, writes BENCHMARKS.md
//   node --expose-gc tests/js/bench/bench.mjs --quick    smoke run, prints only
//
// Sections (see README.md next to this file): 1 per-call overhead, 2 claim
// overhead, 3 scale, 4 growth, 5 start-up and size. Every comparison is made
// side by side in one process, arms interleaved round by round; every figure
// is a median over the rounds (or over repeated child processes).

import { spawn, spawnSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'

import { Context } from '@deepseek-ai/cordis'
import { CordisInspectRegistryService } from '@deepseek-ai/dsh-cordis-host-runner'
import { LlmAdapter, LlmRuntime, createUserMessage } from '@deepseek-ai/dsh-llm'
import { SessionStore } from '@deepseek-ai/dsh-session'
import { SystemPrompt } from '@deepseek-ai/dsh-system-prompt'
import { ToolRuntime } from '@deepseek-ai/dsh-tools'
import { AgentRegistry } from '@deepseek-ai/dsh-agent'
import { AgentLoop } from '@deepseek-ai/dsh-agent-loop'

import { installPlainInboxGuard, installPlainInspectGuard } from './plain-js-guard.mjs'

const HERE = path.dirname(fileURLToPath(import.meta.url))
const RIG = path.resolve(HERE, '..')
const REPO = path.resolve(RIG, '..', '..')
const PACKAGE = 'cordis-plugin-harness-guard'
const ORIGINAL = Symbol.for('cordis.original')

const argv = process.argv.slice(2)
const QUICK = argv.includes('--quick')
const CHILD = argv.includes('--child') ? argv[argv.indexOf('--child') + 1] : undefined

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
const progress = (text) => console.log(`  ${text}`)

const int = (n) => Math.round(n).toLocaleString('en-US')
const ns = (n) => `${int(n)} ns`
const signedNs = (n) => `${n >= 0 ? '+' : '−'}${int(Math.abs(n))} ns`
const ms = (n, digits = 1) => `${n.toFixed(digits)} ms`
const kib = (b) => `${(b / 1024).toLocaleString('en-US', { maximumFractionDigits: 1 })} KiB`
const mib = (b) => `${(b / 1048576).toFixed(1)} MiB`

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
 * private, so the one instance it creates is observed while it is imported;
 * nothing else about instantiation changes.
 */
async function loadPackage() {
  const Instance = WebAssembly.Instance
  WebAssembly.Instance = new Proxy(Instance, {
    construct(target, args, newTarget) {
      const instance = Reflect.construct(target, args, newTarget)
      wasmInstance ??= instance
      return instance
    },
  })
  try {
    const plugin = await import(PACKAGE)
    const { installInspectClientGuard } = await import(`${PACKAGE}/guard`)
    const glue = await import(new URL('./harness_guard.js', import.meta.resolve(PACKAGE)).href)
    return { plugin, installInspectClientGuard, glue }
  } finally {
    WebAssembly.Instance = Instance
  }
}
const wasmBytes = () => wasmInstance?.exports.memory?.buffer.byteLength ?? NaN

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
  if (arm === 'pj') return installPlainInspectGuard(host.raw, { deadlineMs, warn: host.warn })
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
  if (arm === 'hg') await ctx.plugin(pkg.plugin, { inbox: { mode: 'repair' } })
  if (arm === 'pj') installPlainInboxGuard(ctx, { mode: 'repair', previewChars: 80, createUserMessage, warn })
  // No guard: a plugin with one no-op `session/event` listener, what any durable-write observer pays.
  if (arm === 'nl') await ctx.plugin({ name: 'bench-listener', apply: (c) => { c.on('session/event', () => {}) } })
  let sessions = 0
  return {
    ctx,
    async agent() {
      sessions += 1
      return ctx.agents.create({ sessionId: `bench-${arm}-${sessions}`, agentOptions: { provider: 'bench', model: 'bench' } })
    },
  }
}

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

async function selfCheck(pkg) {
  const host = await inspectHost()
  const dispose = await armInspect('hg', host, pkg, 20)
  const error = await host.handle.query('client', 'Bench', 'read', {}, AGENT, new AbortController().signal).then(() => undefined, (e) => e)
  await dispose()
  const agents = await agentHost('hg', pkg)
  const handle = await agents.agent()
  handle.agent.inbox.splice('next-step', 0, 0, ['a bare string'])
  const [message] = handle.agent.inbox.claim('next-step', 1)
  await handle.dispose()
  const problems = [
    error?.code === 'INSPECT_CLIENT_DEADLINE' ? undefined : `an unanswered client query did not reject with INSPECT_CLIENT_DEADLINE (got ${error?.code ?? error})`,
    host.raw.pending.size === 0 ? undefined : 'a pending entry was left behind',
    message?.source?.plugin === 'inbox-input-guard' ? undefined : 'a bare string in the inbox was not repaired',
  ].filter(Boolean)
  if (problems.length) {
    throw new Error(`the installed ${PACKAGE} does not guard: ${problems.join('; ')}. Rebuild it (make ${path.relative(REPO, path.join(RIG, 'node_modules', PACKAGE, 'package.json'))}) and run again.`)
  }
}

// ---- section 1: per-call overhead ---------------------------------------------------

async function perCall(pkg) {
  const rounds = QUICK ? 3 : 7
  const host = await inspectHost({ page: true })
  const signal = () => new AbortController().signal
  const workloads = [
    {
      id: 'host', label: 'host query (platform "host")', calls: QUICK ? 4000 : 10000, rounds: QUICK ? 5 : 15,
      async run(calls) {
        const t0 = performance.now()
        for (let i = 0; i < calls; i += 1) await host.handle.query('host', 'HostBench', 'read', {}, AGENT, signal())
        return (performance.now() - t0) * 1e6 / calls
      },
    },
    {
      id: 'client', label: 'client query, answered at once by an in-process page', calls: QUICK ? 1000 : 5000,
      async run(calls) {
        const t0 = performance.now()
        for (let i = 0; i < calls; i += 1) await host.handle.query('client', 'Bench', 'read', {}, AGENT, signal())
        return (performance.now() - t0) * 1e6 / calls
      },
    },
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
      : arm === 'pj' ? installPlainInspectGuard(minimal, { deadlineMs: 15000 }) : () => {}),
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
  const results = {}
  for (const w of workloads) {
    for (const arm of ['un', 'hg', 'pj']) { // warm every path once before measuring
      const dispose = await install(w, arm)
      await w.run(Math.ceil(w.calls / 2))
      await dispose()
    }
    const per = { un: [], hg: [], pj: [] }
    for (let round = 0; round < (w.rounds ?? rounds); round += 1) {
      const arms = ['un', 'hg', 'pj']
      for (let k = 0; k < 3; k += 1) {
        const arm = arms[(round + k) % 3]
        const dispose = await install(w, arm)
        await w.run(Math.ceil(w.calls / 10))
        await gc()
        per[arm].push(await w.run(w.calls))
        await dispose()
      }
    }
    const over = (arm) => median(per[arm].map((v, r) => v - per.un[r]))
    // Half the interquartile range of the per-round differences: the noise around an overhead.
    const spread = (arm) => {
      const d = per[arm].map((v, r) => v - per.un[r]).sort((a, b) => a - b)
      return (percentile(d, 75) - percentile(d, 25)) / 2
    }
    results[w.id] = {
      label: w.label,
      un: median(per.un), hg: median(per.hg), pj: median(per.pj),
      hgOver: over('hg'), pjOver: over('pj'), hgSpread: spread('hg'), pjSpread: spread('pj'),
      ratio: median(per.hg.map((v, r) => (v - per.un[r]) / (per.pj[r] - per.un[r]))),
    }
    const r = results[w.id]
    progress(`${w.id}: unguarded ${ns(r.un)}, harness-guard ${ns(r.hg)} (${signedNs(r.hgOver)}), plain-JS ${ns(r.pj)} (${signedNs(r.pjOver)})`)
  }
  if (host.raw.pending.size !== 0) throw new Error(`section 1 left ${host.raw.pending.size} pending entries`)
  return results
}

// ---- section 2: claim overhead ----------------------------------------------------------

async function claims(pkg) {
  const rounds = QUICK ? 3 : 5
  const cycles = QUICK ? 100 : 300
  const hosts = {}
  for (const arm of ['un', 'hg', 'pj', 'nl']) hosts[arm] = await agentHost(arm, pkg)
  const results = []
  for (const size of [1, 10, 100]) {
    for (const bad of [false, true]) {
      const sets = batches(size, bad)
      const n = Math.max(20, Math.round(cycles * 10 / Math.sqrt(size)))
      const per = { un: [], hg: [], pj: [], nl: [] }
      // The no-op listener arm (a diagnostic) runs beside the clean batch of 1 only.
      const arms = size === 1 && !bad ? ['un', 'hg', 'pj', 'nl'] : ['un', 'hg', 'pj']
      let kept
      for (let round = 0; round < rounds; round += 1) {
        for (let k = 0; k < arms.length; k += 1) {
          const arm = arms[(round + k) % arms.length]
          const handle = await hosts[arm].agent()
          const inbox = handle.agent.inbox
          const run = (count) => {
            let spent = 0
            let out = 0
            for (let i = 0; i < count; i += 1) {
              inbox.splice('next-step', inbox.nextStep.length, 0, sets[i % sets.length])
              const t0 = performance.now()
              const batch = inbox.claim('next-step', 1)
              spent += performance.now() - t0
              out += batch.length
            }
            return { spent, out }
          }
          run(Math.min(n, 50))
          await gc()
          const { spent, out } = run(n)
          per[arm].push(spent * 1e6 / n)
          if (arm === 'hg') kept = out / n
          await handle.dispose()
        }
      }
      const overPerMessage = (arm) => median(per[arm].map((v, r) => (v - per.un[r]) / size))
      const r = {
        size, bad, kept,
        un: median(per.un), hg: median(per.hg), pj: median(per.pj),
        hgPerMessage: overPerMessage('hg'), pjPerMessage: overPerMessage('pj'),
        ...(per.nl.length ? { nl: median(per.nl), nlPerMessage: overPerMessage('nl') } : {}),
      }
      results.push(r)
      progress(`batch ${size}${bad ? ', 10% bad' : ', clean'}: per claim unguarded ${ns(r.un)}, harness-guard ${ns(r.hg)}, plain-JS ${ns(r.pj)}; added per message ${signedNs(r.hgPerMessage)} vs ${signedNs(r.pjPerMessage)}${r.nl === undefined ? '' : `; a no-op session/event listener alone ${signedNs(r.nlPerMessage)}`}`)
    }
  }
  return results
}

// ---- section 3: scale (child process per run) ------------------------------------------------

async function scaleChild({ arm, n, deadlineMs }) {
  const pkg = await loadPackage()
  const host = await inspectHost()
  const dispose = await armInspect(arm, host, pkg, deadlineMs)
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
  const inFlight = arm === 'hg' ? pkg.glue.inFlight() : undefined
  const pending = host.raw.pending.size
  await dispose()
  return {
    arm, n, deadlineMs, issuedMs, allMs,
    p50: percentile(late, 50), p99: percentile(late, 99), max: late[late.length - 1], min: late[0],
    baseRss, peakRss, maxRss: process.resourceUsage().maxRSS * 1024, baseWasm, peakWasm,
    pending, timeouts, flights: inFlight?.[0], timerArmed: inFlight?.[1], wrongCode, resolved,
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
    // The wasm-bindgen glue alone: read, compile and instantiate the .wasm.
    glue: `const t0 = performance.now(); await import(new URL('./harness_guard.js', import.meta.resolve('${PACKAGE}')).href); console.log(JSON.stringify({ glue: performance.now() - t0 }))`,
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

function child(kind, params) {
  const result = spawnSync(process.execPath, ['--expose-gc', fileURLToPath(import.meta.url), '--child', kind, JSON.stringify(params)], {
    cwd: RIG, encoding: 'utf8', maxBuffer: 64 << 20,
  })
  if (result.status !== 0) throw new Error(`child ${kind} ${JSON.stringify(params)} failed (${result.status}): ${result.stderr}`)
  return JSON.parse(result.stdout.trim().split('\n').at(-1))
}

/** Two growth children at once (memory, not time, is measured there), as promises. */
function childAsync(kind, params) {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, ['--expose-gc', fileURLToPath(import.meta.url), '--child', kind, JSON.stringify(params)], { cwd: RIG })
    let stdout = ''
    let stderr = ''
    proc.stdout.on('data', (d) => { stdout += d })
    proc.stderr.on('data', (d) => { stderr += d })
    proc.on('close', (code) => {
      if (code !== 0) reject(new Error(`child ${kind} failed (${code}): ${stderr}`))
      else resolve(JSON.parse(stdout.trim().split('\n').at(-1)))
    })
  })
}

if (CHILD) {
  const params = JSON.parse(argv[argv.indexOf('--child') + 2])
  const run = { scale: scaleChild, burst: burstChild, growth: growthChild }[CHILD]
  const result = await run(params)
  console.log(JSON.stringify(result))
  process.exit(0)
}

// ---- main ---------------------------------------------------------------------------------

const started = performance.now()
const pkg = await loadPackage()
console.log(`harness-guard benchmark${QUICK ? ' (--quick: smoke run, BENCHMARKS.md not written)' : ''}: Node ${process.version}, ${os.cpus().length} cores`)

await selfCheck(pkg)

const at = () => `[${((performance.now() - started) / 1000).toFixed(0)} s]`
console.log(`== 1. per-call overhead ${at()}`)
const s1 = await perCall(pkg)

console.log(`== 2. claim overhead ${at()}`)
const s2 = await claims(pkg)

console.log(`== 3. scale: concurrent unanswered client queries ${at()}`)
// Every query is issued before the first deadline, so that lateness measures the
// expiry of N waiting queries, not the benchmark's own issuing loop.
const DEADLINES = { 10000: 1500, 100000: 12000 }
const s3 = []
for (const n of QUICK ? [10000] : [10000, 100000]) {
  for (const arm of ['un', 'hg', 'pj']) {
    const reps = QUICK || arm === 'un' || (n >= 100000 && arm === 'pj') ? 1 : 3
    const runs = []
    for (let r = 0; r < reps; r += 1) runs.push(child('scale', { arm, n, deadlineMs: DEADLINES[n] }))
    if (arm !== 'un' && runs.some((x) => x.issuedMs >= DEADLINES[n])) {
      console.warn(`  warning: issuing ${n} queries took longer than the ${DEADLINES[n]} ms deadline; lateness includes the issuing loop`)
    }
    const pick = (k) => median(runs.map((x) => x[k]))
    const worst = (k) => Math.max(...runs.map((x) => x[k]))
    const r = {
      arm, n, reps, deadlineMs: DEADLINES[n],
      issuedMs: pick('issuedMs'), allMs: pick('allMs'), p50: pick('p50'), p99: pick('p99'), max: pick('max'),
      baseRss: pick('baseRss'), peakRss: pick('peakRss'), maxRss: pick('maxRss'), baseWasm: pick('baseWasm'), peakWasm: pick('peakWasm'),
      pending: worst('pending'), timeouts: worst('timeouts'), flights: arm === 'hg' ? worst('flights') : undefined,
      wrongCode: worst('wrongCode') + worst('resolved'),
    }
    s3.push(r)
    if (arm === 'un') {
      progress(`${int(n)} unguarded: issued in ${ms(r.issuedMs, 0)}, peak RSS ${mib(r.maxRss)} (+${mib(r.peakRss - r.baseRss)}); nothing ends them (the bench cancels them)`)
      continue
    }
    progress(`${int(n)} ${arm === 'hg' ? 'harness-guard' : 'plain-JS'}: all rejected after ${ms(r.allMs, 0)} (issued in ${ms(r.issuedMs, 0)}), lateness p50 ${ms(r.p50)} p99 ${ms(r.p99)} max ${ms(r.max)}, peak RSS ${mib(r.maxRss)}, pending ${r.pending}, Timeouts ${r.timeouts}`)
  }
}

const BURST = QUICK ? 5000 : 20000
const s3b = {}
for (const arm of ['un', 'hg', 'pj']) {
  const runs = Array.from({ length: QUICK ? 1 : 3 }, () => child('burst', { arm, n: BURST }))
  if (runs.some((x) => x.ended !== BURST || x.pending !== 0)) throw new Error(`burst ${arm}: not every query ended`)
  s3b[arm] = median(runs.map((x) => x.perQuery))
}
progress(`ending ${int(BURST)} queries that fall due at once, per query: unguarded (the callers abort) ${ns(s3b.un)}, harness-guard ${ns(s3b.hg)}, plain-JS ${ns(s3b.pj)}`)

console.log(`== 4. growth (two child processes side by side) ${at()}`)
const claimsGrowth = { workload: 'claims', ops: QUICK ? 20000 : 100000, every: QUICK ? 2000 : 5000 }
const [s4q, [s4c, s4cu]] = await Promise.all([
  childAsync('growth', { workload: 'queries', ops: QUICK ? 100000 : 1000000, every: QUICK ? 10000 : 50000 }),
  // The same claims unguarded, after the guarded run: the host's own drift, for comparison.
  childAsync('growth', claimsGrowth).then(async (g) => [g, await childAsync('growth', { ...claimsGrowth, arm: 'un' })]),
])
for (const g of [s4q, s4c]) {
  progress(`${int(g.ops)} ${g.workload}: JS heap ${mib(g.heapFirst)} → ${mib(g.heapLast)}, second-half slope ${int(g.heapSlope)} ± ${int(g.heapSe)} B per 1,000; wasm ${kib(g.wasmFirst)} → ${kib(g.wasmLast)}`)
}

console.log(`== 5. start-up and size ${at()}`)
const s5 = startup()
progress(`import: package alone ${ms(s5.own, 2)} (host packages first: ${ms(s5.peers, 1)}), cold ${ms(s5.cold, 1)}, glue alone ${ms(s5.glue, 2)}; wasm ${int(s5.wasmRaw)} B, ${int(s5.wasmGzip)} B gzipped; tarball ${s5.tarball ? `${int(s5.tarball.bytes)} B` : 'not built'}`)

await selfCheck(pkg) // again: the install must not have changed under the run

// ---- the table ----------------------------------------------------------------------------

const rows = []
const row = (section, measure, un, hg, pj, budget, ok) => rows.push({ section, measure, un, hg, pj, budget, ok })
const mark = (ok) => (ok === undefined ? '' : ok ? '✓' : '✗')

{
  const h = s1.host
  const mh = s1.minimalHost
  row('1', 'host query, per call', ns(h.un), `${ns(h.hg)} (${signedNs(h.hgOver)} ± ${int(h.hgSpread)})`, `${ns(h.pj)} (${signedNs(h.pjOver)} ± ${int(h.pjSpread)})`,
    'judged on the next row: here the host\'s own noise is larger than the budget')
  row('1', 'host query on a minimal registry of the same shape (no cordis): the pass-through alone', ns(mh.un),
    `${ns(mh.hg)} (${signedNs(mh.hgOver)} ± ${int(mh.hgSpread)})`, `${ns(mh.pj)} (${signedNs(mh.pjOver)} ± ${int(mh.pjSpread)})`,
    `< 300 ns added: ${signedNs(mh.hgOver)}`, mh.hgOver < 300)
  const c = s1.client
  row('1', 'client query answered at once, per call', ns(c.un), `${ns(c.hg)} (${signedNs(c.hgOver)} ± ${int(c.hgSpread)})`, `${ns(c.pj)} (${signedNs(c.pjOver)} ± ${int(c.pjSpread)})`,
    `overhead ≤ 1.5× plain-JS's (aim ≤ 1.0×): ${c.ratio.toFixed(2)}×`, c.ratio <= 1.5)
  const v = s1.resolve
  row('1', 'resolveClientQuery (a pending query, accepted), per call', ns(v.un), `${ns(v.hg)} (${signedNs(v.hgOver)} ± ${int(v.hgSpread)})`,
    `${ns(v.pj)} (${signedNs(v.pjOver)} ± ${int(v.pjSpread)})`, '—')
  const m = s1.minimal
  row('1', 'client query on the minimal registry (diagnostic: the guards\' own cost)', ns(m.un), `${ns(m.hg)} (${signedNs(m.hgOver)} ± ${int(m.hgSpread)})`,
    `${ns(m.pj)} (${signedNs(m.pjOver)} ± ${int(m.pjSpread)})`, `— (ratio of overheads ${m.ratio.toFixed(2)}×)`)
}
for (const r of s2) {
  row('2', `claim, batch of ${r.size}, ${r.bad ? '10% bad' : 'clean'}: per claim (added per message)`, ns(r.un),
    `${ns(r.hg)} (${signedNs(r.hgPerMessage)})`, `${ns(r.pj)} (${signedNs(r.pjPerMessage)})`,
    `< 1 µs per message: ${signedNs(r.hgPerMessage)}`, r.hgPerMessage < 1000)
  if (r.nl !== undefined) {
    row('2', 'claim, batch of 1, clean, with no guard but one no-op session/event listener mounted by a plugin (diagnostic: the host\'s dispatch to any observer)', ns(r.un),
      `${ns(r.nl)} (${signedNs(r.nlPerMessage)})`, '—', '—')
  }
}
for (const n of [...new Set(s3.map((r) => r.n))]) {
  const u = s3.find((r) => r.n === n && r.arm === 'un')
  const h = s3.find((r) => r.n === n && r.arm === 'hg')
  const p = s3.find((r) => r.n === n && r.arm === 'pj')
  const big = n >= 100000
  row('3', `${int(n)} unanswered (deadline ${int(h.deadlineMs)} ms): all rejected after (issuing took)`, `never (${ms(u.issuedMs, 0)})`,
    `${ms(h.allMs, 0)} (${ms(h.issuedMs, 0)})`, `${ms(p.allMs, 0)} (${ms(p.issuedMs, 0)})`, '—')
  row('3', `${int(n)}: lateness past deadline p50 / p99 / max`, '—',
    `${ms(h.p50)} / ${ms(h.p99)} / ${ms(h.max)}`, `${ms(p.p50)} / ${ms(p.p99)} / ${ms(p.max)}`,
    big ? `p99 < 50 ms: ${ms(h.p99)}` : '—', big ? h.p99 < 50 : undefined)
  row('3', `${int(n)}: peak RSS (added) · wasm memory`, `${mib(u.maxRss)} (+${mib(u.peakRss - u.baseRss)})`,
    `${mib(h.maxRss)} (+${mib(h.peakRss - h.baseRss)}) · ${kib(h.peakWasm)}`, `${mib(p.maxRss)} (+${mib(p.peakRss - p.baseRss)})`, '—')
  row('3', `${int(n)}: pending entries / Timeouts left afterwards`, '—',
    `${h.pending} / ${h.timeouts}${h.wrongCode ? ` (${h.wrongCode} not INSPECT_CLIENT_DEADLINE)` : ''}`, `${p.pending} / ${p.timeouts}`,
    big ? 'pending empty, no Timeout' : '—', big ? h.pending === 0 && h.timeouts === 0 && h.wrongCode === 0 : undefined)
}
row('3', `ending ${int(BURST)} queries that fall due at once, per query (unguarded: the callers abort them)`,
  ns(s3b.un), `${ns(s3b.hg)} (${signedNs(s3b.hg - s3b.un)})`, `${ns(s3b.pj)} (${signedNs(s3b.pj - s3b.un)})`, '—')
// "No growth": less than one byte per operation over the second half (a leak of
// a single object per operation would be 16 B or more). A negative slope is no growth.
const flat = (b) => b < 1000
for (const g of [s4q, s4c]) {
  const what = g.workload === 'queries' ? 'answered client queries' : 'claims (batches of 10, 1 bad), agents recycled'
  const claims = g.workload === 'claims'
  const control = claims ? `${int(s4cu.heapSlope)} ± ${int(s4cu.heapSe)} B / 1,000 (${mib(s4cu.heapFirst)} → ${mib(s4cu.heapLast)})` : '—'
  // The claims workload grows the host's own heap too (the unguarded run beside it):
  // the guard's growth is the difference.
  const own = claims ? g.heapSlope - s4cu.heapSlope : g.heapSlope
  const ownSe = claims ? Math.hypot(g.heapSe, s4cu.heapSe) : g.heapSe
  row('4', `${int(g.ops)} ${what}: JS heap, second-half slope`, control,
    `${int(g.heapSlope)} ± ${int(g.heapSe)} B / 1,000 (${mib(g.heapFirst)} → ${mib(g.heapLast)})`, '—',
    QUICK ? 'not judged (--quick: too short)'
      : claims ? `no growth beyond the unguarded run's (< 1,000 B / 1,000): ${int(own)} ± ${int(ownSe)}`
        : 'no growth (< 1 B per op, i.e. < 1,000 B / 1,000)',
    QUICK ? undefined : flat(own))
  row('4', `${int(g.ops)} ${g.workload}: wasm memory, second-half slope`, '—',
    `${int(g.wasmSlope)} B / 1,000 (${kib(g.wasmFirst)} → ${kib(g.wasmLast)})`, '—', QUICK ? 'not judged (--quick)' : 'no growth (0)', QUICK ? undefined : g.wasmSlope === 0)
}
row('5', 'import + instantiate: package alone (host packages loaded) · cold with its peers · glue alone', '—',
  `${ms(s5.own, 2)} · ${ms(s5.cold, 1)} · ${ms(s5.glue, 2)}`, '—', `< 10 ms: ${ms(s5.own, 2)}`, s5.own < 10)
row('5', '.wasm raw · gzipped (-9)', '—', `${int(s5.wasmRaw)} B · ${int(s5.wasmGzip)} B`, '—',
  `< 64 KB gzipped: ${(s5.wasmGzip / 1000).toFixed(1)} KB`, s5.wasmGzip < 64000)
row('5', 'tarball (npm pack)', '—', s5.tarball ? `${int(s5.tarball.bytes)} B` : 'not built (make pack)', '—', '—')

const header = '| § | Measure | Unguarded | harness-guard | Plain-JS guard | Budget (harness-guard) | |'
const table = [header, '|---|---|---|---|---|---|---|',
  ...rows.map((r) => `| ${r.section} | ${r.measure} | ${r.un} | ${r.hg} | ${r.pj} | ${r.budget} | ${mark(r.ok)} |`)].join('\n')

const elapsed = (performance.now() - started) / 1000
console.log('')
console.log(table)
console.log('')
const held = rows.filter((r) => r.ok === true).length
const failed = rows.filter((r) => r.ok === false)
console.log(`budgets: ${held} held, ${failed.length} failed${failed.length ? `: ${failed.map((r) => `§${r.section} ${r.measure}`).join('; ')}` : ''}; ${elapsed.toFixed(0)} s`)

if (!QUICK) {
  const cpus = os.cpus()
  const md = `# Benchmarks

Generated by \`make bench\` (\`node --expose-gc tests/js/bench/bench.mjs\`); do not edit by hand.
What each section measures, and how: [tests/js/bench/README.md](tests/js/bench/README.md).

- Date: ${new Date().toISOString().slice(0, 10)}
- Node: ${process.version} (${process.platform}-${process.arch})
- Machine: ${cpus.length} cores (${cpus[0]?.model?.trim() ?? 'unknown CPU'}), ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB
- Package: ${PACKAGE}@${JSON.parse(readFileSync(path.join(path.dirname(fileURLToPath(import.meta.resolve(PACKAGE))), 'package.json'), 'utf8')).version}, against the pinned host packages in tests/js
- Run time: ${elapsed.toFixed(0)} s

Reproduce: \`make bench\` (a smoke run: \`node --expose-gc tests/js/bench/bench.mjs --quick\`).

Per-call and claim figures are medians over interleaved rounds in one process; an
overhead (in brackets) is the median of the per-round differences from the unguarded
arm, ± half their interquartile range. Scale figures are medians of
${s3.filter((r) => r.arm === 'hg').map((r) => r.reps).join(' / ')} child processes for harness-guard, ${s3.filter((r) => r.arm === 'pj').map((r) => r.reps).join(' / ')} for the
plain-JS guard and ${s3.filter((r) => r.arm === 'un').map((r) => r.reps).join(' / ')} unguarded (10,000 / 100,000); start-up of ${s5.runs}.

${table}

Budgets: ${held} held, ${failed.length} failed${failed.length ? ` (${failed.map((r) => `§${r.section} ${r.measure}`).join('; ')})` : ''}.

## Growth samples (§4)

JS heap used after collection, in KiB, at each sample (operations done: heap):

${[s4q, s4c].map((g) => `- ${g.workload}: ${g.samples.map((x) => `${int(x.ops / 1000)}k: ${int(x.heap / 1024)}`).join(', ')}`).join('\n')}
`
  writeFileSync(path.join(REPO, 'BENCHMARKS.md'), md)
  console.log('wrote BENCHMARKS.md')
}
