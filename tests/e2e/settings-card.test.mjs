// The guard's card in `dsh web`'s own Settings, in Chromium: Settings →
// Plugins → Plugin configuration, as a user finds it. One `dsh web` and one
// browser per arm: the guard installed by `dsh plugin --profile web add
// <tarball>` with a row config of its own (`deadlineMs: 4000`, so the row's
// value differs from the default), and the control arm in the same profile
// without it. The cases run in order on one session; each edit is made in the
// card and checked where it lands: `$DSH_HOME/settings.yaml`, `/harness-guard`
// (run as the web client runs it), and the next client query of a page that
// went away. The controls of the edits are the same steps without Save.

import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { parse } from 'yaml'
import { launchBrowser, openTab, shoot } from './support/browser.mjs'
import { GUARD_ID, waitUntil } from './support/dsh.mjs'
import { byPrompt, callTool, lastToolResult, stepRequest } from './support/fake-model.mjs'
import { THEME } from './support/page.mjs'
import { HANG_BOUND_MS, deadlineInForce, deadlineMessage, eventsOf, guardStatus, withWeb } from './support/scenario.mjs'
import { isInspectQuery } from './support/web-api.mjs'

const NAME = 'cordis-plugin-harness-guard'
/** The row's config in the profile's cordis.patch.yml, and what the card saves over it. */
const ROW_MS = 4000
const SAVED_MS = 3000
const DEFAULT_MS = 15_000

const SAVED = 'Read the theme tokens (deadline saved in the card).'
const RESET = 'Read the theme tokens again (deadline reset to the row\'s).'
const OFF = 'Read the theme tokens once more (inspect half switched off in the card).'
const clientQuery = callTool('cordis_inspect_query', { platform: 'client', ...THEME })
/** The host's own cards under Plugin configuration in this CLI. */
const HOST_CARDS = ['Shell', 'Agent loop', 'Web search']

/** The guard's section of `$DSH_HOME/settings.yaml`, parsed as the host's settings store writes it (`undefined`: none). */
function savedSection(home) {
  const file = join(home.home, 'settings.yaml')
  return existsSync(file) ? parse(readFileSync(file, 'utf8'))?.[GUARD_ID] : undefined
}

/**
 * One arm: `dsh web` (with the guard and its row config, or without it), a
 * workspace and a `cordis` session made through the API, a host-event listener
 * that notes when each client query goes out, and Chromium with the page open.
 */
async function withCardPage(guard, fn) {
  const respond = byPrompt({ [SAVED]: [clientQuery], [RESET]: [clientQuery], [OFF]: [clientQuery] })
  return withWeb({ label: guard ? 'card' : 'card-ctl', guard, guardConfig: guard ? `inspect:\n  deadlineMs: ${ROW_MS}` : undefined, respond }, async ({ home, model, web, api }) => {
    const { workspace } = await api.createWorkspace(home.work)
    const { sessionId } = await api.createSession({ agentPreset: 'cordis', workspaceId: workspace.workspaceId })
    const listener = await api.hostEvents()
    const queries = []
    listener.on((payload) => { if (isInspectQuery(payload)) queries.push({ ...payload.args[0], seenAt: Date.now() }) })
    const browser = await launchBrowser()
    try {
      const first = await openTab(browser.context, web.url, { firstRun: true })
      return await fn({ home, model, web, api, sessionId, browser, first, queries })
    } finally {
      await browser.close()
      listener.close()
    }
  })
}

/** Settings → Plugins → Plugin configuration, as a user clicks there; waits for the host's own cards. */
async function pluginConfiguration(page) {
  await page.getByRole('button', { name: 'Settings', exact: true }).click()
  const dialog = page.getByRole('dialog', { name: 'Settings' })
  await dialog.getByRole('button', { name: 'Plugins', exact: true }).click()
  await dialog.getByRole('tab', { name: 'Plugin configuration' }).click()
  const panel = dialog.getByRole('tabpanel', { name: 'Plugin configuration' })
  for (const name of HOST_CARDS) await panel.getByRole('button', { name: `Show settings: ${name}` }).waitFor()
  return { dialog, panel }
}

