// `dsh web`'s own page in Chromium. One `dsh web` and one browser per arm: the
// guard installed by `dsh plugin --profile web add <tarball>`, and the control
// arm in the same profile without it. The workspace and the session (on the
// `cordis` preset) are made through the web app's API and the prompts sent
// through it; the page is what answers the model's client queries, what goes
// away, and where the human types `/harness-guard`.

import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { isDeepStrictEqual } from 'node:util'
import { launchBrowser, openTab, shoot } from './support/browser.mjs'
import { E2E_DIR, GUARD_ID, waitUntil } from './support/dsh.mjs'
import { byPrompt, callTool, held, stepRequest } from './support/fake-model.mjs'
import { PAGE_MANIFEST, THEME } from './support/page.mjs'
import { HANG_BOUND_MS, deadlineMessage, eventsOf, withWeb } from './support/scenario.mjs'
import { isInspectQuery } from './support/web-api.mjs'

const DEADLINE_MS = 3000
const READ = 'Which theme tokens does this page define?'
const AGAIN = 'List the theme tokens once more.'
const ASK = 'Why did that fail? Ask HarnessGuard.'
const clientQuery = callTool('cordis_inspect_query', { platform: 'client', ...THEME })
const guardReports = callTool('cordis_inspect_query', { platform: 'host', provider: 'HarnessGuard', method: 'reports' })
const DEADLINE = deadlineMessage(THEME.provider, THEME.method, DEADLINE_MS)

/** The newest tool result in a request. */
const toolText = (r) => r.body.messages.filter(m => m.role === 'tool').at(-1)?.content
/** The tool runtime's rendering of a client query's answer. */
const rendered = (data) => JSON.stringify({ platform: 'client', provider: THEME.provider, method: THEME.method, data }, null, 2)

/** What each arm saw, for the comparison between them. */
const seen = {}

/**
 * One arm: `dsh web` (with the guard and `deadlineMs: 3000`, or without it),
 * a workspace and a `cordis` session made through the API, Chromium with the
 * page open in a first tab, and a host-event listener (it syncs nothing and
 * answers nothing) that sees each client query go out.
 */
async function withRealPage({ guard, hold }, fn) {
  const respond = byPrompt({ [READ]: [clientQuery], [AGAIN]: [hold.reply], [ASK]: [guardReports] })
  return withWeb({ label: guard ? 'page' : 'page-ctl', guard, guardConfig: guard ? `inspect:\n  deadlineMs: ${DEADLINE_MS}` : undefined, respond }, async ({ home, model, web, api }) => {
    const { workspace } = await api.createWorkspace(home.work)
    const { sessionId } = await api.createSession({ agentPreset: 'cordis', workspaceId: workspace.workspaceId })
    const listener = await api.hostEvents()
    const browser = await launchBrowser()
    try {
      const first = await openTab(browser.context, web.url, { firstRun: true })
      return await fn({ home, model, web, api, sessionId, browser, first, queries: () => listener.events.filter(isInspectQuery).map(p => p.args[0]) })
    } finally {
      await browser.close()
      listener.close()
    }
  })
}

/** Open the session in a new tab: click it in the sidebar, and wait for its chat. */
async function reopen(s) {
  const tab = await openTab(s.browser.context, s.web.url)
  await tab.page.getByRole('treeitem', { name: /^E2E session/ }).click()
  await tab.page.getByText(READ, { exact: true }).waitFor()
  return tab
}

