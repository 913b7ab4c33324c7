// Complete disposal of harness-guard, mounted from the packed tarball through
// the real loader on a real host (agent stack + Cordis host runner).
//
// After the row is disabled or the context stops: no effect left on the
// plugin's fiber, no Timeout in process.getActiveResourcesInfo(), no own
// patched method on the registry or on any inbox, no listener, no service.
// Then 1,000 mount/dispose cycles with guarded traffic in between (a client
// query that is answered, one that hits a tiny deadline, a claim repairing a
// bare string) must leave the JS heap and the wasm memory flat.
//
// The loop runs in a child process started with --expose-gc (node:test has no
// per-file flags): this same file, with HG_DISPOSAL_LOOP set in its
// environment, runs the loop and prints its figures instead of defining tests.
// A control child runs the same traffic with the row disabled throughout, so
// the host's own growth is known.
//
// Needs the tarball in <repo>/dist (`make pack`) and Node >= 22 (the agent loop).

import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, readdirSync, rmSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { catchingUncaught, CODES, loadGuard, registryFor, settleWithin, track } from './support/inspect-rig.mjs'
import {
  activeTimeouts,
  BARE,
  fakeModelClass,
  FiberState,
  HOST_DIR,
  HOST_ROWS,
  ID,
  importFrom,
  installedManifest,
  isClean,
  listenersOf,
  makeConsumerProject,
  NAME,
  ORIGINAL,
  PATCHED,
  servicesOf,
  startLoader,
} from './support/loader-rig.mjs'

const MANIFEST = [{
  id: 'Theme',
  description: 'Design tokens of the page theme',
  methods: [{ name: 'listTokens', description: 'List the theme tokens', inputSchema: { type: 'object' }, outputSchema: { type: 'object' } }],
}]

/** What 1,000 sessions' log windows may take in wasm memory (about 256 B each, rounded up to whole pages). */
const WINDOWS_ALLOWANCE = 6 * 64 * 1024
const guardRow = ({ disabled = false, config } = {}) => ({ id: ID, name: NAME, ...(config ? { config } : {}), ...(disabled ? { disabled: true } : {}) })

const tick = () => new Promise(r => setImmediate(r))
const rawOf = (svc) => svc?.[ORIGINAL] ?? svc
const ownMethods = (object) => Object.getOwnPropertyNames(object).filter(k => typeof object[k] === 'function').sort()
/** Own properties anywhere on `object` that carry the guard's marker. */
const markedProps = (object) => Reflect.ownKeys(object).filter((k) => { try { return !!object[k]?.[PATCHED] } catch { return false } }).map(String)
/** Listener count per event on the root event bus. */
const hookCounts = (ctx) => Object.fromEntries(Reflect.ownKeys(ctx.root.events._hooks).map(k => [String(k), ctx.root.events._hooks[k].length]).filter(([, n]) => n > 0))

// ---------------------------------------------------------------------------
// A host through the loader (shared by the tests and the loop child)

async function startHost(project, { guard }) {
  const { LlmAdapter } = await importFrom('@deepseek-ai/dsh-llm', project)
  const rig = await startLoader({ cwd: project, rows: [guardRow({ disabled: !guard.enabled, config: guard.config }), ...HOST_ROWS] })
  const Model = fakeModelClass(LlmAdapter)
  rig.ctx.llm.registerAdapter(['fake'], new Model())
  let sessions = 0
  const host = {
    rig,
    /** Enable (with `config`) or disable the guard row, the way a config reload does. */
    setGuard: ({ enabled, config }) => rig.update([guardRow({ disabled: !enabled, config }), ...HOST_ROWS]),
    registry() {
      const svc = rig.ctx.get('cordisInspect')
      svc.syncClientManifest(MANIFEST)
      return svc
    },
    async agent() {
      return rig.ctx.agents.create({ sessionId: `disposal-${process.pid}-${++sessions}`, agentOptions: { provider: 'fake', model: 'fake-model' } })
    },
    async send(agent, value) {
      const mark = agent.session.events.length
      agent.followup(value)
      await agent.whenIdle()
      await tick()
      return agent.session.events.slice(mark).findLast(e => e.type === 'turn/end')?.data.reason
    },
    /** A client query: `{ requestId, outcome, controller }`; outcome never rejects. */
    ask(agent = { id: 'agent-under-test' }) {
      let requestId
      const off = rig.ctx.on('cordis/inspect-query', (r) => { requestId ??= r.requestId })
      const controller = new AbortController()
      const promise = host.registry().query('client', 'Theme', 'listTokens', {}, agent, controller.signal)
      off()
      const outcome = promise.then(value => ({ status: 'fulfilled', value }), error => ({ status: 'rejected', error }))
      return { requestId, outcome, controller, agent }
    },
  }
  return host
}