/** The guard's card, opened from the page's Settings and expanded; its controls by the labels a user reads. */
async function openCard(page) {
  const { dialog, panel } = await pluginConfiguration(page)
  await panel.getByRole('button', { name: 'Show settings: Harness guard' }).click()
  const card = panel.getByRole('listitem', { name: 'Harness guard' })
  const field = (path) => card.locator(`[data-field="${path}"]`)
  return {
    dialog,
    panel,
    card,
    field,
    deadline: card.getByRole('textbox', { name: 'Deadline (ms)' }),
    inspect: card.getByRole('checkbox', { name: 'Guard client inspect queries' }),
    inbox: card.getByRole('checkbox', { name: 'Guard agent inboxes' }),
    save: card.getByRole('button', { name: 'Save', exact: true }),
    discard: card.getByRole('button', { name: 'Discard', exact: true }),
    reset: (path) => card.getByRole('button', { name: `Reset ${path} to the row's value` }),
    overridden: (path) => field(path).getByText('Overridden', { exact: true }),
    facts: (path) => field(path).locator('.harness-guard-facts').innerText(),
  }
}

/** Click Save and wait until the card has no drafts left; a save the host turned away fails here with the card's words. */
async function save(card) {
  await card.save.click()
  const alert = card.card.getByRole('alert')
  await waitUntil(async () => (await card.save.isDisabled() && await card.discard.isDisabled()) || (await alert.count()) > 0, { ms: 15_000, what: 'the save to land' })
  assert.equal(await alert.count(), 0, `the card says the save did not land: ${await alert.allInnerTexts()}`)
}

/** Open the session in a new tab (click it in the sidebar) and wait for its chat. */
async function openSession(s) {
  const tab = await openTab(s.browser.context, s.web.url)
  await tab.page.getByRole('treeitem', { name: /^E2E session/ }).click()
  await tab.page.getByText(SAVED, { exact: true }).waitFor()
  return tab
}

/**
 * With no page open (the last tab just closed, at `gone`), send `prompt`; the
 * model's client query must end at the guard's deadline `ms`: not before `ms`
 * after the page went away, long before the 15 s default counted from when the
 * query went out, with the contract's message as the tool result.
 */
async function endsAtDeadline(s, st, prompt, ms, gone) {
  await s.api.prompt(s.sessionId, prompt)
  const result = await s.model.waitFor(stepRequest(prompt, 1), DEFAULT_MS + 20_000)
  const query = s.queries.at(-1)
  st.diagnostic(`the tool result, ${result.at - gone} ms after the page went away, ${result.at - query.seenAt} ms after the query went out: ${lastToolResult(result)?.text}`)
  assert.equal(lastToolResult(result)?.text, deadlineMessage(THEME.provider, THEME.method, ms))
  assert.ok(result.at - gone >= ms, `the query ended ${result.at - gone} ms after the page went away, before its ${ms} ms deadline`)
  assert.ok(result.at - query.seenAt < DEFAULT_MS, `the query ended ${result.at - query.seenAt} ms after it went out, not before the ${DEFAULT_MS} ms default`)
}

/** A picture's path: in `$HARNESS_GUARD_SCREENSHOTS` (`make screenshots`), else in the arm's temp dir. */
const picture = (s, name) => join(process.env.HARNESS_GUARD_SCREENSHOTS || s.home.root, name)

test('(11) the card in the real page, without the guard (control): no Harness guard card, the host\'s own cards are there', { timeout: 180_000 }, async () => {
  await withCardPage(false, async ({ first }) => {
    const { panel } = await pluginConfiguration(first.page)
    const roster = await first.page.evaluate(() => window.__DSH_BOOT__.entries.map((entry) => entry.id))
    assert.ok(roster.includes('@deepseek-ai/dsh-client-ui-settings-plugins'), 'the page loaded the host\'s settings cards')
    assert.ok(!roster.includes(NAME), `the page's roster has no ${NAME}`)
    const cards = await panel.getByRole('button', { name: /^Show settings: / }).allInnerTexts()
    assert.equal(cards.length, HOST_CARDS.length, `the cards listed: ${cards.join(' | ')}`)
    assert.equal(await panel.getByText('Harness guard').count(), 0)
  })
})

