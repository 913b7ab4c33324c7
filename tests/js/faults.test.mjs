// Failing open, on the real host: a real wasm trap at every entry point.
//
// Each case runs `fixtures/fault-case.mjs` in a Node process of its own (the wasm
// instance, and so a fault, lives as long as the process): the agent host with
// dsh-time-context, the real inspect registry and one mount of the guard covering
// both halves, in one cordis Context. The guarded arm loads the fault-injection
// build (`harness-guard-faults`, `make pkg-faults`) and calls `injectFault(point)`;
// the control arm runs the same steps with the published package and nothing
// injected, and shows the guard at work (so no check below passes vacuously).
//
// What is checked, for every point: the turn at the fault completes and the model
// gets the batch as the host claimed it; a query a page answers resolves with the
// page's data; a query waiting for a page (4 s deadline) rejects at once with
// INSPECT_CLIENT_GUARD_FAILED, its pending entry removed; no uncaught exception,
// no unhandled rejection, the process runs to its end; until the recovery, turns
// and queries run unguarded and the services and the HarnessGuard provider answer,
// saying the guard failed and where; one error line and one process warning name
// the point. After the backoff the guard recovers on a fresh instance (one info
// line): a query no page answers gets INSPECT_CLIENT_DEADLINE, a refusal is
// surfaced, a bare string is repaired, the status counts the recovery, the
// wrappers left behind were re-pointed (one on each slot, never two), and mounting
// again works. A fault inside `apply` fails the mount with nothing installed, and a
// mount after it works on a fresh instance at once.
//
// Needs Node >= 22 (the agent loop) and both packages in node_modules
// (`make test-js` builds them). Run: node --test faults.test.mjs

import { before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { VALID_DATA } from './support/inspect-rig.mjs'

const FIXTURE = fileURLToPath(new URL('./fixtures/fault-case.mjs', import.meta.url))
const CWD = fileURLToPath(new URL('.', import.meta.url))

const POINTS = ['claim', 'preStep', 'created', 'sessionEvent', 'begin', 'settle', 'tick', 'resolve', 'apply']
/** Points reached by the inbox half's first turn; the others by a query, or by the mount itself. */
const INBOX_POINTS = new Set(['claim', 'preStep', 'created', 'sessionEvent'])
/** The waiting query's deadline in the fixture: ended by the fault, it ends before it. */
const DEADLINE_MS = 4000
/** The backoff before the first recovery. */
const BACKOFF_MS = 1000
/** Date.now() has whole milliseconds, and a Node timer may fire within one of its delay. */
const CLOCK_SLACK_MS = 2
/** How long a child may take before it counts as hung (a case takes 10–15 s). */
const CHILD_LIMIT_MS = 60000
/** Children at once: the machine has two cores. */
const PARALLEL = 2

const FAILED = 'INSPECT_CLIENT_GUARD_FAILED'
const DEADLINE = 'INSPECT_CLIENT_DEADLINE'
const REFUSED = 'INSPECT_CLIENT_REFUSED'
const STOOD_DOWN = 'HARNESS_GUARD_FAILED'
const FAULT_LINE = 'harness-guard stood down after an internal fault'

// ---------------------------------------------------------------------------
// The children, at most PARALLEL at a time, each started once

const queue = []
let running = 0
const runs = new Map()

function pump() {
  while (running < PARALLEL && queue.length > 0) {
    const start = queue.shift()
    running += 1
    start().finally(() => {
      running -= 1
      pump()
    })
  }
}

/** The case of `point` on `build` ('faults' or 'normal'): `{ code, signal, stdout, stderr, ms, result }`. */
function run(point, build) {
  const key = `${point} ${build}`
  if (!runs.has(key)) {
    runs.set(key, new Promise((resolve, reject) => {
      queue.push(() => spawnCase(point, build).then(resolve, reject))
      pump()
    }))
  }
  return runs.get(key)
}

function spawnCase(point, build) {
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const child = spawn(process.execPath, [FIXTURE, point, build], { cwd: CWD, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk) => { stdout += chunk })
    child.stderr.on('data', (chunk) => { stderr += chunk })
    const killer = setTimeout(() => child.kill('SIGKILL'), CHILD_LIMIT_MS)
    child.on('error', reject)
    child.on('close', (code, signal) => {
      clearTimeout(killer)
      const line = stdout.split('\n').find((l) => l.startsWith('HG_FAULT_RESULT '))
      const result = line === undefined ? undefined : JSON.parse(line.slice('HG_FAULT_RESULT '.length))
      resolve({ code, signal, stdout, stderr, ms: Math.round(performance.now() - started), result })
    })
  })
}

