// `dsh web` end to end with the page stand-in (support/page.mjs) over the web
// app's real `/api`, where the real page (browser.test.mjs) cannot serve: a
// page that refuses, and a page that went away while `dsh web` reloads its
// profile. A client inspect query from a session on the `cordis` agent preset;
// each behaviour runs twice: with the guard installed by `dsh plugin --profile
// web add <tarball>`, and (the control arm) in the same profile without it,
// where the bug shows.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { GUARD_ID, waitUntil } from './support/dsh.mjs'
import { byPrompt, callTool, promptOf, stepOf } from './support/fake-model.mjs'
import { THEME, openPage } from './support/page.mjs'
import { HANG_BOUND_MS, deadlineMessage, eventsOf, withWeb } from './support/scenario.mjs'

const DEADLINE_MS = 3000
/** The contract's default `inspect.deadlineMs`. */
const DEFAULT_DEADLINE_MS = 15_000
const QUERY = 'E2E: read the theme tokens of the page'
const clientQuery = callTool('cordis_inspect_query', { platform: 'client', ...THEME })
const plans = { [QUERY]: [clientQuery] }
const DEADLINE = deadlineMessage(THEME.provider, THEME.method, DEADLINE_MS)
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
  await waitUntil(() => page.queries.length > 0, { ms: 20_000, what: 'the page to see the client query' })
  const waited = await model.waitFor(stepRequest(prompt, step), HANG_BOUND_MS).then(() => 'answered', () => 'no answer')
  assert.equal(waited, 'no answer', `a tool result reached the model within ${HANG_BOUND_MS} ms`)
  assert.equal((await since('tool/result')).length, step - 1, 'the client query has no tool result')
  assert.equal((await since('turn/end')).length, 0, 'the turn is still running')
  await api.cancel(sessionId)
  await waitUntil(async () => (await since('turn/end')).length > 0, { ms: 20_000, what: 'turn/end after session.cancel' })
}

/** The newest event seq of a session (to look at what comes after it). */
const lastSeq = async (api, sessionId) => Math.max(-1, ...(await eventsOf(api, sessionId)).map(e => e.seq))

const REFUSAL = { reason: 'provider-error', message: 'E2E page: the Theme provider threw: tokens are not loaded yet' }

test('(2) a page refusal reaches the model with the page\'s reason and message (default config)', async (t) => {
  await withWeb({ label: 'refusal', guard: true, respond: byPrompt(plans) }, async ({ home, model, api }) => {
    const page = await openPage(api, { mode: 'refuse', refusal: REFUSAL })
    try {
      const sessionId = await newSession(api, home)
      const t0 = Date.now()
      await api.prompt(sessionId, QUERY)
      // Before the default 15 s deadline could have ended the query (it started after the prompt).
      const seen = await model.waitFor(stepRequest(QUERY, 1), DEFAULT_DEADLINE_MS - 1_000)
      const text = toolText(seen)
      t.diagnostic(`the model's tool result, ${seen.at - t0} ms after the prompt: ${text}`)
      assert.deepEqual(page.acks, [{ accepted: false }], 'the registry turned the refusal away, as it does without the guard')
      assert.match(text, /^Error: /)
      assert.ok(text.includes(REFUSAL.reason), `the model sees the reason: ${text}`)
      assert.ok(text.includes(REFUSAL.message), `the model sees the page's message verbatim: ${text}`)
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

/** The guard's row in the web app's plugin inventory (`pluginInventory/list`). */
async function guardRow(api) {
  const { entries } = await api.remote('pluginInventory/list', {})
  return entries.find(e => e.moduleName === 'cordis-plugin-harness-guard')
}

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
      const seen = await model.waitFor(stepRequest(QUERY, 1), DEADLINE_MS + 15_000)
      assert.equal(toolText(seen), DEADLINE)
      await waitUntil(async () => (await eventsOf(api, sessionId, 'turn/end')).length === 1, { ms: 20_000, what: 'turn/end' })
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
      const seen = await model.waitFor(stepRequest(QUERY, 1), DEADLINE_MS + 15_000)
      assert.equal(toolText(seen), DEADLINE, 'the guard still answers at the deadline')
    } finally {
      page.close()
    }
  })
})