for (const guard of [true, false]) {
  const arm = guard ? 'with the guard' : 'without the guard (control)'
  test(`the real page, ${arm}`, { timeout: 240_000 }, async (t) => {
    const hold = held(clientQuery)
    await withRealPage({ guard, hold }, async (s) => {
      const { api, model, sessionId, first } = s

      await t.test('the page syncs its real manifest and answers the model\'s client query', async () => {
        const [published, reconnected] = first.syncs()
        assert.deepEqual(published, reconnected, 'the page syncs the same providers twice (publish, then reconnect)')
        assertFixtureMatches(published)
        await api.prompt(sessionId, READ)
        const answered = await model.waitFor(stepRequest(READ, 1), 20_000)
        // The tab's requests reach this process as browser events, which can come
        // after the model's next request: wait for the answer to be recorded.
        const [answer] = await waitUntil(() => first.answers().length > 0 && first.answers(), { ms: 10_000, every: 20, what: "the page's answer to be recorded" })
        assert.equal(answer?.resolution?.ok, true, 'the page answered the query itself')
        assert.equal(toolText(answered), rendered(answer.resolution.data), 'the model got what the page answered')
        seen[guard] = toolText(answered)
        if (seen[!guard] !== undefined) assert.equal(seen[guard], seen[!guard], 'the same tool result with and without the guard')
      })

      await t.test(guard ? 'the tab closes while the client query waits: the deadline message, then the turn completes' : 'control: the tab closes while the client query waits: no tool result until session.cancel', async (st) => {
        await api.prompt(sessionId, AGAIN)
        await model.waitFor(stepRequest(AGAIN, 0), 20_000) // the model holds its tool call
        await first.close()
        hold.release()
        const released = Date.now()
        await waitUntil(() => s.queries().some(q => q.method === THEME.method && q.requestId !== first.answers()[0]?.requestId), { ms: 20_000, what: 'the client query to go out' })
        if (guard) {
          const result = await model.waitFor(stepRequest(AGAIN, 1), DEADLINE_MS + 15_000)
          const elapsed = result.at - released
          st.diagnostic(`the model's tool result, ${elapsed} ms after the tab closed: ${toolText(result)}`)
          assert.equal(toolText(result), DEADLINE)
          // The query went out after the release, so its deadline cannot have passed sooner (one clock: this process's).
          assert.ok(elapsed >= DEADLINE_MS, `the tool result came ${elapsed} ms after the tab closed, before the ${DEADLINE_MS} ms deadline`)
          await waitUntil(async () => (await eventsOf(api, sessionId, 'turn/end')).length === 2, { ms: 20_000, what: 'the second turn/end' })
          assert.equal((await eventsOf(api, sessionId, 'turn/end')).at(-1).data.reason.kind, 'completed')
        } else {
          const waited = await model.waitFor(stepRequest(AGAIN, 1), HANG_BOUND_MS).then(() => 'answered', () => 'no answer')
          assert.equal(waited, 'no answer', `a tool result reached the model within ${HANG_BOUND_MS} ms`)
          assert.equal((await eventsOf(api, sessionId, 'tool/result')).length, 1, 'only the first query has a tool result')
          assert.equal((await eventsOf(api, sessionId, 'turn/end')).length, 1, 'the second turn is still running')
          await api.cancel(sessionId)
          await waitUntil(async () => (await eventsOf(api, sessionId, 'turn/end')).length === 2, { ms: 20_000, what: 'turn/end after session.cancel' })
        }
      })

      await t.test(guard ? 'with no page open, the model asks HarnessGuard and reads the report' : 'control: there is no HarnessGuard provider to ask', async (st) => {
        await api.prompt(sessionId, ASK)
        const result = await model.waitFor(stepRequest(ASK, 1), 20_000)
        const text = toolText(result)
        if (guard) {
          const { provider, data } = JSON.parse(text)
          assert.equal(provider, 'HarnessGuard')
          const lost = s.queries().at(-1)
          assert.deepEqual(data.reports.map(({ at, ...r }) => r), [{ kind: 'deadline', requestId: lost.requestId, sessionId, providerId: THEME.provider, methodName: THEME.method, deadlineMs: DEADLINE_MS }])
        } else {
          st.diagnostic(`the model's tool result: ${text}`)
          assert.match(text, /^Error: /)
          assert.match(text, /HarnessGuard/)
          assert.doesNotMatch(text, /"kind"/)
        }
        await waitUntil(async () => (await eventsOf(api, sessionId, 'turn/end')).length === 3, { ms: 20_000, what: 'the third turn/end' })
      })

      await t.test(guard ? 'the page shows the deadline message in the chat, and /harness-guard typed in its composer shows the session\'s report' : 'control: no deadline message in the chat, and /harness-guard is not in the Commands popup', async (st) => {
        const tab = await reopen(s)
        const { page } = tab
        try {
          const line = page.getByRole('button', { name: `Tool call ${DEADLINE}` })
          if (guard) {
            await line.waitFor()
            const quoted = page.getByText(`The tool answered: ${DEADLINE}`, { exact: true })
            assert.equal(await line.getByText(DEADLINE, { exact: true }).evaluate(errorColored), true, 'the tool call line is in the page\'s error colour')
            assert.equal(await quoted.evaluate(errorColored), false, 'the model\'s reply is not')
            await shoot(page, [page.getByText(AGAIN, { exact: true }), line, quoted], picture(s, 'deadline-in-chat.png'), { between: chatArea(page) })
          } else {
            // The page shows the later turns and their failed tool calls (the next turn's
            // query for HarnessGuard), but no deadline message: the query was cancelled.
            await page.getByRole('button', { name: /^Tool call Error: Host Cordis inspect provider "HarnessGuard" is not registered/ }).waitFor()
            assert.equal(await page.getByText(AGAIN, { exact: true }).count(), 1)
            assert.equal(await page.getByText('got no answer from any page').count(), 0)
          }
          const composer = page.getByRole('textbox', { name: 'Message the agent' })
          await composer.click()
          await composer.pressSequentially('/')
          const popup = page.getByRole('listbox', { name: 'Trigger suggestions' })
          await popup.waitFor()
          const commands = (await popup.getByRole('option').allInnerTexts()).map(o => o.split(/\s/)[0])
          st.diagnostic(`the Commands popup: ${commands.join(', ')}`)
          assert.ok(commands.includes('feedback'), 'the popup lists the host\'s own commands')
          if (!guard) {
            assert.ok(!commands.includes(GUARD_ID), `the popup has no ${GUARD_ID}`)
            return
          }
          assert.ok(commands.includes(GUARD_ID), `the popup lists ${GUARD_ID}`)
          const requests = model.requests.length
          await composer.pressSequentially(GUARD_ID)
          await composer.press('Enter')
          const block = page.getByRole('button', { name: new RegExp(`^${GUARD_ID} `) })
          await block.click()
          await waitUntil(async () => (await block.getAttribute('aria-expanded')) === 'true', { ms: 15_000, what: 'the block to expand' })
          const text = await block.locator('..').innerText()
          st.diagnostic(text)
          assert.match(text, /deadline 3000 ms/)
          assert.match(text, /rejected at the deadline 1\b/)
          assert.match(text, new RegExp(`deadline ${THEME.provider}\\.${THEME.method} \\(request ${s.queries().at(-1).requestId}\\)`))
          await shoot(page, [block.locator('..')], picture(s, 'harness-guard-command.png'), { between: chatArea(page) })
          assert.equal(model.requests.length, requests, 'the command ran no model turn')
          assert.equal((await eventsOf(api, sessionId, 'command/done')).length, 1, 'the host logged the command on the session')
        } finally {
          await tab.close()
        }
      })
    })
  })
}

