// harness-guard mounted as users mount it: the packed tarball installed into a
// fresh consumer project, a row naming the package, the real
// `@deepseek-ai/cordis-plugin-loader`, and real `@deepseek-ai/dsh-app-boot`
// profile composition with the shipped `cordis.patch.yml` as a bundle layer.
//
// The host is real too: the agent stack (dsh-llm, dsh-session,
// dsh-system-prompt, dsh-tools, dsh-agent, dsh-agent-loop, dsh-time-context)
// and the Cordis host runner (which provides `cordisInspect`) are loader rows
// naming their published packages. Only the model is an offline adapter.
// Every behaviour has a control arm on the same host without the guard.
//
// Needs the tarball in <repo>/dist (`make pack`) and Node >= 22 (the agent loop).

import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readdirSync, rmSync } from 'node:fs'
import { join, resolve } from 'node:path'
import {
  activeTimeouts,
  AGENT_ROWS,
  BARE,
  bootProfile,
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
  recordUnhandledRejections,
  RUNNER_ROW,
  startLoader,
} from './support/loader-rig.mjs'

const ROW = Object.freeze({ id: ID, name: NAME })
const MANIFEST = [{
  id: 'Theme',
  description: 'Design tokens of the page theme',
  methods: [{ name: 'listTokens', description: 'List the theme tokens', inputSchema: { type: 'object' }, outputSchema: { type: 'object', properties: { count: { type: 'number' } }, required: ['count'] } }],
}]
/** How long a control arm waits before calling a client query hung. */
const HANG = 200


let project
let host
before(async () => {
  const dist = resolve(HOST_DIR, '..', '..', 'dist')
  const tarball = (existsSync(dist) ? readdirSync(dist) : []).find(f => f.startsWith(`${NAME}-`) && f.endsWith('.tgz'))
  assert.ok(tarball, 'the packed tarball is in dist/ (run `make pack`)')
  project = makeConsumerProject({ tarball: join(dist, tarball) })
  const { LlmAdapter } = await importFrom('@deepseek-ai/dsh-llm', project)
  const { Inbox } = await importFrom('@deepseek-ai/dsh-agent', project)
  const { CordisInspectRegistryService } = await importFrom('@deepseek-ai/dsh-cordis-host-runner', project)
  const { version } = installedManifest(NAME, project).manifest
  host = { LlmAdapter, Inbox, Registry: CordisInspectRegistryService, owner: `${NAME}@${version}` }
})
after(() => { if (project) rmSync(project, { recursive: true, force: true }) })

// ---------------------------------------------------------------------------
// Driving the host

/** Record every model request; answer each with a short text. */
function fakeModel() {
  const requests = []
  const Model = fakeModelClass(host.LlmAdapter, requests)
  return Object.assign(new Model(), { requests })
}

/** Texts of every message the model was sent. */
function modelTexts(model) {
  return model.requests.flatMap(r => r.messages ?? []).flatMap(m => (Array.isArray(m?.content) ? m.content : [m])).map(b => (typeof b === 'object' ? b?.text : b))
}

/**
 * A host around a rig (loader or profile): the fake model is registered,
 * agents are created through the real registry, and everything made here is
 * disposed before the rig stops.
 */