/** The glue of the package installed in this rig (the one `loadGuard` imports). */
async function rigGlue() {
  const dir = dirname(fileURLToPath(import.meta.resolve('cordis-plugin-harness-guard/package.json')))
  return import(pathToFileURL(join(dir, 'harness_guard.js')).href)
}

/** The guard's wasm glue as the loader loaded it (same URL, same module instance). */
async function glueOf(project) {
  const { dir } = installedManifest(NAME, project)
  return import(pathToFileURL(join(dir, 'harness_guard.js')).href)
}

// ---------------------------------------------------------------------------

if (process.env.HG_DISPOSAL_LOOP) {
  await runLoop(JSON.parse(process.env.HG_DISPOSAL_LOOP))
} else {
  defineTests()
}

function defineTests() {
  let project
  before(() => {
    const dist = resolve(HOST_DIR, '..', '..', 'dist')
    const tarball = (existsSync(dist) ? readdirSync(dist) : []).find(f => f.startsWith(`${NAME}-`) && f.endsWith('.tgz'))
    assert.ok(tarball, 'the packed tarball is in dist/ (run `make pack`)')
    project = makeConsumerProject({ tarball: join(dist, tarball) })
  })
  after(() => { if (project) rmSync(project, { recursive: true, force: true }) })

  /**
   * Mount the host with the row disabled, create agent A, enable the row,
   * create agent B, give both a guarded turn, and start a client query.
   * Returns the probes' view while everything is live.
   */
  async function liveGuard() {
    const host = await startHost(project, { guard: { enabled: false } })
    const a = await host.agent()
    await host.send(a.agent, 'hello')
    const registry = rawOf(host.registry())
    const baseline = { hooks: hookCounts(host.rig.ctx), timeouts: activeTimeouts() }
    await host.setGuard({ enabled: true })
    const fiber = host.rig.fiber(ID)
    const b = await host.agent()
    assert.deepEqual(await host.send(a.agent, BARE), { kind: 'completed' })
    assert.deepEqual(await host.send(b.agent, BARE), { kind: 'completed' })
    const query = host.ask()
    return { host, a, b, registry, baseline, fiber, query }
  }

  /** Everything the contract says must be gone. */
  async function assertNothingLeft({ host, a, b, registry, fiber, query }, timeoutsAfter, label) {
    let timer
    const out = await Promise.race([query.outcome, new Promise((r) => { timer = setTimeout(r, 100, 'hung') })])
    clearTimeout(timer)
    assert.equal(out.error?.code, 'INSPECT_CLIENT_GUARD_DISPOSED', `${label}: the query in flight was rejected at once`)
    assert.equal(registry.pending.size, 0, `${label}: no pending entry`)
    assert.ok(isClean(host.rig.ctx, fiber), `${label}: no effect, disposer, sub-fiber, listener or service left on the fiber`)
    assert.equal(fiber.state, FiberState.DISPOSED)
    assert.deepEqual(fiber.getEffects(), [])
    assert.equal([...fiber._disposables].length, 0)
    assert.deepEqual(listenersOf(host.rig.ctx, fiber), [], `${label}: no listener`)
    assert.equal(host.rig.ctx.get('inspectClientGuard'), undefined, `${label}: no service`)
    assert.equal(host.rig.ctx.get('inboxInputGuard'), undefined)
    assert.equal(activeTimeouts(), timeoutsAfter, `${label}: no Timeout left (${process.getActiveResourcesInfo().join(', ')})`)
    assert.deepEqual(ownMethods(registry), [], `${label}: no own method on the registry`)
    assert.deepEqual(markedProps(registry), [])
    for (const [who, handle] of [['A (existed before the mount)', a], ['B (created while mounted)', b]]) {
      assert.equal(Object.hasOwn(handle.agent.inbox, 'claim'), false, `${label}: agent ${who}: claim restored`)
      assert.deepEqual(markedProps(handle.agent.inbox), [])
    }
    const { inFlight } = await glueOf(project)
    assert.deepEqual(inFlight(), [0, false, false], `${label}: no flight and no deadline timer, not even an idle one, left in the wasm runtime`)
  }

  describe('complete disposal', () => {
    test('control: while mounted, every probe sees the guard', async (t) => {
      const live = await liveGuard()
      t.after(async () => { await live.host.setGuard({ enabled: false }); await live.host.rig.stop() })
      const { host, a, b, registry, baseline, fiber } = live
      assert.equal(fiber.state, FiberState.ACTIVE)
      assert.ok(fiber.getEffects().length > 0, 'effects on the fiber')
      assert.ok(listenersOf(host.rig.ctx, fiber).length > 0, 'listeners')
      assert.deepEqual(servicesOf(host.rig.ctx, fiber).sort(), ['inboxInputGuard', 'inspectClientGuard'])
      assert.equal(activeTimeouts(), baseline.timeouts + 1, 'a deadline Timeout while the query waits')
      assert.deepEqual(ownMethods(registry), ['query', 'resolveClientQuery'])
      assert.deepEqual(markedProps(a.agent.inbox), ['claim'], 'A: claim wrapped (at its first pre-step)')
      assert.deepEqual(markedProps(b.agent.inbox), ['claim'], 'B: claim wrapped (at agent/created)')
      assert.notDeepEqual(hookCounts(host.rig.ctx), baseline.hooks, 'the root event bus has more listeners')
      const { inFlight } = await glueOf(project)
      assert.deepEqual(inFlight(), [1, true, true], 'the wasm runtime tracks the query; its deadline timer is set and held')
    })

    test('control: a query that ended while mounted leaves the idle deadline timer set but not held; disposal clears it', async (t) => {
      const live = await liveGuard()
      t.after(() => live.host.rig.stop())
      live.query.controller.abort()
      const out = await live.query.outcome
      assert.equal(out.status, 'rejected', 'cancelled through its own signal')
      const { inFlight } = await glueOf(project)
      assert.deepEqual(inFlight(), [0, false, true], 'between queries the timer stays set, unref\'d, for the next query to refresh')
      assert.equal(activeTimeouts(), live.baseline.timeouts, 'an unref\'d timer keeps nothing alive')
      await live.host.setGuard({ enabled: false })
      assert.deepEqual(inFlight(), [0, false, false], 'the disposal cleared it')
    })

    test('after the row is disabled: nothing is left, and the host is exactly as before the mount', async (t) => {
      const live = await liveGuard()
      t.after(() => live.host.rig.stop())
      const { logs } = await live.host.setGuard({ enabled: false })
      assert.deepEqual(logs.filter(l => l.type === 'error'), [])
      await assertNothingLeft(live, live.baseline.timeouts, 'disabled')
      await live.b.dispose()
      const bHooks = hookCounts(live.host.rig.ctx)
      assert.deepEqual(bHooks, live.baseline.hooks, 'the root event bus has exactly the listeners it had before the mount')
      // The host works as it did without the guard: the bare string kills the turn again.
      const reason = await live.host.send(live.a.agent, BARE)
      assert.equal(reason?.kind, 'error')
    })

    test('after the context stops: nothing is left, and no Timeout at all', async () => {
      const live = await liveGuard()
      await live.host.rig.stop()
      await assertNothingLeft(live, 0, 'stopped')
      assert.deepEqual(process.getActiveResourcesInfo().filter(r => r === 'Timeout'), [])
    })
  })

  // `onReport` is the user's code, called by the guard as queries end. Whatever it
  // does (dispose the guard it reports for, throw), every query of the burst is
  // ended and delivered: its caller settles and the registry keeps nothing.
  describe('an onReport that disposes the guard, or throws', () => {
    const BURST = 5
    const DEADLINE_MS = 200
    /** Long enough for a deadline of 200 ms on a busy machine; a query still waiting then hangs. */
    const HANG_MS = DEADLINE_MS + 5000
    const arms = {
      'a plain onReport (control)': () => () => {},
      'an onReport that calls dispose()': (state) => () => state.dispose(),
      'an onReport that throws': () => () => { throw new Error('onReport failed') },
    }
    for (const [label, make] of Object.entries(arms)) {
      test(`${BURST} queries at deadlineMs ${DEADLINE_MS} through installInspectClientGuard, ${label}: every caller settles, nothing stays pending`, async (t) => {
        const rig = await registryFor(t)
        const reports = []
        const state = {}
        const onReport = make(state)
        const { api } = await loadGuard()
        state.dispose = api.installInspectClientGuard(rig.svc, {
          deadlineMs: DEADLINE_MS,
          onReport: (report) => { reports.push(report); onReport(report) },
        })
        t.after(() => state.dispose())
        let queries
        const uncaught = await catchingUncaught(async () => {
          queries = Array.from({ length: BURST }, () => rig.query())
          const tracked = queries.map((q) => track(q.promise))
          const ends = await Promise.all(tracked.map((q) => settleWithin(q, HANG_MS)))
          assert.deepEqual(ends, Array(BURST).fill('settled'), 'every caller settled')
          for (const [i, q] of tracked.entries()) {
            assert.equal(q.status, 'rejected', `query ${i + 1}`)
            assert.ok([CODES.deadline, CODES.disposed].includes(q.reason?.code), `query ${i + 1}: ${q.reason?.code}`)
          }
        })
        assert.deepEqual(uncaught, [], 'nothing thrown out of the timer')
        assert.equal(rig.raw.pending.size, 0, 'nothing pending in the registry')
        for (const q of queries) assert.equal(rig.resolvedCount(q.requestId), 1, `${q.requestId}: resolved once`)
        assert.equal(reports.length, BURST, 'one report per rejected query, each handed to onReport')
        const [flights, held] = (await rigGlue()).inFlight()
        assert.deepEqual([flights, held], [0, false], 'no flight left in the wasm runtime, and no deadline timer holding the process')
      })
    }
  })

  describe('1,000 mount/dispose cycles with guarded traffic', () => {
    const CYCLES = Number(process.env.HG_DISPOSAL_CYCLES ?? 1000)
    const WARMUP = 50
    const mb = (n) => `${n < 0 ? '-' : '+'}${(Math.abs(n) / 2 ** 20).toFixed(2)} MiB`
    const MB = (n) => `${(n / 2 ** 20).toFixed(2)} MiB`
    const kb = (n) => `${(n / 1024).toFixed(0)} KiB`
    let runs
    const loops = () => {
      // The guarded loop and a control loop (row disabled throughout, same
      // traffic) side by side: memory is per process, so they do not disturb each other.
      runs ??= Promise.all([
        runChild({ project, cycles: CYCLES, warmup: WARMUP, guard: true }),
        runChild({ project, cycles: CYCLES, warmup: WARMUP, guard: false }),
      ])
      return runs
    }

    test(`${CYCLES} cycles: every cycle is guarded, the JS heap stays flat, nothing is left at the end (child process, --expose-gc)`, async (t) => {
      const [guarded, control] = await loops()
      const lines = [
        `${guarded.cycles} cycles after ${guarded.warmup} warm-up: ${guarded.msPerCycle.toFixed(2)} ms/cycle guarded, ${control.msPerCycle.toFixed(2)} ms/cycle control`,
        `JS heap after GC, guarded: ${MB(guarded.heap.start)} -> ${MB(guarded.heap.end)} (${mb(guarded.heap.growth)}); every ${CYCLES / 4}: ${guarded.heap.samples.map(MB).join(', ')}`,
        `JS heap after GC, control (no guard, same traffic): ${MB(control.heap.start)} -> ${MB(control.heap.end)} (${mb(control.heap.growth)})`,
        `wasm memory: ${kb(guarded.wasm.initial)} at load, ${kb(guarded.wasm.start)} after warm-up, ${kb(guarded.wasm.end)} after the loop; every ${CYCLES / 4}: ${guarded.wasm.samples.map(kb).join(', ')}`,
        `wasm externref table: ${guarded.externrefs.start.live} live of ${guarded.externrefs.start.size} slots after warm-up, ${guarded.externrefs.end.live} live of ${guarded.externrefs.end.size} after the loop`,
        `guarded traffic: ${guarded.traffic.answered} answered, ${guarded.traffic.deadline} deadlines, ${guarded.traffic.repaired} repaired claims in ${guarded.cycles + guarded.warmup} cycles`,
      ]
      for (const line of lines) t.diagnostic(line)
      console.log(`[disposal] ${lines.join('\n[disposal] ')}`)

      const total = guarded.cycles + guarded.warmup
      assert.equal(guarded.instanceCaught, true, 'the guard\'s WebAssembly instance was caught as it was made: the wasm figures are its own')
      assert.deepEqual(guarded.traffic, { answered: total, deadline: total, repaired: total }, 'every cycle carried guarded traffic')
      assert.deepEqual(control.traffic, { answered: total, deadline: 0, repaired: 0 }, 'control: without the guard no deadline fires and the bare string kills every turn')
      assert.ok(guarded.heap.growth < 5 * 2 ** 20, `JS heap growth ${mb(guarded.heap.growth)} < 5 MiB`)
      assert.ok(guarded.externrefs.end.live <= guarded.externrefs.start.live + 8, `live externrefs flat (${guarded.externrefs.start.live} -> ${guarded.externrefs.end.live})`)
      assert.deepEqual(guarded.end, { fiberClean: true, timeouts: 0, registryOwnMethods: [], inFlight: [0, false, false] }, 'the loop ends with nothing left')
    })

    // Every cycle's turn logs a warn line for a session of its own, and the per-session
    // bound on warn lines keeps a window for each session that logged within the last
    // minute (at most 4,096 of them): that, and nothing per mount, is what may grow.
    test(`${CYCLES} cycles: the wasm memory grows only by the log bound's windows of the last minute`, async () => {
      const [guarded] = await loops()
      assert.equal(guarded.instanceCaught, true, 'the guard\'s WebAssembly instance was caught: its memory is what is measured')
      assert.ok(guarded.wasm.start > 0)
      const growth = guarded.wasm.end - guarded.wasm.start
      assert.ok(growth <= WINDOWS_ALLOWANCE,
        `wasm memory grew from ${kb(guarded.wasm.start)} to ${kb(guarded.wasm.end)} over ${guarded.cycles} mount/dispose cycles `
        + `(every ${CYCLES / 4}: ${guarded.wasm.samples.map(kb).join(', ')}), more than the ${kb(WINDOWS_ALLOWANCE)} `
        + 'the log windows of 1,000 sessions may take')
    })

    test('control: with a full GC after every cycle the wasm memory stays within the same allowance (what the plugin leaves is reclaimable, not lost)', async (t) => {
      const cycles = Math.min(CYCLES, 200)
      const run = await runChild({ project, cycles, warmup: WARMUP, guard: true, gcEachCycle: true })
      t.diagnostic(`GC after every cycle, ${cycles} cycles: wasm ${kb(run.wasm.start)} -> ${kb(run.wasm.end)}, JS heap ${mb(run.heap.growth)}`)
      assert.equal(run.instanceCaught, true, 'the guard\'s WebAssembly instance was caught: the wasm figures are its own')
      assert.equal(run.traffic.repaired, cycles + WARMUP)
      assert.ok(run.wasm.end - run.wasm.start <= WINDOWS_ALLOWANCE, `${kb(run.wasm.start)} -> ${kb(run.wasm.end)}`)
    })
  })
}

