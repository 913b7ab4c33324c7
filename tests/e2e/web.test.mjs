// `dsh web` end to end: a client inspect query from a session on the `cordis`
// agent preset, with a page stand-in over the web app's real `/api`. Each
// behaviour runs twice: with the guard installed by `dsh plugin --profile web
// add <tarball>`, and (the control arm) in the same profile without it, where
// the bug shows.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { GUARD_ID, waitUntil } from './support/dsh.mjs'
import { byPrompt, callTool, promptOf, stepOf } from './support/fake-model.mjs'
import { THEME_PROVIDER, openPage } from './support/page.mjs'
import { HANG_BOUND_MS, deadlineMessage, eventsOf, withWeb } from './support/scenario.mjs'

const DEADLINE_MS = 3000
const QUERY = 'E2E: read the theme tokens of the page'
const ASK_GUARD = 'E2E: query the theme tokens, then ask HarnessGuard why it failed'
const clientQuery = callTool('cordis_inspect_query', { platform: 'client', provider: THEME_PROVIDER.id, method: 'tokens' })
const guardReports = callTool('cordis_inspect_query', { platform: 'host', provider: 'HarnessGuard', method: 'reports' })
const plans = {
  [QUERY]: [clientQuery],
  [ASK_GUARD]: [clientQuery, guardReports],
}
const deadlineConfig = `inspect:\n  deadlineMs: ${DEADLINE_MS}`

/** The request that carries step `step`'s tool result of the turn `prompt` started. */
const stepRequest = (prompt, step) => (r) => promptOf(r) === prompt && stepOf(r) === step
/** The newest tool result in a request. */
const toolText = (r) => r.body.messages.filter(m => m.role === 'tool').at(-1)?.content

async function newSession(api, home) {
  const { sessionId } = await api.createSession({ agentPreset: 'cordis', cwd: home.work })
  return sessionId
}

/**
 * The control arms' proof of the hang: the page saw the query, no tool result
 * reached the model and none is in the session within HANG_BOUND_MS; then
 * `session.cancel` is what ends the turn.
 */
async function assertHangsUntilCancelled({ api, model, page, sessionId, prompt, step = 1, afterSeq = -1 }) {
  const since = async (type) => (await eventsOf(api, sessionId, type)).filter(e => e.seq > afterSeq)
  await waitUntil(() => page.queries.length > 0, { ms: 10_000, what: 'the page to see the client query' })
  const waited = await model.waitFor(stepRequest(prompt, step), HANG_BOUND_MS).then(() => 'answered', () => 'no answer')
  assert.equal(waited, 'no answer', `a tool result reached the model within ${HANG_BOUND_MS} ms`)
  assert.equal((await since('tool/result')).length, step - 1, 'the client query has no tool result')
  assert.equal((await since('turn/end')).length, 0, 'the turn is still running')
  await api.cancel(sessionId)
  await waitUntil(async () => (await since('turn/end')).length > 0, { ms: 10_000, what: 'turn/end after session.cancel' })
}

/** The newest event seq of a session (to look at what comes after it). */
const lastSeq = async (api, sessionId) => Math.max(-1, ...(await eventsOf(api, sessionId)).map(e => e.seq))

test('(1) the web hang ends at the deadline and the model is told what to do instead', async (t) => {
  await withWeb({ label: 'deadline', guard: true, guardConfig: deadlineConfig, respond: byPrompt(plans) }, async ({ home, model, api }) => {
    const page = await openPage(api, { mode: 'silent' })
    try {
      const sessionId = await newSession(api, home)
      const t0 = Date.now()
      await api.prompt(sessionId, QUERY)
      const seen = await model.waitFor(stepRequest(QUERY, 1), DEADLINE_MS + 7_000)
      const elapsed = seen.at - t0
      t.diagnostic(`the model's tool result, ${elapsed} ms after the prompt: ${toolText(seen)}`)
      assert.equal(page.queries.length, 1, 'the page was asked')
      assert.equal(toolText(seen), deadlineMessage('Theme', 'tokens', DEADLINE_MS))
      assert.ok(elapsed >= DEADLINE_MS - 100, `the tool result came after ${elapsed} ms, before the ${DEADLINE_MS} ms deadline`)
      assert.ok(elapsed < DEADLINE_MS + 5_000, `the tool result came ${elapsed} ms after the prompt`)
      // The turn completes on its own: the model's final text quotes the message.
      await waitUntil(async () => (await eventsOf(api, sessionId, 'turn/end')).length === 1, { ms: 10_000, what: 'turn/end' })
      const [end] = await eventsOf(api, sessionId, 'turn/end')
      assert.equal(end.data.reason.kind, 'completed')
    } finally {
      page.close()
    }
  })
})