/** The child ran to its end and printed its result; returns the result. */
async function finished(point, build) {
  const child = await run(point, build)
  const tail = `\n--- stdout\n${child.stdout.slice(-4000)}\n--- stderr\n${child.stderr.slice(-4000)}`
  assert.equal(child.signal, null, `${point} (${build}): not killed${tail}`)
  assert.equal(child.code, 0, `${point} (${build}): exit code${tail}`)
  assert.ok(child.result, `${point} (${build}): printed its result${tail}`)
  assert.equal(child.result.steps.at(-1), 'done', `${point} (${build}): ran every step`)
  return child.result
}

before(() => {
  for (const point of POINTS) {
    run(point, 'faults')
    run(point, 'normal')
  }
})

// ---------------------------------------------------------------------------
// Shared checks

/** The batch of a turn as the host claimed it: everything sent, in order. */
function assertUnguardedBatch(turn, label) {
  assert.deepEqual(turn.reason, { kind: 'completed' }, `${label}: the turn completes`)
  assert.equal(turn.threw, undefined, `${label}: inject and followup do not throw`)
  assert.equal(turn.modelCalls, 1, `${label}: one model call`)
  assert.deepEqual(turn.batch, turn.sent, `${label}: the model gets the near-message and the good message, as sent`)
}

/** The guard at work: the near-message dropped, the good message kept. */
function assertGuardedBatch(turn, label) {
  assert.deepEqual(turn.reason, { kind: 'completed' }, `${label}: the turn completes`)
  assert.equal(turn.modelCalls, 1, `${label}: one model call`)
  assert.deepEqual(turn.batch, [turn.sent[1]], `${label}: the near-message is dropped, the good message reaches the model`)
}

function assertClean(result) {
  assert.deepEqual(result.uncaught, [], 'no uncaught exception')
  assert.deepEqual(result.unhandled, [], 'no unhandled rejection')
  assert.deepEqual(result.agentErrors, [], 'no agent/error')
}

const isGuardCode = (code) => typeof code === 'string' && code.startsWith('INSPECT_CLIENT_')

// ---------------------------------------------------------------------------

/** The services' and the provider's status say the guard failed at `point` and has not recovered. */
function assertDownStatus(status, point, label) {
  assert.match(status?.failed ?? '', /stood down/, `${label}: failed`)
  assert.equal(status.recoveries, 0, `${label}: no recovery yet`)
  assert.equal(status.lastFault?.point, point, `${label}: the last fault's point`)
  assert.equal(typeof status.lastFault?.at, 'number')
}