// ---------------------------------------------------------------------------
// The loop child

function runChild(options) {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, ['--expose-gc', fileURLToPath(import.meta.url)], {
      env: { ...process.env, HG_DISPOSAL_LOOP: JSON.stringify(options) },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => { stdout += d })
    child.stderr.on('data', (d) => { stderr += d })
    child.on('error', reject)
    child.on('close', (code) => {
      const line = stdout.split('\n').find(l => l.startsWith('HG_LOOP_RESULT '))
      if (code !== 0 || !line) reject(new Error(`loop child (guard ${options.guard}) exited ${code}\n${stdout}\n${stderr}`))
      else resolvePromise(JSON.parse(line.slice('HG_LOOP_RESULT '.length)))
    })
  })
}

/**
 * `parts` picks the traffic of a cycle (default: all of it); a narrower loop
 * helps locate a growth: `HG_DISPOSAL_LOOP='{"project":"…","cycles":2000,
 * "warmup":50,"guard":true,"parts":["claim"]}' node --expose-gc disposal.test.mjs`.
 * `gcEachCycle` runs a full GC (and the finalizers after it) after every cycle.
 */
async function runLoop({ project, cycles, warmup, guard, parts = ['answered', 'deadline', 'claim'], gcEachCycle = false }) {
  assert.equal(typeof globalThis.gc, 'function', 'started with --expose-gc')
  // The glue keeps its WebAssembly.Instance to itself: catch it as it is made.
  let instance
  const Instance = WebAssembly.Instance
  WebAssembly.Instance = new Proxy(Instance, {
    construct(target, args, newTarget) {
      const made = Reflect.construct(target, args, newTarget)
      if (made.exports.__wbindgen_externrefs) instance ??= made
      return made
    },
  })

  const host = await startHost(project, { guard: { enabled: false } })
  const config = { inspect: { deadlineMs: 2 } }
  const traffic = { answered: 0, deadline: 0, repaired: 0 }
  let initialWasm

  const cycle = async () => {
    if (guard) await host.setGuard({ enabled: true, config })
    initialWasm ??= instance?.exports.memory.buffer.byteLength
    if (parts.includes('answered')) { // a client query a page answers
      const answered = host.ask()
      host.registry().resolveClientQuery(answered.agent, answered.requestId, { ok: true, data: { count: 1 } })
      if ((await answered.outcome).status === 'fulfilled') traffic.answered++
    }
    if (parts.includes('deadline')) { // one nobody answers: the guard's 2 ms deadline (the control aborts it as late)
      const hung = host.ask()
      const timer = guard ? undefined : setTimeout(() => hung.controller.abort(), config.inspect.deadlineMs)
      const out = await hung.outcome
      clearTimeout(timer)
      if (out.error?.code === 'INSPECT_CLIENT_DEADLINE') traffic.deadline++
    }
    if (parts.includes('claim')) { // a claim: a fresh agent is sent a bare string
      const handle = await host.agent()
      const reason = await host.send(handle.agent, BARE)
      if (reason?.kind === 'completed') traffic.repaired++
      await handle.dispose()
    }
    if (guard) await host.setGuard({ enabled: false })
    host.rig.logs.clear() // the rig's own log capture would grow with every warn line
    if (gcEachCycle) { globalThis.gc(); await new Promise(r => setTimeout(r, 0)) }
  }

  const settleGc = async () => {
    for (let i = 0; i < 4; i++) {
      globalThis.gc()
      await new Promise(r => setTimeout(r, 5)) // FinalizationRegistry callbacks (wasm-bindgen frees) run in later tasks
    }
    globalThis.gc()
  }
  const externrefs = () => {
    const table = instance?.exports.__wbindgen_externrefs
    if (!table) return { size: 0, live: 0 }
    let live = 0
    for (let i = 1028; i < table.length; i++) { const v = table.get(i); if (v !== undefined && v !== null) live++ }
    return { size: table.length, live }
  }
  const wasmBytes = () => instance?.exports.memory.buffer.byteLength ?? 0

  for (let i = 0; i < warmup; i++) await cycle()
  await settleGc()
  const start = { heap: process.memoryUsage().heapUsed, wasm: wasmBytes(), externrefs: externrefs() }
  const samples = { heap: [], wasm: [] }
  const began = performance.now()
  for (let i = 1; i <= cycles; i++) {
    await cycle()
    if (i % Math.max(1, Math.floor(cycles / 4)) === 0) {
      await settleGc()
      samples.heap.push(process.memoryUsage().heapUsed)
      samples.wasm.push(wasmBytes())
    }
  }
  const elapsed = performance.now() - began
  await settleGc()
  const end = { heap: process.memoryUsage().heapUsed, wasm: wasmBytes(), externrefs: externrefs() }

  const fiber = host.rig.fiber(ID)
  const registry = rawOf(host.rig.ctx.get('cordisInspect'))
  const glue = guard ? await glueOf(project) : undefined
  const result = {
    guard,
    cycles,
    warmup,
    msPerCycle: elapsed / cycles,
    instanceCaught: instance !== undefined,
    heap: { start: start.heap, end: end.heap, growth: end.heap - start.heap, samples: samples.heap },
    wasm: { initial: initialWasm ?? 0, start: start.wasm, end: end.wasm, samples: samples.wasm },
    externrefs: { start: start.externrefs, end: end.externrefs },
    traffic,
    end: {
      fiberClean: fiber ? isClean(host.rig.ctx, fiber) : true,
      timeouts: activeTimeouts(),
      registryOwnMethods: ownMethods(registry),
      inFlight: glue ? glue.inFlight() : [0, false, false],
    },
  }
  await host.rig.stop()
  process.stdout.write(`HG_LOOP_RESULT ${JSON.stringify(result)}\n`)
}