test('(1) control: without the guard the same query hangs until session.cancel', async () => {
  await withWeb({ label: 'deadline-ctl', guard: false, respond: byPrompt(plans) }, async ({ home, model, api }) => {
    const page = await openPage(api, { mode: 'silent' })
    try {
      const sessionId = await newSession(api, home)
      await api.prompt(sessionId, QUERY)
      await assertHangsUntilCancelled({ api, model, page, sessionId, prompt: QUERY })
    } finally {
      page.close()
    }
  })
})

const REFUSAL = { reason: 'provider-error', message: 'E2E page: the Theme provider threw: tokens are not loaded yet' }

test('(2) a page refusal reaches the model with the page\'s reason and message (default config)', async (t) => {
  await withWeb({ label: 'refusal', guard: true, respond: byPrompt(plans) }, async ({ home, model, api }) => {
    const page = await openPage(api, { mode: 'refuse', refusal: REFUSAL })
    try {
      const sessionId = await newSession(api, home)
      const t0 = Date.now()
      await api.prompt(sessionId, QUERY)
      const seen = await model.waitFor(stepRequest(QUERY, 1), 10_000)
      const text = toolText(seen)
      t.diagnostic(`the model's tool result, ${seen.at - t0} ms after the prompt: ${text}`)
      assert.deepEqual(page.acks, [{ accepted: false }], 'the registry turned the refusal away, as it does without the guard')
      assert.match(text, /^Error: /)
      assert.ok(text.includes(REFUSAL.reason), `the model sees the reason: ${text}`)
      assert.ok(text.includes(REFUSAL.message), `the model sees the page's message verbatim: ${text}`)
      assert.ok(seen.at - t0 < 8_000, `surfaced ${seen.at - t0} ms after the prompt, well inside the 15 s default deadline`)
    } finally {
      page.close()
    }
  })
})

test('(2) control: without the guard a refused query hangs until session.cancel', async () => {
  await withWeb({ label: 'refusal-ctl', guard: false, respond: byPrompt(plans) }, async ({ home, model, api }) => {
    const page = await openPage(api, { mode: 'refuse', refusal: REFUSAL })
    try {
      const sessionId = await newSession(api, home)
      await api.prompt(sessionId, QUERY)
      await assertHangsUntilCancelled({ api, model, page, sessionId, prompt: QUERY })
      assert.deepEqual(page.acks, [{ accepted: false }], 'the refusal was turned away and nothing else answered')
    } finally {
      page.close()
    }
  })
})

const TOKENS = { tokens: { accent: '#0a84ff', radius: '6px' } }
const healthyResult = JSON.stringify({ platform: 'client', provider: 'Theme', method: 'tokens', data: TOKENS }, null, 2)

for (const guard of [true, false]) {
  test(`a page that answers is heard the same ${guard ? 'with the guard' : 'without the guard (control)'}`, async () => {
    await withWeb({ label: guard ? 'answer' : 'answer-ctl', guard, guardConfig: guard ? deadlineConfig : undefined, respond: byPrompt(plans) }, async ({ home, model, api }) => {
      const page = await openPage(api, { mode: 'answer', answer: TOKENS })
      try {
        const sessionId = await newSession(api, home)
        await api.prompt(sessionId, QUERY)
        const seen = await model.waitFor(stepRequest(QUERY, 1), 10_000)
        assert.deepEqual(page.acks, [{ accepted: true }])
        assert.equal(toolText(seen), healthyResult)
      } finally {
        page.close()
      }
    })
  })
}