for (const point of POINTS.filter((p) => p !== 'apply')) {
  describe(`a trap in ${point}`, () => {
    test('control: the published package, nothing injected: the near-message is dropped, the waiting query waits, a refusal ends its query, no fault line', async () => {
      const r = await finished(point, 'normal')
      assert.equal(r.exportsInjectFault, false, 'the published package has no injectFault')
      assertClean(r)
      assertGuardedBatch(r.turn1, 'turn 1')
      assertGuardedBatch(r.turn2, 'turn 2')
      assert.ok(r.waitingRequestId, 'the waiting query reached the registry')
      assert.equal(r.waiting.status, 'pending', 'the waiting query still waits (its deadline is 4 s away)')
      assert.equal(r.waiting.pendingInRegistry, true)
      assert.equal(r.timeoutsAfterWaiting, r.timeoutsIdle + 1, 'its deadline timer keeps the process alive')
      assert.equal(r.refused.status, 'rejected', 'a page refusal ends its query (after the grace)')
      assert.equal(r.refused.error?.code, REFUSED)
      assert.deepEqual(r.faultLines, [], 'no fault line')
      assert.deepEqual(r.recoveredLines, [], 'no recovery')
      assert.equal(r.services.inboxCounts.value.quarantined, 2, 'both near-messages were recorded')
      assert.equal(r.services.inboxCounts.value.failed, undefined)
      assert.ok(r.services.inspectCounts.value.refused >= 1)
      assert.equal(r.provider.value?.failed ?? null, null, 'the provider does not say the guard failed')
      assert.equal(r.provider.value?.recoveries, 0)
      assert.equal(r.hungAfter.error?.code, DEADLINE)
      assert.equal(r.turn3.batch[0]?.source?.plugin, 'inbox-input-guard', 'the bare string is repaired')
      assert.deepEqual(r.wrappers, { query: { count: 1, same: true }, resolve: { count: 1 }, claim: { count: 1, same: true }, claimOriginalIsTheHosts: true })
      assert.deepEqual(r.remount, { mounted: true }, 'mounting again (a fresh Context, same process) works')
      assert.equal(r.warnings.filter((w) => w.includes('harness-guard')).length, 0, 'no process warning')
      if (point === 'created') assert.equal(r.trigger.agentCreated, true)
      if (point === 'begin' || point === 'settle') assert.deepEqual(r.trigger.query.value, VALID_DATA)
      if (point === 'resolve' || point === 'tick') assert.equal(r.trigger.query.error?.code, REFUSED)
    })

    test('the turn at the fault completes, and the model gets the batch as the host claimed it', async () => {
      const r = await finished(point, 'faults')
      assert.equal(r.exportsInjectFault, true)
      assertClean(r)
      if (point === 'created') {
        assert.equal(r.trigger.createThrew, undefined, 'agent/created did not veto the agent')
        assert.equal(r.trigger.agentCreated, true, 'the agent is published')
      }
      if (point === 'preStep') {
        // The claim ran guarded just before the pre-step trap: the batch it claimed was
        // already clean, and the pre-step entry passed it on (next() was called).
        assertGuardedBatch(r.turn1, 'turn 1')
      } else {
        assertUnguardedBatch(r.turn1, 'turn 1')
      }
    })

    test(`a waiting query rejects at once with ${FAILED}, well before its deadline, its pending entry removed`, async () => {
      const r = await finished(point, 'faults')
      assert.ok(r.waitingRequestId, 'the waiting query reached the registry')
      assert.equal(r.waiting.status, 'rejected')
      assert.equal(r.waiting.error?.code, FAILED)
      assert.match(r.waiting.error?.message, /stood down/)
      assert.equal(r.waiting.pendingInRegistry, false, 'the registry has no pending entry for it')
      assert.ok(r.waiting.afterFaultMs < DEADLINE_MS,
        `ended ${r.waiting.afterFaultMs} ms after the fault, before its deadline (${DEADLINE_MS} ms)`)
      assert.equal(r.timeoutsAfterWaiting, r.timeoutsIdle + 1, 'the faulted instance\'s deadline timer is cleared: only the backoff timer keeps the process alive')
      if (point === 'resolve' || point === 'tick') {
        assert.equal(r.trigger.query.error?.code, FAILED, 'the refused query, in flight at the fault, ends the same way')
        assert.equal(r.trigger.query.pendingInRegistry, false)
      }
      assert.equal(r.pendingAtEnd, 0, 'nothing left pending in the registry')
    })

    test('a query a page answers resolves with the page\'s data', async () => {
      const r = await finished(point, 'faults')
      if (point === 'begin' || point === 'settle') {
        assert.deepEqual(r.trigger.ack, { accepted: true })
        assert.equal(r.trigger.query.status, 'fulfilled', 'the query at the fault')
        assert.deepEqual(r.trigger.query.value, VALID_DATA)
      }
      if (point === 'resolve') assert.deepEqual(r.trigger.ack, { accepted: false }, 'the refused answer gets the registry\'s own result')
      assert.deepEqual(r.answeredAck, { accepted: true })
      assert.equal(r.answered.status, 'fulfilled')
      assert.deepEqual(r.answered.value, VALID_DATA)
    })

    test('until the recovery, turns and queries run unguarded', async () => {
      const r = await finished(point, 'faults')
      assertUnguardedBatch(r.turn2, 'turn 2')
      // Without the guard the registry ignores a page refusal: the query keeps waiting.
      assert.deepEqual(r.refusedAck, { accepted: false })
      assert.equal(r.refused.status, 'pending', 'a refused query waits, as it does unguarded')
      assert.equal(r.refused.pendingInRegistry, true)
      assert.equal(r.refusedAtEnd.status, 'rejected', 'its caller\'s cancellation ends it')
      assert.ok(!isGuardCode(r.refusedAtEnd.error?.code), `the registry's own error, not the guard's (${r.refusedAtEnd.error?.code})`)
      assert.equal(r.refusedAtEnd.pendingInRegistry, false)
    })

    test('one error line through the cordis logger and one process warning name the point and the trap', async () => {
      const r = await finished(point, 'faults')
      assert.equal(r.faultLines.length, 1, JSON.stringify(r.faultLines))
      assert.deepEqual(r.faultLinesAfterTrigger, r.faultLines, 'logged at the fault, and never again')
      const [line] = r.faultLines
      assert.equal(line.name, 'harness-guard')
      assert.ok(line.text.includes(`(in ${point}: RuntimeError: unreachable)`), line.text)
      const warned = r.warnings.filter((w) => w.includes(FAULT_LINE))
      assert.equal(warned.length, 1, `one process warning, where the CLI's user sees it: ${JSON.stringify(r.warnings)}`)
      assert.ok(warned[0].includes(`(in ${point}: RuntimeError: unreachable)`), warned[0])
    })

    test('while it is down the services and the HarnessGuard provider answer without throwing, and say where it failed', async () => {
      const r = await finished(point, 'faults')
      const { services } = r
      for (const [name, answer] of Object.entries(services)) {
        assert.equal(answer.threw, undefined, `${name} does not throw`)
        assert.equal(answer.missing, undefined, `${name}: the service is still provided`)
      }
      assert.deepEqual(services.violations.value, [])
      assert.deepEqual(services.reports.value, [])
      for (const counts of [services.inboxCounts.value, services.inspectCounts.value]) {
        const { failed, recoveries, lastFault, ...numbers } = counts
        assert.ok(Object.keys(numbers).length > 0)
        for (const [key, value] of Object.entries(numbers)) assert.equal(value, 0, `counts().${key}`)
        assert.match(failed, /stood down/)
        assert.equal(lastFault?.point, point)
      }
      assertDownStatus(services.inboxStatus.value, point, 'inboxInputGuard.status()')
      assertDownStatus(services.inspectStatus.value, point, 'inspectClientGuard.status()')
      assert.equal(r.provider.error, undefined, 'the provider answers')
      assertDownStatus(r.provider.value, point, 'the provider')
    })

    test('after the backoff it recovers on a fresh instance: deadlines, refusals and repairs work again', async () => {
      const r = await finished(point, 'faults')
      assert.equal(r.recoveredLines.length, 1, JSON.stringify(r.recoveredLines))
      assert.equal(r.recoveredLines[0].type, 'info')
      assert.ok(r.recoveredLines[0].text.includes(`after a fault in ${point}`), r.recoveredLines[0].text)
      assert.ok(r.recoveredAfterFaultMs >= BACKOFF_MS - CLOCK_SLACK_MS,
        `recovered ${r.recoveredAfterFaultMs} ms after the fault: not before the backoff (${BACKOFF_MS} ms)`)
      assert.ok(r.recoveredAfterFaultMs < BACKOFF_MS + 10000, `recovered ${r.recoveredAfterFaultMs} ms after the fault`)
      assert.equal(r.hungAfter.status, 'rejected')
      assert.equal(r.hungAfter.error?.code, DEADLINE, 'a query no page answers gets the deadline again')
      assert.equal(r.hungAfter.pendingInRegistry, false)
      assert.equal(r.refusedAfter.error?.code, REFUSED, 'a page refusal is surfaced again')
      assert.deepEqual(r.turn3.reason, { kind: 'completed' })
      assert.equal(r.turn3.batch.length, 2)
      assert.equal(r.turn3.batch[0]?.source?.plugin, 'inbox-input-guard', 'the bare string is repaired again')
      assert.equal(r.turn3.batch[0]?.content?.[0]?.text, r.turn3.sent[0])
    })

    test('after the recovery the status counts it, and the records start again', async () => {
      const r = await finished(point, 'faults')
      for (const status of [r.servicesAfter.inboxStatus.value, r.servicesAfter.inspectStatus.value, r.providerAfter.value]) {
        assert.equal(status.failed, undefined, 'up again')
        assert.equal(status.recoveries, 1)
        assert.equal(status.lastFault?.point, point)
        assert.equal(status.inspect.installed, true)
        assert.equal(status.inbox.installed, true)
      }
      assert.equal(r.servicesAfter.inspectCounts.value.deadline, 1, 'the deadline after the recovery')
      assert.equal(r.servicesAfter.inboxCounts.value.repaired, 1, 'the repair after the recovery')
    })

    test('the wrappers the faulted instance left were re-pointed, never stacked, and disposal restores the host', async () => {
      const r = await finished(point, 'faults')
      // An agent created at a fault in agent/created had no wrapper to re-point: its
      // claim is wrapped afresh by the recovered guard.
      const claimSame = point !== 'created'
      assert.deepEqual(r.wrappers, { query: { count: 1, same: true }, resolve: { count: 1 }, claim: { count: 1, same: claimSame }, claimOriginalIsTheHosts: true })
      assert.deepEqual(r.remount, { mounted: true }, 'mounting again (a fresh Context) works')
      assert.equal(r.disposed, 'ok')
      assert.deepEqual(r.registryOwnAfterDispose, [], 'the registry\'s methods are its own again')
      assert.equal(r.claimOwnAfterDispose, false, 'the inbox\'s claim is its own again')
      assert.equal(r.timeoutsLeft, 0, 'no Timeout left once every query ended')
    })
  })
}

