// The `/harness-guard` command, through the host's real command registry
// (`CommandRuntime` of @deepseek-ai/dsh-commands) and its `execute`, as the web
// client runs a command: no model turn. One cordis Context holds the agent host
// (with dsh-time-context), the real inspect registry, the command registry and
// the guard. The control arm shows the host without the guard: no such command.
//
// Needs Node >= 22 (the agent loop). Run: node --test command.test.mjs

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { CommandRuntime } from '@deepseek-ai/dsh-commands'
import { CordisInspectRegistryService } from '@deepseek-ai/dsh-cordis-host-runner'
import { createRig, userMessage } from './support/agent-rig.mjs'
import { CODES, GUARD_PACKAGE, MANIFEST, sleep, track } from './support/inspect-rig.mjs'

const loadGuard = () => import(GUARD_PACKAGE)

const DEADLINE = 50
const SECRET = 'a bare string only session B wrote \u001b[31m'

async function host(t, { guard = true } = {}) {
  const rig = await createRig()
  t.after(() => rig.dispose())
  await rig.mount(CordisInspectRegistryService)
  await rig.mount(CommandRuntime)
  rig.ctx.get('cordisInspect').syncClientManifest(MANIFEST)
  if (guard) await rig.mount(await loadGuard(), { inspect: { deadlineMs: DEADLINE }, inbox: { mode: 'repair' } })
  return rig
}

/** What `/harness-guard` answers `agent`, as the web client asks it. */
function run(rig, agent, line = '/harness-guard') {
  return rig.ctx.get('commands').execute(agent, line, [], new AbortController().signal)
}

async function expire(rig, agent) {
  const q = track(rig.ctx.get('cordisInspect').query('client', 'Theme', 'listTokens', {}, agent, new AbortController().signal))
  await sleep(DEADLINE * 4)
  await q.done
  assert.equal(q.reason?.code, CODES.deadline)
}

async function poison(rig, agent, text) {
  const requests = rig.requests.length
  agent.followup(text)
  await rig.waitIdle(agent)
  assert.equal(rig.requests.length, requests + 1, 'the turn reached the model')
}

test('control: without the guard the host has no /harness-guard command', async (t) => {
  const rig = await host(t, { guard: false })
  const agent = await rig.createAgent()
  assert.equal(await run(rig, agent), undefined, 'an unknown command resolves to nothing')
  assert.ok(!rig.ctx.get('commands').list(agent).some((c) => c.name === 'harness-guard'))
})

test('the command is listed, and answers without a model turn: status, counts, and this session\'s records', async (t) => {
  const rig = await host(t)
  const a = await rig.createAgent()
  const listed = rig.ctx.get('commands').list(a).find((c) => c.name === 'harness-guard')
  assert.ok(listed?.description.length > 20, 'listed with a description')
  await expire(rig, a)
  await poison(rig, a, 'a bare string from a plugin')
  const requests = rig.requests.length
  const execution = await run(rig, a)
  assert.equal(rig.requests.length, requests, 'no model request')
  assert.equal(execution.result.kind, 'success')
  const { text } = execution.result
  assert.match(text, /^harness-guard \d+\.\d+\.\d+: guarding\n/)
  assert.match(text, /client inspect queries: guarded, deadline 50 ms, refusal grace 50 ms, 0 waiting now/)
  assert.match(text, /rejected at the deadline 1, refusals surfaced 0/)
  assert.match(text, /inbox entries: guarded, mode repair\n {2}repaired 1, quarantined 0, observed 1/)
  assert.match(text, /deadline Theme\.listTokens \(request inspect-\d+\): no page answered within 50 ms/)
  assert.match(text, /claimed next-turn\[0\]: string “a bare string from a plugin” repaired \(value \d+\)/)
  const events = a.session.events.map((e) => e.type)
  assert.ok(events.includes('command/run') && events.includes('command/done'), 'the session logs the command')
})

test('the command speaks of the asking session only, and escapes what producers wrote', async (t) => {
  const rig = await host(t)
  const a = await rig.createAgent()
  const b = await rig.createAgent()
  await expire(rig, b)
  await poison(rig, b, SECRET)
  const mine = (await run(rig, a)).result.text
  assert.match(mine, /no client-query reports in this session/)
  assert.match(mine, /no inbox violations in this session/)
  assert.match(mine, /rejected at the deadline 1/, 'counts carry no text and cover the mount')
  assert.ok(!mine.includes('only session B wrote'), 'another session\'s preview never appears')
  const theirs = (await run(rig, b)).result.text
  assert.ok(theirs.includes('a bare string only session B wrote \\u001b[31m'), theirs)
  assert.ok(!theirs.includes('\u001b'), 'no raw control character in the text')
})

test('the command shows the latest 10 records of the session, oldest first', async (t) => {
  const rig = await host(t)
  const a = await rig.createAgent()
  const registry = rig.ctx.get('cordisInspect')
  const queries = Array.from({ length: 12 }, () => track(registry.query('client', 'Theme', 'listTokens', {}, a, new AbortController().signal)))
  await Promise.all(queries.map((q) => q.done))
  const ids = rig.ctx.get('inspectClientGuard').reports().map((r) => r.requestId)
  assert.equal(ids.length, 12, 'the session has 12 reports')
  const { text } = (await run(rig, a)).result
  const shown = [...text.matchAll(/deadline Theme\.listTokens \(request (inspect-\d+)\)/g)].map((m) => m[1])
  assert.deepEqual(shown, ids.slice(-10), 'the latest 10, oldest first')
})

test('disposing the guard removes the command', async (t) => {
  const rig = await createRig()
  t.after(() => rig.dispose())
  await rig.mount(CommandRuntime)
  const fiber = await rig.mount(await loadGuard(), { inspect: { enabled: false } })
  const agent = await rig.createAgent()
  assert.equal((await run(rig, agent))?.result.kind, 'success')
  assert.match((await run(rig, agent)).result.text, /client inspect queries: not guarded here/)
  await rig.unmount(fiber)
  assert.equal(await run(rig, agent), undefined)
})

test('a command registry that arrives after the guard gets the command', async (t) => {
  const rig = await createRig()
  t.after(() => rig.dispose())
  await rig.mount(await loadGuard(), { inspect: { enabled: false } })
  const agent = await rig.createAgent()
  agent.followup(userMessage('hello'))
  await rig.waitIdle(agent)
  const commands = await rig.mount(CommandRuntime)
  assert.equal((await run(rig, agent))?.result.kind, 'success')
  await rig.unmount(commands)
})
