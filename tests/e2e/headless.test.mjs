// `dsh --profile headless "<task>"` end to end: one real CLI run per arm, the
// guard installed by `dsh plugin --profile headless add <tarball>`, local
// plugin rows from fixtures/ in the profile, the fake model recording what it
// was sent.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { GUARD_ID } from './support/dsh.mjs'
import { byPrompt, callTool, promptOf, stepOf, textOf } from './support/fake-model.mjs'
import { startFakeModel } from './support/fake-model.mjs'
import { THEME } from './support/page.mjs'
import { prepareHome, runTask } from './support/scenario.mjs'

const BARE = 'a bare string from a plugin'
const TASK = 'E2E: say hello'
const CRASH = "Cannot read properties of undefined (reading 'kind')"
const poisonRow = `    - id: e2e-poison-inbox
      name: ./poison-inbox.mjs
      config:
        text: ${JSON.stringify(BARE)}
`

/** Every user-message text the fake model was sent, over all requests. */
const userTextsSent = (model) => model.requests.flatMap(r => r.body.messages.filter(m => m.role === 'user').map(m => textOf(m.content)))

async function poisonedRun({ guard, label, guardConfig, settings, logTap = false }) {
  const model = await startFakeModel(byPrompt())
  let home
  try {
    home = await prepareHome({ label, profile: 'headless', guard, guardConfig, logTap, localPlugins: ['poison-inbox.mjs'], insertRows: poisonRow })
    if (settings !== undefined) writeFileSync(join(home.home, 'settings.yaml'), settings)
    const run = await runTask(home, model, TASK)
    return { run, sent: userTextsSent(model), prompts: model.requests.filter(r => r.agentIndex >= 0).map(promptOf), logs: home.logs() }
  } finally {
    await model.close()
    home?.remove()
  }
}

test('(3) a poisoned inbox is repaired in headless: exit 0 and the model receives the string', async (t) => {
  const { run, sent, prompts } = await poisonedRun({ guard: true, label: 'inbox' })
  t.diagnostic(`exit ${run.code}; stdout ${JSON.stringify(run.stdout)}; stderr ${JSON.stringify(run.stderr)}`)
  assert.equal(run.timedOut, false)
  assert.equal(run.code, 0, run.stderr)
  assert.ok(!run.stderr.includes(CRASH), run.stderr)
  assert.deepEqual(prompts, [TASK, BARE], 'the task turn, then a turn for the repaired message')
  assert.ok(sent.includes(BARE), 'the fake endpoint received the string as a user message, verbatim')
  assert.equal(run.stdout, `ECHO: ${BARE}\n`, 'the last turn completed and answered the repaired message')
})

test('(3) control: without the guard the same run exits 1 with the host\'s TypeError', async (t) => {
  const { run, sent, prompts } = await poisonedRun({ guard: false, label: 'inbox-ctl' })
  t.diagnostic(`exit ${run.code}; stdout ${JSON.stringify(run.stdout)}; stderr ${JSON.stringify(run.stderr)}`)
  assert.equal(run.timedOut, false)
  assert.equal(run.code, 1)
  assert.ok(run.stderr.includes(CRASH), run.stderr)
  assert.deepEqual(prompts, [TASK], 'the poisoned turn died before calling the model')
  assert.ok(!sent.includes(BARE))
})

// (17) The user's section of $DSH_HOME/settings.yaml applies in headless too, and
// wins over the row: the row says repair, the section says report (touch nothing).
const ROW_REPAIR = 'inbox:\n  mode: repair'
const SECTION_REPORT = 'harness-guard:\n  inbox:\n    mode: report\n'

test('(17) the settings section wins over the row, headless too: mode report touches nothing, so the turn dies as without the guard', async (t) => {
  const { run, sent, prompts, logs } = await poisonedRun({ guard: true, label: 'section', guardConfig: ROW_REPAIR, settings: SECTION_REPORT, logTap: true })
  t.diagnostic(`exit ${run.code}; stderr ${JSON.stringify(run.stderr)}`)
  const lines = logs.filter(l => l.name === GUARD_ID && l.type === 'warn')
  assert.ok(lines.some(l => /observed/.test(l.text)), `the guard is mounted, in report mode: ${JSON.stringify(lines.map(l => l.text))}`)
  assert.equal(run.timedOut, false)
  assert.equal(run.code, 1)
  assert.ok(run.stderr.includes(CRASH), run.stderr)
  assert.deepEqual(prompts, [TASK])
  assert.ok(!sent.includes(BARE))
})