describe('a trap in apply', () => {
  test('control: the published package mounts and installs both halves', async () => {
    const r = await finished('apply', 'normal')
    assertClean(r)
    assert.equal(r.mount.mounted, true)
    assert.deepEqual(r.mount.registryOwn, ['query', 'resolveClientQuery'], 'the registry is wrapped')
    assert.equal(r.mount.inspectService, true)
    assert.equal(r.mount.inboxService, true)
    assert.equal(r.mount.provider, true)
    assert.equal(r.claimOwnAfterTurn, true, 'the agent\'s claim is wrapped at its first turn')
    assert.equal(r.laterAgentClaimOwn, true, 'a later agent\'s claim is wrapped at creation')
    assertGuardedBatch(r.turn1, 'turn 1')
    assert.deepEqual(r.remount, { mounted: true })
    assert.equal(r.remountStatus.recoveries, 0)
  })

  test('the mount fails with an Error, and nothing is installed', async () => {
    const r = await finished('apply', 'faults')
    assertClean(r)
    assert.equal(r.mount.mounted, false)
    assert.equal(r.mount.error.isError, true)
    assert.equal(r.mount.error.code, STOOD_DOWN)
    assert.deepEqual(r.mount.before, { registryOwn: [], claimOwn: false })
    assert.deepEqual(r.mount.registryOwn, [], 'no own method on the registry')
    assert.equal(r.mount.queryIsClassMethod, true)
    assert.equal(r.mount.resolveIsClassMethod, true)
    assert.equal(r.mount.claimOwn, false, 'the agent\'s claim is untouched')
    assert.equal(r.mount.inspectService, false, 'no inspectClientGuard service')
    assert.equal(r.mount.inboxService, false, 'no inboxInputGuard service')
    assert.equal(r.mount.provider, false, 'no HarnessGuard provider')
    assert.equal(r.claimOwnAfterTurn, false, 'nor after a turn')
    assert.equal(r.laterAgentClaimOwn, false, 'nor on a later agent')
  })

  test('the host runs on unguarded: the turn gets its batch as claimed, a page\'s answer resolves', async () => {
    const r = await finished('apply', 'faults')
    assertUnguardedBatch(r.turn1, 'turn 1')
    assert.deepEqual(r.answeredAck, { accepted: true })
    assert.deepEqual(r.answered.value, VALID_DATA)
  })

  test('mounting again works at once, on a fresh instance: the recovery', async () => {
    const r = await finished('apply', 'faults')
    assert.deepEqual(r.remount, { mounted: true })
    assert.equal(r.remountStatus.recoveries, 1)
    assert.equal(r.remountStatus.lastFault?.point, 'apply')
    assert.equal(r.remountStatus.failed, undefined)
    assert.equal(r.recoveredLines.length, 1)
  })

  test('the fault is said once through the logger, and once as a process warning, naming apply', async () => {
    const r = await finished('apply', 'faults')
    assert.equal(r.faultLines.length, 1, JSON.stringify({ faultLines: r.faultLines, warnings: r.warnings }))
    assert.ok(r.faultLines[0].text.includes('(in apply: RuntimeError: unreachable)'), r.faultLines[0].text)
    const warned = r.warnings.filter((w) => w.includes(FAULT_LINE))
    assert.equal(warned.length, 1, JSON.stringify(r.warnings))
  })
})

