// Recovery after faults, on the real host: the bound on recoveries (and what the
// status says once the guard gave up), the backoff timer of a waiting recovery
// in an otherwise idle process, memory across many fresh instances, and a registry
// replaced while the guard is down. Each case runs `fixtures/recovery-case.mjs` in a
// Node process of its own with the fault-injection build (`harness-guard-faults`,
// `make pkg-faults`). The control arm of the memory case runs the same mounts and
// turns with no fault; the per-point recoveries (and their controls) are in
// faults.test.mjs.
//
// Needs Node >= 22 (the agent loop). Run: node --test recovery.test.mjs

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const FIXTURE = fileURLToPath(new URL('./fixtures/recovery-case.mjs', import.meta.url))
const CWD = fileURLToPath(new URL('.', import.meta.url))
const RECOVERIES = 1000

function run(...args) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--expose-gc', FIXTURE, ...args], { cwd: CWD, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk) => { stdout += chunk })
    child.stderr.on('data', (chunk) => { stderr += chunk })
    const killer = setTimeout(() => child.kill('SIGKILL'), 120000)
    child.on('error', reject)
    child.on('close', (code, signal) => {
      clearTimeout(killer)
      const line = stdout.split('\n').find((l) => l.startsWith('HG_RECOVERY_RESULT '))
      const tail = `\n--- stdout\n${stdout.slice(-3000)}\n--- stderr\n${stderr.slice(-3000)}`
      try {
        assert.equal(signal, null, `not killed${tail}`)
        assert.equal(code, 0, `exit code${tail}`)
        assert.ok(line, `printed its result${tail}`)
      } catch (error) {
        reject(error)
        return
      }
      resolve({ ...JSON.parse(line.slice('HG_RECOVERY_RESULT '.length)), stderr })
    })
  })
}

/** Least-squares slope of `y` over `x`, over the second half of the samples. */
function slope(samples, y) {
  const half = samples.slice(Math.floor(samples.length / 2))
  const mx = half.reduce((a, s) => a + s.i, 0) / half.length
  const my = half.reduce((a, s) => a + s[y], 0) / half.length
  let sxx = 0
  let sxy = 0
  for (const s of half) {
    sxx += (s.i - mx) ** 2
    sxy += (s.i - mx) * (s[y] - my)
  }
  return sxy / sxx
}

test('a fault that recurs: five recoveries guard again, the sixth fault leaves the guard down, the process up', async () => {
  const r = await run('bound')
  assert.deepEqual(r.uncaught, [])
  assert.deepEqual(r.unhandled, [])
  assert.deepEqual(r.firstGuarded, { reason: 'completed', repaired: true, sawBare: true }, 'control: guarded, the bare string is repaired')
  assert.equal(r.recoveries.length, 6)
  for (const [i, step] of r.recoveries.slice(0, 5).entries()) {
    assert.equal(step.turnAtFault.reason, 'error', `fault ${i + 1}: the turn at the fault runs unguarded (the bare string kills it, as without the guard)`)
    assert.equal(step.mounted, true, `recovery ${i + 1}: mounted on a fresh instance`)
    assert.equal(step.recoveries, i + 1)
    assert.deepEqual(step.guarded, { reason: 'completed', repaired: true, sawBare: true }, `recovery ${i + 1}: the bare string is repaired again`)
  }
  const last = r.recoveries[5]
  assert.equal(last.mounted, false, 'the sixth fault in ten minutes: no recovery')
  assert.equal(last.error.code, 'HARNESS_GUARD_FAILED')
  assert.match(last.error.message, /until the process restarts/)
  assert.equal(r.afterGivingUp.reason, 'error', 'the host runs on, unguarded')
  assert.equal(r.gaveUpLines.length, 1, `one error line says it stays down: ${JSON.stringify(r.errorLines)}`)
  assert.match(r.gaveUpLines[0], /stays down .* until the process restarts/)
  assert.equal(r.warnings.codes.HARNESS_GUARD_FAULT, 6, 'each fault is one process warning too, where the CLI\'s user sees it')
})

test('control: a registry replaced while the guard is up is restored at its disposal, and the new one guarded', async () => {
  const r = await run('replaced', 'control')
  assert.equal(r.failed, undefined, 'no fault')
  assert.deepEqual(r.oldGuarded, ['query', 'resolveClientQuery'])
  assert.deepEqual(r.oldAtItsDisposal, [], 'the guard takes its wrappers off as the registry goes')
  assert.deepEqual(r.freshGuarded, ['query', 'resolveClientQuery'])
})

test('a registry replaced while the guard is down keeps the faulted wrappers (forwarding) until the recovery, which takes them off and guards the new one', async () => {
  const r = await run('replaced')
  assert.match(r.failed, /stood down/)
  assert.deepEqual(r.oldAtItsDisposal, ['query', 'resolveClientQuery'], 'the faulted instance is never entered again, so nothing takes them off then')
  assert.equal(r.recoveries, 1)
  assert.deepEqual(r.freshGuarded, ['query', 'resolveClientQuery'], 'the recovered guard guards the registry there now')
  assert.deepEqual(r.oldAfterRecovery, [], 'no fresh install adopted the old registry\'s wrappers: the recovery took them off')
  assert.deepEqual(r.uncaught, [])
  assert.deepEqual(r.unhandled, [])
})