test('(4) after a deadline the model asks HarnessGuard and reads kind "deadline"', async () => {
  await withWeb({ label: 'reports', guard: true, guardConfig: deadlineConfig, respond: byPrompt(plans) }, async ({ home, model, api }) => {
    const page = await openPage(api, { mode: 'silent' })
    try {
      const sessionId = await newSession(api, home)
      await api.prompt(sessionId, ASK_GUARD)
      const seen = await model.waitFor(stepRequest(ASK_GUARD, 2), DEADLINE_MS + 10_000)
      const answer = JSON.parse(toolText(seen))
      assert.equal(answer.provider, 'HarnessGuard')
      assert.equal(answer.data.reports.length, 1)
      const [report] = answer.data.reports
      assert.equal(report.kind, 'deadline')
      assert.equal(report.providerId, 'Theme')
      assert.equal(report.methodName, 'tokens')
      assert.equal(report.deadlineMs, DEADLINE_MS)
      assert.equal(report.sessionId, sessionId, 'the report is the asking session\'s own')
      assert.equal(report.requestId, page.queries[0].requestId)
    } finally {
      page.close()
    }
  })
})

test('(4) control: without the guard there is no HarnessGuard provider to ask', async (t) => {
  const ASK_ONLY = 'E2E: ask HarnessGuard for its reports'
  await withWeb({ label: 'reports-ctl', guard: false, respond: byPrompt({ [ASK_ONLY]: [guardReports] }) }, async ({ home, model, api }) => {
    const sessionId = await newSession(api, home)
    await api.prompt(sessionId, ASK_ONLY)
    const seen = await model.waitFor(stepRequest(ASK_ONLY, 1), 10_000)
    const text = toolText(seen)
    t.diagnostic(`the model's tool result: ${text}`)
    assert.match(text, /^Error: /)
    assert.match(text, /HarnessGuard/)
    assert.doesNotMatch(text, /"kind"/)
  })
})

/** The guard's row in the web app's plugin inventory (`pluginInventory/list`). */
async function guardRow(api) {
  const { entries } = await api.remote('pluginInventory/list', {})
  return entries.find(e => e.moduleName === 'cordis-plugin-harness-guard')
}

test('(7) /harness-guard in dsh web answers without a model turn and counts the deadline', async (t) => {
  await withWeb({ label: 'command', guard: true, guardConfig: deadlineConfig, respond: byPrompt(plans) }, async ({ home, model, api }) => {
    const page = await openPage(api, { mode: 'silent' })
    try {
      const sessionId = await newSession(api, home)
      const listed = (await api.listCommands(sessionId)).map(c => c.name)
      assert.ok(listed.includes(GUARD_ID), `commands/list has /${GUARD_ID} (it has ${listed.join(', ')})`)
      await api.prompt(sessionId, QUERY)
      await model.waitFor(stepRequest(QUERY, 1), DEADLINE_MS + 7_000)
      await waitUntil(async () => (await eventsOf(api, sessionId, 'turn/end')).length === 1, { ms: 10_000, what: 'turn/end' })
      const before = model.requests.length
      // What the web client's composer does for a known `/name` line (dsh-client-ui-commands):
      // the `commands/execute` Remote, addressed to the session's agent.
      const executed = await api.command(sessionId, `/${GUARD_ID}`)
      assert.ok(executed, '/harness-guard is a known command in this session')
      assert.equal(executed.result.kind, 'success')
      const text = executed.result.text ?? ''
      t.diagnostic(`/${GUARD_ID} → ${executed.result.kind}:\n${text}`)
      assert.match(text, /harness-guard/)
      assert.match(text, /deadline\D{0,40}1\b/i, `the deadline is counted: ${text}`)
      assert.equal(model.requests.length, before, 'the command ran no model turn')
      const runs = await eventsOf(api, sessionId, 'command/done')
      assert.equal(runs.length, 1, 'the host logged command/run and command/done on the session')
    } finally {
      page.close()
    }
  })
})