// ---------------------------------------------------------------------------
// Faults below the top level: a trap while wasm frames of the guard are already
// on the stack (`fixtures/nested-fault-case.mjs`). The instance must not be
// replaced under the code still running in it: the fault stands the guard down
// at once, and the outermost exit from wasm replaces the instance. Afterwards a
// query no page answers gets its deadline and a bare string is repaired again;
// the control arm without any guard shows neither happens on its own.

const NESTED = fileURLToPath(new URL('./fixtures/nested-fault-case.mjs', import.meta.url))
const NESTED_POINTS = ['effect', 'recover', 'service', 'conflict', 'ending']

/** The nested case of `point` on `build`: its result, once it ran to its end. */
function nested(point, build) {
  const key = `nested ${point} ${build}`
  if (!runs.has(key)) {
    runs.set(key, new Promise((resolve, reject) => {
      queue.push(() => new Promise((done) => {
        const child = spawn(process.execPath, [NESTED, point, build], { cwd: CWD, stdio: ['ignore', 'pipe', 'pipe'] })
        let stdout = ''
        let stderr = ''
        child.stdout.on('data', (chunk) => { stdout += chunk })
        child.stderr.on('data', (chunk) => { stderr += chunk })
        const killer = setTimeout(() => child.kill('SIGKILL'), 2 * CHILD_LIMIT_MS)
        child.on('error', (error) => { clearTimeout(killer); reject(error); done() })
        child.on('close', (code, signal) => {
          clearTimeout(killer)
          const line = stdout.split('\n').find((l) => l.startsWith('HG_NESTED_RESULT '))
          const tail = `\n--- stdout\n${stdout.slice(-3000)}\n--- stderr\n${stderr.slice(-3000)}`
          if (signal !== null || code !== 0 || line === undefined) reject(new Error(`${key}: exit ${code} ${signal}${tail}`))
          else resolve(JSON.parse(line.slice('HG_NESTED_RESULT '.length)))
          done()
        })
      }))
      pump()
    }))
  }
  return runs.get(key)
}