function hostOn(rig) {
  const model = fakeModel()
  rig.ctx.llm.registerAdapter(['fake'], model)
  const handles = []
  let sessions = 0
  const h = {
    rig,
    model,
    async agent() {
      const handle = await rig.ctx.agents.create({ sessionId: `loader-${process.pid}-${++sessions}`, agentOptions: { provider: 'fake', model: 'fake-model' } })
      handles.push(handle)
      return handle.agent
    },
    /** Send `value` as a follow-up and return how the turn it starts ends. */
    async send(agent, value) {
      const mark = agent.session.events.length
      agent.followup(value)
      await bounded(agent.whenIdle(), 5000, `agent ${agent.id} idle`)
      await tick()
      return agent.session.events.slice(mark).findLast(e => e.type === 'turn/end')?.data.reason
    },
    registry() {
      const svc = rig.ctx.get('cordisInspect')
      if (svc) svc.syncClientManifest(MANIFEST)
      return svc
    },
    /** Start a client query; `{ promise, requestId, outcome }` (outcome settles with `{ status, value | error }`). */
    ask(svc = h.registry(), agent = { id: 'agent-under-test' }) {
      let requestId
      const off = rig.ctx.on('cordis/inspect-query', (r) => { requestId ??= r.requestId })
      const promise = svc.query('client', 'Theme', 'listTokens', {}, agent, new AbortController().signal)
      off()
      const outcome = promise.then(value => ({ status: 'fulfilled', value }), error => ({ status: 'rejected', error }))
      return { promise, requestId, outcome, agent }
    },
    async close() {
      for (const handle of handles.splice(0).reverse()) await handle.dispose().catch(() => {})
      await rig.stop()
    },
  }
  return h
}

async function loaderHost(rows) {
  return hostOn(await startLoader({ cwd: project, rows }))
}

const tick = () => new Promise(r => setImmediate(r))
const sleep = (ms) => new Promise(r => setTimeout(r, ms))

/** Race `promise` with a cleared timer; rejects with `what` when it does not settle in `ms`. */
async function bounded(promise, ms, what) {
  let timer
  try {
    return await Promise.race([promise, new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`${what}: not within ${ms}ms`)), ms) })])
  } finally {
    clearTimeout(timer)
  }
}

/** Within `ms`, or 'hung'. */
async function within(outcome, ms) {
  return bounded(outcome, ms, 'query').catch(() => 'hung')
}

const rawOf = (svc) => svc?.[ORIGINAL] ?? svc
/** Own function-valued properties (the guard patches by own property). */
const ownMethods = (object) => Object.getOwnPropertyNames(object).filter(k => typeof object[k] === 'function').sort()
const marker = (fn) => fn?.[PATCHED]
/** The `ctx.inject(['cordisInspect'])` sub-fiber of the guard's fiber. */
const inspectFiber = (rig, fiber) => [...rig.ctx.root.registry.values()].flatMap(rt => [...rt.fibers]).find(f => f !== fiber && f.parent?.fiber === fiber && Object.keys(f.inject ?? {}).includes('cordisInspect'))

function assertRegistryUntouched(svc, label) {
  const raw = rawOf(svc)
  assert.deepEqual(ownMethods(raw), [], `${label}: no own method on the registry`)
  assert.equal(raw.query, host.Registry.prototype.query, `${label}: query is the class's own`)
  assert.equal(raw.resolveClientQuery, host.Registry.prototype.resolveClientQuery, `${label}: resolveClientQuery is the class's own`)
}

function assertRegistryGuarded(svc, label) {
  const raw = rawOf(svc)
  assert.deepEqual(ownMethods(raw), ['query', 'resolveClientQuery'], `${label}: query and resolveClientQuery are patched`)
  for (const key of ['query', 'resolveClientQuery']) {
    assert.equal(marker(raw[key])?.owner, host.owner, `${label}: ${key} carries the guard's marker`)
    assert.equal(marker(raw[key]).original, host.Registry.prototype[key], `${label}: ${key} wraps the class method itself (no stacked wrapper)`)
  }
}

/** The bare string killed the turn the way it does without the guard (the seed's crash). */
function assertCrashed(reason, label) {
  assert.equal(reason?.kind, 'error', `${label}: the turn ends in error`)
  assert.match(reason.error?.message ?? '', /reading 'kind'/, `${label}: time-context's TypeError`)
}

// ---------------------------------------------------------------------------