test('the card in the real page, with the guard', { timeout: 240_000 }, async (t) => {
  await withCardPage(true, async (s) => {
    const { api, home, model, sessionId, first } = s
    let tab = first
    let card

    await t.test('(11) it is under Settings → Plugins → Plugin configuration beside the host\'s cards, with the row\'s value', async () => {
      const roster = await tab.page.evaluate(() => window.__DSH_BOOT__.entries.map((entry) => entry.id))
      assert.ok(roster.includes(NAME), `the page's roster has ${NAME}`)
      card = await openCard(tab.page)
      const cards = await card.panel.getByRole('listitem').getByRole('button', { name: /^(Show|Hide) settings: / }).evaluateAll((buttons) => buttons.map((b) => b.getAttribute('aria-label')))
      assert.deepEqual(cards.sort(), [...HOST_CARDS.map((name) => `Show settings: ${name}`), 'Hide settings: Harness guard'].sort(), 'the host\'s cards and the guard\'s, expanded (in the order the page registered them)')
      assert.equal(await card.deadline.inputValue(), String(ROW_MS))
      assert.equal(await card.facts('inspect.deadlineMs'), `Default: ${DEFAULT_MS} · Range: 1 ..= 2147483647 · Row value: ${ROW_MS}`)
      assert.equal(await card.overridden('inspect.deadlineMs').count(), 0, 'the row\'s value is not an override')
      assert.equal(await card.save.isDisabled(), true, 'nothing to save yet')
    })

    await t.test('(12) an invalid deadline (0) cannot be saved, and the card names the range (control: a value in range can)', async () => {
      await card.deadline.fill('0')
      const alert = card.field('inspect.deadlineMs').getByRole('alert')
      assert.equal(await alert.innerText(), 'inspect.deadlineMs is "0", expected an integer in 1..=2147483647')
      assert.equal(await card.deadline.getAttribute('aria-invalid'), 'true')
      assert.equal(await card.save.isDisabled(), true, 'Save is blocked')
      await card.deadline.fill(String(SAVED_MS))
      assert.equal(await alert.count(), 0)
      assert.equal(await card.save.isEnabled(), true, 'control: Save takes a value in range')
      await card.deadline.fill('0')
      await card.deadline.press('Enter') // submits nothing either
      await card.discard.click()
      assert.equal(await card.deadline.inputValue(), String(ROW_MS), 'Discard: the row\'s value again')
      assert.equal(savedSection(home), undefined, 'settings.yaml has no harness-guard section')
      assert.equal(await deadlineInForce(api, sessionId), String(ROW_MS), 'the running guard kept the row\'s deadline')
    })

    await t.test(`(13) Save ${SAVED_MS} ms: settings.yaml has it, and the next client query of a page that went away ends at ${SAVED_MS} ms with the message in the chat`, async (st) => {
      await card.deadline.fill(String(SAVED_MS))
      assert.equal(await deadlineInForce(api, sessionId), String(ROW_MS), 'control: a draft changes nothing until it is saved')
      assert.equal(savedSection(home), undefined)
      await save(card)
      await waitUntil(() => savedSection(home) !== undefined, { ms: 10_000, what: 'settings.yaml to hold the harness-guard section' })
      assert.deepEqual(savedSection(home), { inspect: { deadlineMs: SAVED_MS } })
      await waitUntil(async () => (await deadlineInForce(api, sessionId)) === String(SAVED_MS), { ms: 10_000, what: 'the saved deadline in force' })
      assert.equal(await card.overridden('inspect.deadlineMs').count(), 1, 'the saved value is marked as an override')
      await tab.close()
      await endsAtDeadline(s, st, SAVED, SAVED_MS, Date.now())
      tab = await openSession(s)
      await tab.page.getByRole('button', { name: `Tool call ${deadlineMessage(THEME.provider, THEME.method, SAVED_MS)}` }).waitFor()
    })

    await t.test(`(14) reset returns the deadline to the row's value (${ROW_MS} ms, not the ${DEFAULT_MS} ms default)`, async () => {
      card = await openCard(tab.page)
      assert.equal(await card.deadline.inputValue(), String(SAVED_MS))
      await card.overridden('inspect.deadlineMs').waitFor()
      // The card's head and its first section, the overridden deadline in it (the whole card is taller than the dialog).
      const head = card.card.getByRole('button', { name: 'Hide settings: Harness guard' })
      await shoot(tab.page, [head, card.card.getByRole('group', { name: 'Client inspect queries' })], picture(s, 'settings-card.png'), { within: card.dialog, pad: 8 })
      await card.reset('inspect.deadlineMs').click()
      assert.equal(await card.deadline.inputValue(), String(ROW_MS))
      assert.equal(await card.overridden('inspect.deadlineMs').count(), 0)
      assert.equal(await deadlineInForce(api, sessionId), String(SAVED_MS), 'control: a reset not saved changes nothing')
      await save(card)
      await waitUntil(() => savedSection(home)?.inspect?.deadlineMs === undefined, { ms: 10_000, what: 'the deadline gone from settings.yaml' })
      await waitUntil(async () => (await deadlineInForce(api, sessionId)) === String(ROW_MS), { ms: 10_000, what: 'the row\'s deadline in force again' })
      assert.equal(await card.deadline.inputValue(), String(ROW_MS))
    })

    await t.test('(15) inbox.enabled off in the card uninstalls the inbox half live (control: unchecked, not saved)', async () => {
      const guarded = /^inbox entries: guarded, mode repair$/m
      const off = /^inbox entries: not guarded \(the inbox half is off\), mode repair$/m
      await card.inbox.uncheck()
      assert.match(await guardStatus(api, sessionId), guarded, 'control: not saved, the inbox half stays')
      await save(card)
      await waitUntil(() => savedSection(home)?.inbox?.enabled === false, { ms: 10_000, what: 'settings.yaml to hold inbox.enabled: false' })
      await waitUntil(async () => off.test(await guardStatus(api, sessionId)), { ms: 10_000, what: '/harness-guard to say the inbox half is off' })
      // And back, through the reset: the row's value (on).
      await card.reset('inbox.enabled').click()
      assert.equal(await card.inbox.isChecked(), true)
      await save(card)
      await waitUntil(async () => guarded.test(await guardStatus(api, sessionId)), { ms: 10_000, what: '/harness-guard to say the inbox is guarded again' })
    })

    await t.test('(16) inspect.enabled off in the card uninstalls the inspect half live: the next query hangs until cancelled (control: unchecked, not saved, it ends at the row\'s deadline)', async (st) => {
      await card.inspect.uncheck()
      assert.equal(await card.save.isEnabled(), true)
      await tab.close() // the draft goes with the page
      await endsAtDeadline(s, st, RESET, ROW_MS, Date.now())

      tab = await openTab(s.browser.context, s.web.url)
      card = await openCard(tab.page)
      assert.equal(await card.inspect.isChecked(), true, 'the unsaved draft was not kept')
      await card.inspect.uncheck()
      await save(card)
      await waitUntil(() => savedSection(home)?.inspect?.enabled === false, { ms: 10_000, what: 'settings.yaml to hold inspect.enabled: false' })
      await waitUntil(async () => /^client inspect queries: not guarded here/m.test(await guardStatus(api, sessionId)), { ms: 10_000, what: '/harness-guard to say the inspect half is off' })
      await tab.close()
      const before = s.queries.length
      await api.prompt(sessionId, OFF)
      await waitUntil(() => s.queries.length > before, { ms: 20_000, what: 'the client query to go out' })
      const waited = await model.waitFor(stepRequest(OFF, 1), HANG_BOUND_MS).then(() => 'answered', () => 'no answer')
      assert.equal(waited, 'no answer', `a tool result reached the model within ${HANG_BOUND_MS} ms`)
      assert.equal((await eventsOf(api, sessionId, 'turn/end')).length, 2, 'the third turn is still running')
      await api.cancel(sessionId)
      await waitUntil(async () => (await eventsOf(api, sessionId, 'turn/end')).length === 3, { ms: 20_000, what: 'turn/end after session.cancel' })
    })
  })
})