/** What bounds the visible chat: the session's title bar above, the composer's card below. */
const chatArea = (page) => [page.getByRole('banner'), page.locator('[data-composer-card]')]

/** In the page: is this element's text in the colour of the theme's error token? */
function errorColored(element) {
  const probe = document.createElement('span')
  probe.style.color = 'var(--dsw-alias-state-error-primary)'
  element.parentElement.append(probe)
  const expected = getComputedStyle(probe).color
  probe.remove()
  return getComputedStyle(element).color === expected
}

/** A picture's path: in `$HARNESS_GUARD_SCREENSHOTS` (`make screenshots`), else in the arm's temp dir. */
const picture = (s, name) => join(process.env.HARNESS_GUARD_SCREENSHOTS || s.home.root, name)

/**
 * The stand-in's manifest (fixtures/page-manifest.json) is the one the page
 * synced, captured from the packages installed here. On a difference, what the
 * page synced is written to a temp file, ready to replace the fixture.
 */
function assertFixtureMatches(providers) {
  const installed = Object.fromEntries(Object.keys(PAGE_MANIFEST.capturedFrom).map(name =>
    [name, JSON.parse(readFileSync(join(E2E_DIR, 'node_modules', name, 'package.json'), 'utf8')).version]))
  const current = { ...PAGE_MANIFEST, capturedFrom: installed, providers }
  if (isDeepStrictEqual(current, PAGE_MANIFEST)) return
  const file = join(mkdtempSync(join(tmpdir(), 'hg-page-manifest-')), 'page-manifest.json')
  writeFileSync(file, JSON.stringify(current, null, 2) + '\n')
  assert.deepEqual(current, PAGE_MANIFEST, `fixtures/page-manifest.json is not what the page synced here; the page's manifest is in ${file}`)
}