/** Guarded again after the fault: the deadline, and the repair. */
function assertGuardedAgain(r, label) {
  assert.equal(r.hungAfter.end, 'settled', `${label}: a query no page answers is not left waiting`)
  assert.equal(r.hungAfter.error?.code, DEADLINE, `${label}: it gets the deadline`)
  assert.equal(r.hungAfter.pendingInRegistry, false)
  assert.equal(r.turnAfter.reason, 'completed', `${label}: the turn with a bare string completes`)
  assert.equal(r.turnAfter.repaired, true, `${label}: the bare string reached the model repaired`)
  assert.equal(r.pendingAtEnd, 0, `${label}: nothing left pending in the registry`)
}

describe('faults below the top level', () => {
  test('control: without any guard a query no page answers waits, and a bare string kills the turn', async () => {
    const r = await nested('none', 'none')
    assert.equal(r.hungAfter.end, 'hung')
    assert.equal(r.hungAfter.pendingInRegistry, true)
    assert.equal(r.turnAfter.reason, 'error')
    assert.equal(r.turnAfter.repaired, false)
  })

  for (const point of NESTED_POINTS) {
    test(`control (${point}): the published package, nothing injected, guards throughout`, async () => {
      const r = await nested(point, 'normal')
      assertClean(r)
      assert.deepEqual(r.faultLines, [])
      assertGuardedAgain(r, 'guarded')
      if (point === 'effect') assert.equal(r.mount.mounted, true)
      if (point !== 'effect') assert.equal(r.waiting.error?.code, DEADLINE, 'the waiting query ends at its deadline')
      if (point === 'service') assert.deepEqual(r.secondReports, ['deadline', 'deadline'])
      assert.equal(r.status.recoveries, 0)
    })
  }

  test('a trap in an effect cordis runs inside apply: the mount fails with nothing installed; mounting again guards both halves', async () => {
    const r = await nested('effect', 'faults')
    assertClean(r)
    assert.equal(r.mount.mounted, false)
    assert.equal(r.mount.error?.code, STOOD_DOWN)
    assert.equal(r.mount.error?.isError, true)
    assert.match(r.mount.error?.message, /in effect/)
    assert.deepEqual(r.mount.registryOwn, [], 'the registry is untouched')
    assert.equal(r.mount.claimOwn, false, 'the inbox is untouched')
    assert.deepEqual(r.mount.services, [], 'no service is left')
    assert.deepEqual(r.remount, { mounted: true }, 'mounting again works, on a fresh instance')
    assert.equal(r.faultLines.length, 1, JSON.stringify(r.faultLines))
    assert.ok(r.faultLines[0].text.includes('(in effect: RuntimeError: unreachable)'), r.faultLines[0].text)
    assertGuardedAgain(r, 'after the fault')
    assert.equal(r.status.recoveries, 1)
    assert.equal(r.status.lastFault?.point, 'effect')
  })

  test('a trap while the backoff timer recovers: the next recovery, after the doubled backoff, guards both halves', async () => {
    const r = await nested('recover', 'faults')
    assert.deepEqual(r.uncaught, [], 'no uncaught exception')
    assert.deepEqual(r.unhandled, [], 'no unhandled rejection')
    assert.equal(r.turnAtFault.reason, 'error', 'the turn at the claim fault ran unguarded')
    assert.equal(r.agentErrors.length, 1, 'the bare string killed that turn, and only that one')
    assert.equal(r.waiting.error?.code, FAILED, 'the waiting query ended at the first fault')
    assert.ok(r.waiting.afterFaultMs < DEADLINE_MS, `well before its deadline (${r.waiting.afterFaultMs} ms after the fault)`)
    assert.equal(r.firstRecoveryFaulted, true)
    assert.deepEqual(r.faultLines.map((l) => /\(in (\w+): ([^)]*)\)/.exec(l.text)?.slice(1)), [['claim', 'RuntimeError: unreachable'], ['recover', 'RuntimeError: unreachable']],
      'two faults, each a clean trap: no instance read another\'s memory')
    assert.match(r.faultLines[1].text, /in 2 s/, 'the second fault backs off twice as long')
    assert.equal(r.recovered, true)
    assert.equal(r.recoveredLines.length, 1)
    assertGuardedAgain(r, 'after the recovery')
    assert.equal(r.status.recoveries, 2)
    assert.equal(r.status.lastFault?.point, 'recover')
  })

  test('a trap in a service read from onReport, a callback of the deadline tick: every query ends, no text is garbled, both halves are guarded again', async () => {
    const r = await nested('service', 'faults')
    assertClean(r)
    assert.equal(r.trigger.end, 'settled')
    assert.equal(r.trigger.error?.code, DEADLINE, 'the query whose deadline called onReport gets its deadline')
    assert.match(r.trigger.error?.message, /^Client inspect query Theme\.listTokens got no answer from any page within 300ms\./)
    assert.equal(r.trigger.pendingInRegistry, false)
    assert.equal(r.waiting.error?.code, FAILED, 'the mount\'s waiting query ends at the fault')
    assert.ok(r.waiting.afterFaultMs < DEADLINE_MS, `well before its deadline (${r.waiting.afterFaultMs} ms after the fault)`)
    assert.equal(r.faultLines.length, 1, JSON.stringify(r.faultLines))
    assert.ok(r.faultLines[0].text.includes('(in service: RuntimeError: unreachable)'), r.faultLines[0].text)
    assert.ok(r.warnings.every((w) => !w.includes('\u0000')), 'no line read out of another instance\'s memory')
    assert.equal(r.recovered, true)
    assertGuardedAgain(r, 'after the recovery')
    assert.equal(r.secondHungAfter.error?.code, DEADLINE, 'the programmatic install is guarding again too')
    assert.equal(r.secondPendingAtEnd, 0)
    assert.equal(r.status.recoveries, 1)
  })

  test('a trap in the endings of a tick, with a query landed and not yet delivered: that query still ends, with the guard\'s failure, and the guard recovers', async () => {
    const r = await nested('ending', 'faults')
    assertClean(r)
    assert.equal(r.waiting.end, 'settled', 'the landed query is not left waiting')
    assert.equal(r.waiting.error?.code, FAILED, 'it ends as every query does when the guard stands down')
    assert.equal(r.waiting.pendingInRegistry, false, 'its pending entry is removed')
    assert.ok(Math.abs(r.waiting.afterFaultMs) < 1000, `ended ${r.waiting.afterFaultMs} ms from its deadline, where the trap was`)
    assert.equal(r.faultLines.length, 1, JSON.stringify(r.faultLines))
    assert.ok(r.faultLines[0].text.includes('(in tick: RuntimeError: unreachable)'), r.faultLines[0].text)
    assert.equal(r.recovered, true)
    assertGuardedAgain(r, 'after the recovery')
    assert.equal(r.pendingAtEnd, 0)
    assert.equal(r.status.recoveries, 1)
  })

  test('a borrow conflict in the deadline tick is a fault, not a tick that does nothing: the waiting query ends at once, and the guard recovers', async () => {
    const r = await nested('conflict', 'faults')
    assertClean(r)
    assert.equal(r.waiting.end, 'settled', 'the waiting query is not left waiting')
    assert.equal(r.waiting.error?.code, FAILED)
    assert.ok(r.waiting.afterFaultMs < DEADLINE_MS, `ended ${r.waiting.afterFaultMs} ms after the conflict, before its deadline`)
    assert.equal(r.faultLines.length, 1, JSON.stringify(r.faultLines))
    assert.ok(r.faultLines[0].text.includes('(in tick: RuntimeError: unreachable)'), r.faultLines[0].text)
    assert.equal(r.recovered, true)
    assertGuardedAgain(r, 'after the recovery')
    assert.equal(r.status.recoveries, 1)
  })
})