test('(7) control: without the guard /harness-guard is an unknown command', async () => {
  await withWeb({ label: 'command-ctl', guard: false, respond: byPrompt(plans) }, async ({ home, api }) => {
    const sessionId = await newSession(api, home)
    const listed = (await api.listCommands(sessionId)).map(c => c.name)
    assert.ok(listed.includes('feedback'), 'the command registry answers (the host\'s /feedback is there)')
    assert.ok(!listed.includes(GUARD_ID))
    assert.equal(await api.command(sessionId, `/${GUARD_ID}`) ?? undefined, undefined)
  })
})

const AGAIN = 'E2E: read the theme tokens once more'
const disablePlans = { ...plans, [AGAIN]: [clientQuery] }

test('(5) disabling the row in the profile\'s cordis.patch.yml, live, brings the hang back', async (t) => {
  await withWeb({ label: 'disable', guard: true, guardConfig: deadlineConfig, logTap: true, respond: byPrompt(disablePlans) }, async ({ home, model, api }) => {
    const page = await openPage(api, { mode: 'silent' })
    try {
      const sessionId = await newSession(api, home)
      // Before: the guard is on, the query ends at the deadline.
      const before = await guardRow(api)
      assert.equal(before?.enabled, true)
      assert.equal(before?.fiberPhase, 'active')
      await api.prompt(sessionId, QUERY)
      const seen = await model.waitFor(stepRequest(QUERY, 1), DEADLINE_MS + 7_000)
      assert.equal(toolText(seen), deadlineMessage('Theme', 'tokens', DEADLINE_MS))
      await waitUntil(async () => (await eventsOf(api, sessionId, 'turn/end')).length === 1, { ms: 10_000, what: 'turn/end' })
      // The user's edit, while dsh web runs.
      home.appendPatch('web', `- id: ${GUARD_ID}\n  disabled: true\n`)
      const row = await waitUntil(async () => { const r = await guardRow(api); return r && !r.enabled && r }, { ms: 15_000, what: 'the reload to disable the guard row' })
      t.diagnostic(`plugin inventory after the edit: ${JSON.stringify(row)}`)
      // After: the next client query hangs again, as without the guard.
      page.queries.length = 0
      const afterSeq = await lastSeq(api, sessionId)
      await api.prompt(sessionId, AGAIN)
      await assertHangsUntilCancelled({ api, model, page, sessionId, prompt: AGAIN, afterSeq })
    } finally {
      page.close()
    }
  })
})

test('(5) control: the `- set: [...]` spelling leaves the guard on (the loader does not apply it)', async (t) => {
  await withWeb({ label: 'disable-ctl', guard: true, guardConfig: deadlineConfig, logTap: true, respond: byPrompt(disablePlans) }, async ({ home, model, api }) => {
    const page = await openPage(api, { mode: 'silent' })
    try {
      const sessionId = await newSession(api, home)
      home.appendPatch('web', `- set:\n    - id: ${GUARD_ID}\n      disabled: true\n`)
      const line = await waitUntil(() => home.logs().find(l => /id is required for non-insert patches/.test(l.text)), { ms: 15_000, what: 'the reload of the edited cordis.patch.yml' })
      t.diagnostic(`[${line.type}] ${line.name}: ${line.text}`)
      const row = await guardRow(api)
      assert.equal(row?.enabled, true)
      assert.equal(row?.fiberPhase, 'active')
      await api.prompt(sessionId, QUERY)
      const seen = await model.waitFor(stepRequest(QUERY, 1), DEADLINE_MS + 7_000)
      assert.equal(toolText(seen), deadlineMessage('Theme', 'tokens', DEADLINE_MS), 'the guard still answers at the deadline')
    } finally {
      page.close()
    }
  })
})