test('gaveUp: after the sixth fault the services, the HarnessGuard provider and /harness-guard say the guard gave up (after the fifth recovery, none does)', async () => {
  const r = await run('bound')
  const before = r.saidAfterFive
  for (const [name, status] of [['inboxInputGuard', before.inbox], ['inspectClientGuard', before.inspect], ['the provider', before.provider]]) {
    assert.equal(status.recoveries, 5, `control, ${name}: five recoveries`)
    assert.equal(status.gaveUp, undefined, `control, ${name}: not given up`)
  }
  assert.equal(before.command.kind, 'success')
  assert.match(before.command.text, /: guarding \(recovered 5 times after internal faults/, 'control: the command says it is guarding')
  const after = r.saidAfterGivingUp
  for (const [name, status] of [['inboxInputGuard', after.inbox], ['inspectClientGuard', after.inspect], ['the provider', after.provider]]) {
    assert.equal(status.gaveUp, true, `${name}: gaveUp`)
    assert.equal(status.recoveries, 5, `${name}: recoveries`)
    assert.equal(status.lastFault?.point, 'claim', `${name}: the last fault`)
    assert.match(status.failed, /stays down .* until the process restarts/, `${name}: failed says it stays down`)
  }
  assert.match(after.command.text, /stays down .* until the process restarts/, 'the command says it stays down')
})

const IDLE = fileURLToPath(new URL('./fixtures/recovery-idle.mjs', import.meta.url))
/** The backoff before the first recovery. */
const BACKOFF_MS = 1000
/** Date.now() has whole milliseconds, and a Node timer may fire within one of its delay. */
const CLOCK_SLACK_MS = 2

/** Run the idle child: its lines, and how long it lived after the fault (Date.now() at its exit). */
function idle(mode) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [IDLE, mode], { cwd: CWD, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk) => { stdout += chunk })
    child.stderr.on('data', (chunk) => { stderr += chunk })
    const killer = setTimeout(() => child.kill('SIGKILL'), 60000)
    child.on('error', reject)
    child.on('exit', (code, signal) => {
      const exitAt = Date.now()
      clearTimeout(killer)
      child.on('close', () => {
        const fault = /^fault (\d+) timers (\d+)$/m.exec(stdout)
        const recovered = /^recovered (\d+)$/m.exec(stdout)
        resolve({
          code,
          signal,
          stderr,
          timers: fault ? Number(fault[2]) : undefined,
          livedAfterFaultMs: fault ? exitAt - Number(fault[1]) : undefined,
          recoveredAfterFaultMs: fault && recovered ? Number(recovered[1]) - Number(fault[1]) : undefined,
        })
      })
    })
  })
}

test('the backoff timer keeps an otherwise idle process alive until the recovery, and no longer', async () => {
  const [waiting, cancelled] = [await idle('wait'), await idle('cancelled')]
  for (const r of [waiting, cancelled]) {
    assert.equal(r.signal, null, r.stderr)
    assert.equal(r.code, 0, r.stderr)
  }
  assert.equal(cancelled.timers, 0, 'control: with no recovery waiting, no Timeout keeps the process alive')
  assert.equal(cancelled.recoveredAfterFaultMs, undefined, 'control: no recovery')
  assert.equal(waiting.timers, 1, 'the recovery\'s backoff timer, and nothing else, keeps it alive')
  assert.ok(waiting.recoveredAfterFaultMs >= BACKOFF_MS - CLOCK_SLACK_MS,
    `recovered ${waiting.recoveredAfterFaultMs} ms after the fault: not before the backoff (${BACKOFF_MS} ms)`)
  assert.ok(waiting.livedAfterFaultMs >= BACKOFF_MS - CLOCK_SLACK_MS, `lived ${waiting.livedAfterFaultMs} ms after the fault, through the backoff`)
  assert.ok(waiting.livedAfterFaultMs < BACKOFF_MS + 10000, `exited ${waiting.livedAfterFaultMs} ms after the fault: once recovered, nothing holds it`)
})

test(`${RECOVERIES} recoveries: memory stays flat and no faulted instance stays alive`, async (t) => {
  const [guarded, control] = [await run('memory', String(RECOVERIES)), await run('control', String(RECOVERIES))]
  for (const r of [guarded, control]) {
    assert.deepEqual(r.uncaught, [])
    assert.deepEqual(r.unhandled, [])
    assert.equal(r.refusedAt, undefined, 'every mount after a fault recovered')
    assert.deepEqual(r.lastTurn, { reason: 'completed', repaired: true, sawBare: true }, 'still guarding at the end')
  }
  assert.equal(guarded.status.recoveries, RECOVERIES)
  assert.equal(guarded.warnings.codes.HARNESS_GUARD_FAULT, RECOVERIES)
  assert.equal(guarded.instancesMade, RECOVERIES + 1, 'one fresh instance per fault')
  assert.equal(control.status.recoveries, 0, 'control: no fault, no recovery')
  assert.equal(control.instancesMade, 1)
  assert.ok(guarded.samples.every((s) => s.liveInstances <= 2), `faulted instances are collected: ${guarded.samples.map((s) => s.liveInstances)}`)
  const perRecovery = slope(guarded.samples, 'heapUsed') - slope(control.samples, 'heapUsed')
  t.diagnostic(`JS heap, second half: ${Math.round(slope(guarded.samples, 'heapUsed'))} B per recovery against ${Math.round(slope(control.samples, 'heapUsed'))} B per fault-free remount; ${guarded.ms} ms for ${RECOVERIES} recoveries`)
  assert.ok(perRecovery < 1024, `the JS heap grows ${Math.round(perRecovery)} B per recovery beyond the control (budget: under 1 KiB)`)
})