describe('the row through the real loader', () => {
  test('control: without the guard row, a client query hangs and a bare inbox string kills the turn', async (t) => {
    const h = await loaderHost(HOST_ROWS)
    t.after(() => h.close())
    const q = h.ask()
    assert.equal(await within(q.outcome, HANG), 'hung', 'nothing ends the wait')
    assert.ok(rawOf(h.registry()).pending.has(q.requestId))
    const agent = await h.agent()
    assertCrashed(await h.send(agent, BARE), 'control')
    assert.equal(h.model.requests.length, 0, 'the model was never asked')
    assertRegistryUntouched(h.registry(), 'control')
    assert.equal(Object.hasOwn(agent.inbox, 'claim'), false)
    rawOf(h.registry()).pending.clear() // the control's hung entry
  })

  test('{ id: harness-guard, name: cordis-plugin-harness-guard } installs both halves with the defaults', async (t) => {
    const h = await loaderHost([ROW, ...HOST_ROWS])
    t.after(() => h.close())
    const fiber = h.rig.fiber(ID)
    assert.equal(fiber?.state, FiberState.ACTIVE, 'the row is ACTIVE')
    assert.deepEqual(fiber.config, { inspect: { enabled: true, deadlineMs: 15000 }, inbox: { enabled: true, mode: 'repair', previewChars: 80 } })
    assert.equal(h.rig.logs.since(0, ['error', 'warn']).length, 0, `no warning or error while mounting:\n${h.rig.logs.text(['error', 'warn'])}`)
    assert.ok(h.rig.ctx.get('inspectClientGuard') && h.rig.ctx.get('inboxInputGuard'), 'both services are provided')
    assert.equal(inspectFiber(h.rig, fiber)?.state, FiberState.ACTIVE, 'the inspect sub-fiber runs (cordisInspect exists)')

    // Inspect half: patched by marker; a healthy answer is untouched; a ref'd deadline timer while waiting.
    assertRegistryGuarded(h.registry(), 'mounted')
    const timers = activeTimeouts()
    const q = h.ask()
    assert.equal(activeTimeouts(), timers + 1, 'a deadline timer while the query waits')
    assert.deepEqual(h.registry().resolveClientQuery(q.agent, q.requestId, { ok: true, data: { count: 2 } }), { accepted: true })
    assert.deepEqual(await within(q.outcome, 1000), { status: 'fulfilled', value: { count: 2 } })
    assert.equal(activeTimeouts(), timers, 'the timer went with the answered query')

    // Inbox half: the bare string reaches the model as a repaired user message.
    const agent = await h.agent()
    assert.deepEqual(await h.send(agent, BARE), { kind: 'completed' })
    assert.ok(modelTexts(h.model).includes(BARE), 'the model received the text')
    assert.equal(marker(agent.inbox.claim)?.owner, host.owner, "the agent's claim is wrapped")
    assert.equal(marker(agent.inbox.claim).original, host.Inbox.prototype.claim)
    const records = h.rig.ctx.get('inboxInputGuard').violations()
    assert.ok(records.some(v => v.origin === 'claimed' && v.action === 'repaired' && v.sessionId === agent.id))
  })

  test("the row's config reaches both halves", async (t) => {
    const h = await loaderHost([{ ...ROW, config: { inspect: { deadlineMs: 60 }, inbox: { mode: 'quarantine' } } }, ...HOST_ROWS])
    t.after(() => h.close())
    const q = h.ask()
    const out = await within(q.outcome, 2000)
    assert.equal(out.error?.code, 'INSPECT_CLIENT_DEADLINE')
    assert.match(out.error.message, /within 60ms/)
    assert.equal(rawOf(h.registry()).pending.size, 0)
    const agent = await h.agent()
    await h.send(agent, BARE)
    assert.ok(!modelTexts(h.model).includes(BARE), 'quarantined: the text never reaches the model')
    assert.ok(h.rig.ctx.get('inboxInputGuard').violations().some(v => v.origin === 'claimed' && v.action === 'quarantined'))
  })

  test('disabled: true leaves the registry and every inbox untouched (the host behaves as without the guard)', async (t) => {
    const h = await loaderHost([{ ...ROW, disabled: true }, ...HOST_ROWS])
    t.after(() => h.close())
    assert.equal(h.rig.fiber(ID), undefined, 'nothing was mounted')
    assert.equal(h.rig.ctx.get('inspectClientGuard'), undefined)
    assert.equal(h.rig.ctx.get('inboxInputGuard'), undefined)
    assertRegistryUntouched(h.registry(), 'disabled')
    const q = h.ask()
    assert.equal(await within(q.outcome, HANG), 'hung', 'no deadline')
    rawOf(h.registry()).pending.clear()
    const agent = await h.agent()
    assert.equal(Object.hasOwn(agent.inbox, 'claim'), false, 'the inbox keeps its class method')
    assertCrashed(await h.send(agent, BARE), 'disabled')
    assert.equal(Object.hasOwn(agent.inbox, 'claim'), false, 'still untouched after a turn')
  })

  test('a config change applies in place: no restart, the query already waiting keeps its deadline, the records stay', async (t) => {
    const h = await loaderHost([ROW, ...HOST_ROWS])
    t.after(() => h.close())
    const fiber = h.rig.fiber(ID)
    const effects = fiber.getEffects()
    const agent = await h.agent()
    assert.deepEqual(await h.send(agent, BARE), { kind: 'completed' }) // claim wrapped, repaired
    const wrapper = agent.inbox.claim
    const listenersBefore = listenersOf(h.rig.ctx, fiber).map(l => l.event).sort()
    const timers = activeTimeouts()
    const inFlight = h.ask() // waits on the 15 s default
    const query = rawOf(h.registry()).query

    const warnings = []
    const onWarning = (w) => warnings.push(w)
    process.on('warning', onWarning)
    t.after(() => process.off('warning', onWarning))
    const { logs } = await h.rig.update([{ ...ROW, config: { inspect: { deadlineMs: 80 }, inbox: { mode: 'quarantine' } } }, ...HOST_ROWS])
    assert.deepEqual(logs.filter(l => l.type === 'error'), [])
    assert.equal(h.rig.fiber(ID), fiber, 'the same fiber')
    assert.equal(fiber.state, FiberState.ACTIVE)
    const after = fiber.getEffects()
    assert.ok(after.length === effects.length && after.every((e, i) => e === effects[i]), `not restarted: the same effects, none added or made again\n${effects.map(e => e.label).join(', ')}\n${after.map(e => e.label).join(', ')}`)
    assert.equal(fiber.config.inspect.deadlineMs, 80, 'the fiber holds the new config')
    assert.equal(fiber.config.inbox.mode, 'quarantine')
    assert.equal(rawOf(h.registry()).query, query, 'the same registry wrapper')
    assert.equal(agent.inbox.claim, wrapper, 'the same claim wrapper')
    assert.deepEqual(listenersOf(h.rig.ctx, fiber).map(l => l.event).sort(), listenersBefore, 'the same listeners, not doubled')

    // The next query gets the new deadline; the one already waiting keeps its own.
    const q = h.ask()
    const out = await within(q.outcome, 2000)
    assert.equal(out.error?.code, 'INSPECT_CLIENT_DEADLINE')
    assert.match(out.error.message, /within 80ms/, 'the new deadline is in force')
    assert.equal(await within(inFlight.outcome, 50), 'hung', 'the query already waiting is not ended by the change')
    assert.equal(activeTimeouts(), timers + 1, 'one deadline timer, for the waiting query')

    await h.send(agent, 'another bare string')
    assert.ok(!modelTexts(h.model).includes('another bare string'), 'the new mode (quarantine) is in force')
    const claimed = h.rig.ctx.get('inboxInputGuard').violations().filter(v => v.origin === 'claimed')
    assert.deepEqual(claimed.map(v => v.action), ['repaired', 'quarantined'], 'the records stay: one ledger across the change')
    assert.deepEqual(warnings.filter(w => w.code === 'HARNESS_GUARD'), [], 'a change applied says nothing')
    const ended = await h.rig.update([{ ...ROW, disabled: true }, ...HOST_ROWS])
    assert.deepEqual(ended.logs.filter(l => l.type === 'error'), [])
    const old = await within(inFlight.outcome, 1000)
    assert.equal(old.error?.code, 'INSPECT_CLIENT_GUARD_DISPOSED', 'disabling the row still disposes as before')
  })

  test('control: without the guard\'s internal/update hook, the same edit restarts it (the query in flight ends with the old tree)', async (t) => {
    const h = await loaderHost([ROW, ...HOST_ROWS])
    t.after(() => h.close())
    const fiber = h.rig.fiber(ID)
    const effects = fiber.getEffects()
    const inFlight = h.ask()
    fiber._hooks['internal/update'] = undefined // as a plugin with no hook has none
    await h.rig.update([{ ...ROW, config: { inspect: { deadlineMs: 80 } } }, ...HOST_ROWS])
    const old = await within(inFlight.outcome, 1000)
    assert.equal(old.error?.code, 'INSPECT_CLIENT_GUARD_DISPOSED', 'restarted: the query in flight ended with the old tree')
    assert.equal(fiber.state, FiberState.ACTIVE)
    const after = fiber.getEffects()
    assert.deepEqual(after.map(e => e.label), effects.map(e => e.label), 'the same effects')
    assert.ok(after.every(e => !effects.includes(e)), 'made again')
  })

  const INVALID = [
    [{ inbox: { previewChars: 0 } }, 'inbox.previewChars'],
    [{ inbox: { previewChars: 100001 } }, 'inbox.previewChars'],
    [{ inspect: { deadlineMs: 1.5 } }, 'inspect.deadlineMs'],
    [{ inspect: { deadlineMs: -5 } }, 'inspect.deadlineMs'],
    [{ inspect: { deadlineMs: 2147483648 } }, 'inspect.deadlineMs'],
    [{ inspect: { deadlineMs: '100' } }, 'inspect.deadlineMs'],
    [{ inspect: { deadlineMs: 100, refusalGraceMs: 200 } }, 'inspect.refusalGraceMs'],
    [{ inbox: { mode: 'bogus' } }, 'inbox.mode'],
    [{ inbox: { bogus: 1 } }, 'inbox.bogus'],
  ]

  test('an invalid config change is refused with the field named, while the last good tree keeps running', async (t) => {
    const unhandled = recordUnhandledRejections()
    t.after(() => unhandled.stop())
    const good = { ...ROW, config: { inspect: { deadlineMs: 70 } } }
    const h = await loaderHost([good, ...HOST_ROWS])
    t.after(() => h.close())
    const fiber = h.rig.fiber(ID)
    const uid = fiber.uid
    const agent = await h.agent()
    const warnings = []
    const onWarning = (w) => { if (w.code === 'HARNESS_GUARD') warnings.push(w.message) }
    process.on('warning', onWarning)
    t.after(() => process.off('warning', onWarning))
    for (const [config, field] of INVALID) {
      const label = JSON.stringify(config)
      const mark = warnings.length
      const { logs } = await h.rig.update([{ ...ROW, config }, ...HOST_ROWS])
      const said = warnings.slice(mark)
      assert.equal(said.length, 1, `${label}: the refused live edit is said once on stderr`)
      assert.ok(said[0].startsWith(`harness-guard: config refused, the running config stays: invalid harness-guard config: ${field} is `), `${label}: ${said[0]}`)
      const errors = logs.filter(l => l.type === 'error')
      assert.equal(errors.length, 1, `${label}: one error logged`)
      assert.equal(errors[0].name, 'loader', `${label}: logged by the loader`)
      assert.ok(errors[0].text.includes(field), `${label}: the error names ${field}:\n${errors[0].text}`)
      assert.equal(fiber.state, FiberState.ACTIVE, `${label}: still ACTIVE`)
      assert.equal(fiber.uid, uid, `${label}: not restarted`)
      assert.equal(fiber.config.inspect.deadlineMs, 70, `${label}: the last good config stays`)
      assertRegistryGuarded(h.registry(), label)
    }
    // The programmatic path rejects with the same ValidationError and logs nothing.
    const mark = warnings.length
    const programmatic = await h.rig.updateEntry(ID, { config: { inbox: { previewChars: 0 } } })
    assert.equal(warnings.length, mark + 1, 'refused live: said once')
    assert.equal(programmatic.error?.name, 'ValidationError')
    assert.match(programmatic.error.message, /inbox\.previewChars/)
    assert.equal(fiber.state, FiberState.ACTIVE)

    // The last good tree still does its work.
    const q = h.ask()
    const out = await within(q.outcome, 2000)
    assert.equal(out.error?.code, 'INSPECT_CLIENT_DEADLINE')
    assert.match(out.error.message, /within 70ms/)
    assert.deepEqual(await h.send(agent, BARE), { kind: 'completed' })
    assert.ok(modelTexts(h.model).includes(BARE))
    assert.deepEqual(unhandled.list, [], 'no unhandled rejection')

    // A valid change afterwards is applied, and says nothing.
    const quiet = warnings.length
    await h.rig.update([{ ...ROW, config: { inspect: { deadlineMs: 90 } } }, ...HOST_ROWS])
    assert.equal(warnings.length, quiet, 'an applied change says nothing')
    assert.equal(h.rig.fiber(ID).state, FiberState.ACTIVE)
    assert.equal(h.rig.fiber(ID).config.inspect.deadlineMs, 90)
  })

  test('an invalid config at the first mount installs nothing and names the field (not a live change: no "config refused" warning)', async (t) => {
    const warnings = []
    const onWarning = (w) => { if (w.code === 'HARNESS_GUARD') warnings.push(w.message) }
    process.on('warning', onWarning)
    t.after(() => process.off('warning', onWarning))
    const h = await loaderHost([...HOST_ROWS, { ...ROW, config: { inspect: { deadlineMs: 100, refusalGraceMs: 101 } } }])
    t.after(() => h.close())
    await tick()
    assert.deepEqual(warnings, [], 'a mount refused at activation is not a refused live change')
    const fiber = h.rig.fiber(ID)
    assert.equal(fiber?.state, FiberState.FAILED)
    assert.match(h.rig.logs.text(['error']), /inspect\.refusalGraceMs/)
    assertRegistryUntouched(h.registry(), 'failed mount')
    assert.equal(h.rig.ctx.get('inspectClientGuard'), undefined)
    const agent = await h.agent()
    assert.equal(Object.hasOwn(agent.inbox, 'claim'), false)
  })
})