test('(17) control: the same row without a settings section repairs', async () => {
  const { run, sent } = await poisonedRun({ guard: true, label: 'section-ctl', guardConfig: ROW_REPAIR, settings: 'other-plugin:\n  x: 1\n' })
  assert.equal(run.code, 0, run.stderr)
  assert.ok(sent.includes(BARE))
})

// (8) The cordis tool rows mounted in headless (the host runner provides
// `cordisInspect`, tool-cordis the `cordis_*` tools): headless never syncs a
// client manifest, so the model's client query fails fast in the registry.
const QUERY = 'E2E: read the theme tokens'
const cordisRows = `    - id: cordis-host-runner
      name: '@deepseek-ai/dsh-cordis-host-runner'
    - id: tool-cordis
      name: '@deepseek-ai/dsh-tool-cordis'
`
const FALSE_WARNING = /did not emit cordis\/inspect-query/
const NOT_REGISTERED = 'Error: Client Cordis inspect provider "Theme" is not registered'

async function fastFailRun({ guard, label }) {
  const model = await startFakeModel(byPrompt({ [QUERY]: [callTool('cordis_inspect_query', { platform: 'client', ...THEME })] }))
  let home
  try {
    // The poisoned inbox is the tap's positive control: with the guard it
    // writes known warn lines, so a missing line is not a deaf tap.
    home = await prepareHome({ label, profile: 'headless', guard, logTap: true, localPlugins: ['poison-inbox.mjs'], insertRows: cordisRows + poisonRow })
    const run = await runTask(home, model, QUERY)
    const first = model.requests.find(r => promptOf(r) === QUERY && stepOf(r) === 0)
    const answered = model.requests.find(r => promptOf(r) === QUERY && stepOf(r) === 1)
    return {
      run,
      logs: home.logs(),
      tools: first?.body.tools.map(x => x.function.name) ?? [],
      toolResult: answered?.body.messages.filter(m => m.role === 'tool').at(-1)?.content,
    }
  } finally {
    await model.close()
    home?.remove()
  }
}

test('(8) no false warning: a client query refused before waiting logs nothing about announcements', async (t) => {
  const { run, logs, tools, toolResult } = await fastFailRun({ guard: true, label: 'nowarn' })
  const probe = logs.find(l => l.type === 'probe' && l.name === 'commands')
  assert.ok(probe, 'the tap listed the session\'s commands')
  const commands = probe.text.split(',')
  assert.ok(commands.includes(GUARD_ID), `the package registers /${GUARD_ID} in this session (commands: ${probe.text})`)
  const guardLines = logs.filter(l => l.name === GUARD_ID)
  for (const l of guardLines) t.diagnostic(`[${l.type}] ${l.name}: ${l.text}`)
  assert.equal(run.code, 0, run.stderr)
  assert.ok(tools.includes('cordis_inspect_query'), 'the cordis tools are mounted in this headless profile')
  assert.equal(toolResult, NOT_REGISTERED, 'the query failed fast, as without the guard')
  assert.ok(guardLines.some(l => l.type === 'warn' && /repaired/.test(l.text)), 'the tap hears the guard\'s warn lines')
  assert.deepEqual(guardLines.filter(l => FALSE_WARNING.test(l.text)), [], 'no warning about unannounced queries')
})

test('(8) control: without the guard the same query fails fast with the same tool result', async () => {
  const { run, logs, tools, toolResult } = await fastFailRun({ guard: false, label: 'nowarn-ctl' })
  assert.equal(run.code, 1, 'the poisoned second turn fails the run without the guard')
  assert.ok(tools.includes('cordis_inspect_query'))
  assert.equal(toolResult, NOT_REGISTERED)
  assert.ok(logs.some(l => l.type === 'tap'), 'the tap was mounted')
  assert.deepEqual(logs.filter(l => l.name === GUARD_ID), [])
})