// ---------------------------------------------------------------------------

describe('order and presence of services', () => {
  test('mounted before the host runner: the inspect half installs when cordisInspect appears and uninstalls when it goes away; the inbox half runs throughout', async (t) => {
    const h = await loaderHost([ROW, ...AGENT_ROWS])
    t.after(() => h.close())
    const fiber = h.rig.fiber(ID)
    const sub = inspectFiber(h.rig, fiber)
    assert.equal(fiber.state, FiberState.ACTIVE, 'activates with no host runner')
    assert.equal(h.rig.ctx.get('cordisInspect'), undefined)
    assert.equal(sub?.state, FiberState.PENDING, 'the inspect half waits for cordisInspect')
    assert.deepEqual(h.rig.ctx.get('inspectClientGuard').counts(), { deadline: 0, refused: 0, unboundAgent: 0, disposed: 0 })
    assert.equal(h.rig.logs.since(0, ['error', 'warn']).length, 0, h.rig.logs.text(['error', 'warn']))
    const agent = await h.agent()
    assert.deepEqual(await h.send(agent, BARE), { kind: 'completed' }, 'the inbox half runs alone')
    assert.ok(modelTexts(h.model).includes(BARE))

    // The host runner appears.
    await h.rig.update([ROW, ...AGENT_ROWS, RUNNER_ROW])
    const first = h.registry()
    assert.ok(first, 'cordisInspect is provided')
    assert.equal(sub.state, FiberState.ACTIVE, 'the inspect half started')
    assertRegistryGuarded(first, 'after the runner appeared')
    const timers = activeTimeouts()
    const inFlight = h.ask(first)

    // It goes away: the half uninstalls; the query in flight is not stranded.
    await h.rig.update([ROW, ...AGENT_ROWS])
    assert.equal(h.rig.ctx.get('cordisInspect'), undefined)
    assert.equal(sub.state, FiberState.PENDING, 'back to waiting')
    const out = await within(inFlight.outcome, 100)
    assert.equal(out.error?.code, 'INSPECT_CLIENT_GUARD_DISPOSED')
    assertRegistryUntouched(first, 'after the runner went away')
    assert.equal(rawOf(first).pending.size, 0)
    assert.equal(activeTimeouts(), timers)
    assert.equal(fiber.state, FiberState.ACTIVE)
    assert.deepEqual(await h.send(agent, 'still guarded'), { kind: 'completed' }, 'the inbox half is unaffected')
    assert.ok(modelTexts(h.model).includes('still guarded'))

    // It comes back: a new registry, guarded again.
    await h.rig.update([ROW, ...AGENT_ROWS, RUNNER_ROW])
    const second = h.registry()
    assert.notEqual(rawOf(second), rawOf(first))
    assertRegistryGuarded(second, 'after the runner came back')
    assertRegistryUntouched(first, 'the old registry stays as it was left')
  })

  test('mounted after the host runner: installs at once', async (t) => {
    const h = await loaderHost([...HOST_ROWS, ROW])
    t.after(() => h.close())
    assertRegistryGuarded(h.registry(), 'runner first')
  })
})

// ---------------------------------------------------------------------------

describe('profiles (dsh-app-boot) with the shipped cordis.patch.yml as a bundle layer', () => {
  const insert = (rows) => [{ insert: rows.map(r => ({ ...r })) }]
  const DISABLE = { id: ID, disabled: true }
  async function profile(t, { userPatch, ...rest } = {}) {
    const rig = await bootProfile({ cwd: project, bundles: [NAME], userPatch, ...rest })
    const h = hostOn(rig)
    t.after(() => h.close())
    return h
  }

  test('the bundle layer is the shipped row; with no host runner in the profile the inbox half runs alone', async (t) => {
    const h = await profile(t, { userPatch: insert(AGENT_ROWS) })
    assert.equal(h.rig.profile.layers.length, 1, 'one bundle layer')
    assert.equal(h.rig.profile.layers[0].packageName, NAME)
    assert.deepEqual(h.rig.profile.layers[0].patches, [{ insert: [{ id: ID, name: NAME }] }], 'read from the installed package through dsh.bundle.patch')
    const entry = h.rig.entry(ID)
    assert.equal(entry?.options.name, NAME)
    assert.equal(entry.fiber.state, FiberState.ACTIVE)
    assert.equal(inspectFiber(h.rig, entry.fiber)?.state, FiberState.PENDING, 'no cordisInspect in this profile')
    assert.equal(h.rig.logs.since(0, ['error', 'warn']).length, 0, h.rig.logs.text(['error', 'warn']))
    const agent = await h.agent()
    assert.deepEqual(await h.send(agent, BARE), { kind: 'completed' })
    assert.ok(modelTexts(h.model).includes(BARE))
  })

  test('with the host runner in the profile both halves install', async (t) => {
    const h = await profile(t, { userPatch: insert(HOST_ROWS) })
    assertRegistryGuarded(h.registry(), 'profile')
    const q = h.ask()
    assert.deepEqual(h.registry().resolveClientQuery(q.agent, q.requestId, { ok: true, data: { count: 1 } }), { accepted: true })
    assert.deepEqual(await within(q.outcome, 1000), { status: 'fulfilled', value: { count: 1 } })
  })

  test('user layer `- id: harness-guard / disabled: true`: not mounted at boot; live, it unmounts and leaves nothing', async (t) => {
    const h = await profile(t, { userPatch: [...insert(HOST_ROWS), DISABLE] })
    assert.equal(h.rig.entry(ID)?.fiber, undefined, 'not mounted')
    assert.equal(h.rig.ctx.get('inspectClientGuard'), undefined)
    assertRegistryUntouched(h.registry(), 'disabled at boot')
    const a = await h.agent()
    assertCrashed(await h.send(a, BARE), 'disabled at boot')
    assert.equal(Object.hasOwn(a.inbox, 'claim'), false)

    await h.rig.setUserPatch(insert(HOST_ROWS)) // enabled
    const fiber = h.rig.fiber(ID)
    assert.equal(fiber?.state, FiberState.ACTIVE)
    assertRegistryGuarded(h.registry(), 'enabled live')
    const b = await h.agent()
    assert.deepEqual(await h.send(b, BARE), { kind: 'completed' })

    const { logs } = await h.rig.setUserPatch([...insert(HOST_ROWS), DISABLE])
    assert.deepEqual(logs.filter(l => l.type === 'error' || l.type === 'warn'), [])
    assert.ok(isClean(h.rig.ctx, fiber), 'the fiber is disposed with nothing left on it')
    assertRegistryUntouched(h.registry(), 'disabled live')
    for (const [label, agent] of [['a', a], ['b', b]]) assert.equal(Object.hasOwn(agent.inbox, 'claim'), false, `agent ${label}: claim restored`)
    assertCrashed(await h.send(b, BARE), 'disabled live')
  })

  test('control: the contract\'s `- set: [{ id: harness-guard, disabled: true }]` is not a patch form: the loader warns and the row stays enabled', async (t) => {
    const SET = { set: [{ id: ID, disabled: true }] }
    const h = await profile(t, { userPatch: [...insert(HOST_ROWS), SET] })
    assert.match(h.rig.logs.text(['warn']), /patch: id is required for non-insert patches/)
    assert.equal(h.rig.fiber(ID)?.state, FiberState.ACTIVE, 'still mounted at boot')
    assertRegistryGuarded(h.registry(), 'set form at boot')
    await h.rig.setUserPatch(insert(HOST_ROWS))
    const { logs } = await h.rig.setUserPatch([...insert(HOST_ROWS), SET])
    assert.ok(logs.some(l => l.type === 'warn' && /id is required for non-insert patches/.test(l.text)), 'warned again on a live change')
    assert.equal(h.rig.fiber(ID)?.state, FiberState.ACTIVE, 'still mounted after a live change')
  })

  test('a user-layer config change applies in place; an invalid one is refused (logged by the include, field named) and the last good tree keeps running', async (t) => {
    const unhandled = recordUnhandledRejections()
    t.after(() => unhandled.stop())
    const h = await profile(t, { userPatch: insert(HOST_ROWS) })
    const fiber = h.rig.fiber(ID)
    await h.rig.setUserPatch([...insert(HOST_ROWS), { id: ID, config: { inspect: { deadlineMs: 50 } } }])
    assert.equal(h.rig.fiber(ID), fiber)
    assert.equal(fiber.config.inspect.deadlineMs, 50)
    assertRegistryGuarded(h.registry(), 'after the change')
    const { logs } = await h.rig.setUserPatch([...insert(HOST_ROWS), { id: ID, config: { inbox: { previewChars: 0 } } }])
    const errors = logs.filter(l => l.type === 'error')
    assert.equal(errors.length, 1)
    assert.equal(errors[0].name, 'include')
    assert.match(errors[0].text, /inbox\.previewChars/)
    assert.equal(fiber.state, FiberState.ACTIVE)
    assert.equal(fiber.config.inspect.deadlineMs, 50)
    const out = await within(h.ask().outcome, 2000)
    assert.match(out.error?.message ?? '', /within 50ms/, 'the last good config is in force')
    assert.deepEqual(unhandled.list, [])
  })
})
