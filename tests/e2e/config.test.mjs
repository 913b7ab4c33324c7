// Installing and configuring the guard in real `dsh` profiles:
// `dsh plugin --profile <p> add <tarball>` picks up the package's bundle row,
// and a profile's cordis.patch.yml configures it. An invalid config must be
// refused with the field named where the user sees it: at boot that is the
// CLI's stderr (the run exits 1); a live edit of a running `dsh web` is
// refused by the loader, which keeps the last good guard running and logs the
// reason to the cordis logger (which the CLI never prints), and the guard says
// it once on stderr as a process warning. A valid live edit applies in place.
// In `dsh web` the guard also has a settings namespace, edited through the
// web app's own settings wire, and a browser half in the page's roster.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { GUARD_ID, HMR_OVERLAY, guardConfigPatch, runDsh, sleep, waitUntil } from './support/dsh.mjs'
import { byPrompt, callTool, promptOf, startFakeModel, stepOf } from './support/fake-model.mjs'
import { openPage, THEME } from './support/page.mjs'
import { deadlineInForce, deadlineMessage, prepareHome, runTask, withWeb } from './support/scenario.mjs'

const NAME = 'cordis-plugin-harness-guard'

for (const profile of ['web', 'headless']) {
  for (const guard of [true, false]) {
    test(`install: ${guard ? '`dsh plugin --profile ' + profile + ' add <tarball>` mounts the bundle row' : 'control: a fresh ' + profile + ' profile has no guard row'}`, async () => {
      const home = await prepareHome({ label: `install-${profile}`, profile, guard })
      try {
        const manifest = home.manifest(profile)
        const dump = await runDsh(['--profile', profile, '--dump-config'], { home: home.home, cwd: home.work })
        assert.equal(dump.code, 0, dump.stderr)
        if (guard) {
          assert.match(manifest.dependencies?.[NAME] ?? '', /\.tgz$/, 'pnpm recorded the tarball in the profile\'s package.json')
          assert.ok(manifest.dsh.profile.bundles.includes(NAME), 'dsh added the package to the profile\'s bundles')
          assert.match(dump.stdout, new RegExp(`# == ${NAME}\\n- id: ${GUARD_ID}\\n  name: ${NAME}\\n`), 'the composed tree has the row, with no config')
        } else {
          assert.ok(!(manifest.dsh.profile.bundles ?? []).includes(NAME))
          assert.doesNotMatch(dump.stdout, new RegExp(`id: ${GUARD_ID}\\b`))
        }
      } finally {
        home.remove()
      }
    })
  }
}

const INVALID = 'inspect:\n  deadlineMs: 0'
/** What the guard's refusal names: the field, the value and the allowed range. */
const NAMES_THE_FIELD = /inspect\.deadlineMs is 0, expected an integer in 1\.\.=2147483647/
const webArgs = ['--profile', 'web', '--patch', HMR_OVERLAY, '--no-open', '--host', '127.0.0.1', '--port', '0']

test('(6) an invalid config stops `dsh web` at boot with the field named on stderr', async (t) => {
  const home = await prepareHome({ label: 'invalid-web', profile: 'web', guard: true, guardConfig: INVALID })
  try {
    const run = await runDsh(webArgs, { home: home.home, cwd: home.work, timeoutMs: 30_000 })
    t.diagnostic(`exit ${run.code} after ${run.ms} ms; stdout ${JSON.stringify(run.stdout)}`)
    t.diagnostic(run.stderr.split('\n').filter(l => /^Error|invalid/.test(l.trim())).slice(0, 3).join('\n'))
    // The web server's own subtree may come up and print its URL first; the
    // boot still fails as a whole and the process exits.
    assert.equal(run.timedOut, false, 'dsh web exited by itself')
    assert.equal(run.code, 1)
    assert.match(run.stderr, /plugin tree failed to load/)
    assert.match(run.stderr, NAMES_THE_FIELD)
  } finally {
    home.remove()
  }
})

test('(6) control: the same patch without the guard boots `dsh web` (the host itself refuses nothing)', async () => {
  const home = await prepareHome({ label: 'invalid-web-ctl', profile: 'web', guard: false, extraPatch: guardConfigPatch(INVALID) })
  try {
    const run = await runDsh(webArgs, { home: home.home, cwd: home.work, timeoutMs: 6_000 })
    assert.equal(run.timedOut, true, `dsh web kept serving until the suite ended it (exit ${run.code}):\n${run.stderr}`)
    assert.match(run.stdout, /dsh web: http:\/\/127\.0\.0\.1:\d+/)
    assert.doesNotMatch(run.stderr, /deadlineMs/)
  } finally {
    home.remove()
  }
})

for (const guard of [true, false]) {
  test(`(6) ${guard ? 'an invalid config fails `dsh --profile headless` with exit 1 and the field on stderr' : 'control: headless runs the task with the same patch and no guard'}`, async () => {
    const model = await startFakeModel(byPrompt())
    const home = await prepareHome({ label: 'invalid-headless', profile: 'headless', guard, ...(guard ? { guardConfig: INVALID } : { extraPatch: guardConfigPatch(INVALID) }) })
    try {
      const run = await runTask(home, model, 'E2E: say hello')
      if (guard) {
        assert.equal(run.code, 1)
        assert.match(run.stderr, NAMES_THE_FIELD)
        assert.equal(model.requests.length, 0, 'no model call: the tree never loaded')
      } else {
        assert.equal(run.code, 0, run.stderr)
        assert.equal(run.stdout, 'ECHO: E2E: say hello\n')
        assert.doesNotMatch(run.stderr, /deadlineMs/)
      }
    } finally {
      await model.close()
      home.remove()
    }
  })
}

const QUERY = 'E2E: read the theme tokens of the page'

/** The process warning a refused live change writes on stderr (Node prints it as `(node:<pid>) [HARNESS_GUARD] Warning: …`). */
const REFUSED_ON_STDERR = /\[HARNESS_GUARD\] Warning: harness-guard: config refused, the running config stays: invalid harness-guard config: inspect\.deadlineMs is 0, expected an integer in 1\.\.=2147483647/g
const refusalsOn = (stderr) => stderr.match(REFUSED_ON_STDERR)?.length ?? 0

/**
 * Write the profile's user layer and wait for `done()`; on a busy machine a
 * running `dsh` may not have armed its file watcher yet, so the same text is
 * written again every few seconds (the loader applies an unchanged layer as no
 * change) until `done()` holds or `ms` pass.
 */
async function editUntil(home, yaml, done, { ms = 30_000, what }) {
  home.writePatch('web', yaml)
  let written = Date.now()
  return waitUntil(async () => {
    const value = await done()
    if (!value && Date.now() - written > 5_000) {
      home.writePatch('web', yaml)
      written = Date.now()
    }
    return value
  }, { ms, what })
}

test('(6) a live invalid edit in a running `dsh web` is refused, said once on stderr, and the last good guard keeps running', async (t) => {
  const plans = { [QUERY]: [callTool('cordis_inspect_query', { platform: 'client', ...THEME })] }
  await withWeb({ label: 'invalid-live', guard: true, guardConfig: 'inspect:\n  deadlineMs: 3000', logTap: true, respond: byPrompt(plans) }, async ({ home, model, api, web }) => {
    const page = await openPage(api, { mode: 'silent' })
    try {
      assert.equal(refusalsOn(web.stderr()), 0, 'nothing said at boot: the config was only validated')
      const refused = await editUntil(home, home.readPatch('web').replace('deadlineMs: 3000', 'deadlineMs: 0'), () => home.logs().find(l => l.type === 'error' && NAMES_THE_FIELD.test(l.text)), { what: 'the loader to refuse the edited config' })
      t.diagnostic(`cordis logger, [${refused.type}] ${refused.name}: ${refused.text.split('\n').slice(0, 2).join(' | ')}`)
      await waitUntil(() => refusalsOn(web.stderr()) > 0, { ms: 5_000, what: 'the refusal on stderr' })
      t.diagnostic(`dsh web stderr after the refusal: ${JSON.stringify(web.stderr())}`)
      assert.equal(refusalsOn(web.stderr()), 1, 'the refused live edit is said once on stderr')
      const { entries } = await api.remote('pluginInventory/list', {})
      const row = entries.find(e => e.moduleName === NAME)
      t.diagnostic(`plugin inventory: ${JSON.stringify(row)}`)
      assert.equal(row?.fiberPhase, 'active', 'the running guard was not torn down')
      const { sessionId } = await api.createSession({ agentPreset: 'cordis', cwd: home.work })
      await api.prompt(sessionId, QUERY)
      const seen = await model.waitFor(r => promptOf(r) === QUERY && stepOf(r) === 1, 10_000)
      assert.equal(seen.body.messages.filter(m => m.role === 'tool').at(-1)?.content, deadlineMessage(THEME.provider, THEME.method, 3000), 'the last good config (3000 ms) still guards the query')
    } finally {
      page.close()
    }
  })
})

test('(6) control: the same live edit in a profile without the guard says nothing on stderr (the loader finds no row to patch)', async (t) => {
  await withWeb({ label: 'invalid-live-ctl', guard: false, logTap: true, respond: byPrompt() }, async ({ home, web }) => {
    home.appendPatch('web', guardConfigPatch(INVALID))
    const noted = await waitUntil(() => home.logs().find(l => /entry harness-guard not found/.test(l.text)), { ms: 15_000, what: 'the loader to apply the edited layer' })
    t.diagnostic(`cordis logger, [${noted.type}] ${noted.name}: ${noted.text}`)
    await sleep(500)
    assert.equal(refusalsOn(web.stderr()), 0)
    assert.doesNotMatch(web.stderr(), /HARNESS_GUARD/)
  })
})

test('(9) a valid live edit applies in place in a running `dsh web`: the next query ends at the new deadline, the one already waiting at its own', async (t) => {
  const WAITING = `${QUERY} (asked before the edit)`
  const NEXT = `${QUERY} (asked after the edit)`
  const call = callTool('cordis_inspect_query', { platform: 'client', ...THEME })
  await withWeb({ label: 'live-edit', guard: true, guardConfig: 'inspect:\n  deadlineMs: 8000', logTap: true, respond: byPrompt({ [WAITING]: [call], [NEXT]: [call] }) }, async ({ home, model, api, web }) => {
    const page = await openPage(api, { mode: 'silent' })
    try {
      const first = await api.createSession({ agentPreset: 'cordis', cwd: home.work })
      const second = await api.createSession({ agentPreset: 'cordis', cwd: home.work })
      assert.equal(await deadlineInForce(api, second.sessionId), '8000')
      await api.prompt(first.sessionId, WAITING)
      await waitUntil(() => page.queries.length === 1, { ms: 10_000, what: 'the first query to wait for the page' })
      await editUntil(home, home.readPatch('web').replace('deadlineMs: 8000', 'deadlineMs: 2000'), async () => (await deadlineInForce(api, second.sessionId)) === '2000', { what: 'the edit to apply' })
      await api.prompt(second.sessionId, NEXT)
      const resultOf = async (prompt) => (await model.waitFor(r => promptOf(r) === prompt && stepOf(r) === 1, 20_000)).body.messages.filter(m => m.role === 'tool').at(-1)?.content
      assert.equal(await resultOf(NEXT), deadlineMessage(THEME.provider, THEME.method, 2000), 'the next query ends at the new deadline')
      assert.equal(await resultOf(WAITING), deadlineMessage(THEME.provider, THEME.method, 8000), 'the query already waiting ends at its own (a restart would have ended it at once, disposed)')
      assert.doesNotMatch(web.stderr(), /HARNESS_GUARD/, 'an applied edit says nothing')
      assert.ok(!home.logs().some(l => l.type === 'error'), 'nothing refused')
    } finally {
      page.close()
    }
  })
})

for (const guard of [true, false]) {
  test(`(10) ${guard ? 'the settings namespace in `dsh web`: served on the web app\'s settings wire, a save of 0 refused with the field\'s message, a save of 2000 in force at once, a reset back to the row; the browser half in the page\'s roster' : 'control: without the guard the wire serves no harness-guard namespace and the roster has no browser half'}`, async (t) => {
    await withWeb({ label: guard ? 'settings' : 'settings-ctl', guard, guardConfig: 'inspect:\n  deadlineMs: 3000', respond: byPrompt() }, async ({ home, api, web }) => {
      const html = await (await fetch(`${web.url}/`)).text()
      const graph = JSON.parse(/window\.__DSH_BOOT__ = (\{.*?\})<\/script>/s.exec(html)?.[1] ?? '{}')
      const row = graph.entries?.find(e => e.id === NAME)
      const described = await api.call('settings.describe', {})
      const ns = described.namespaces.find(n => n.ns === GUARD_ID)
      if (!guard) {
        assert.ok(graph.entries?.length > 10, 'the roster was read')
        assert.equal(row, undefined)
        assert.ok(described.namespaces.length > 0, 'the wire serves other namespaces')
        assert.equal(ns, undefined)
        return
      }
      assert.ok(row, `the roster has ${NAME}`)
      const bundle = await (await fetch(`${web.url}${row.url}`)).text()
      assert.ok(bundle.startsWith(`window.__ModuleLoader__.load({\n\tid: "${NAME}",`), 'the page is served the browser half, in the factory format')
      assert.deepEqual(ns.base.inspect, { enabled: true, deadlineMs: 3000 }, 'the row\'s config is the base')
      assert.equal(ns.value.inspect.deadlineMs, 3000)
      assert.equal(ns.applies, 'live')
      const { sessionId } = await api.createSession({ agentPreset: 'cordis', cwd: home.work })
      let refusal
      try {
        await api.call('settings.mutate', { ns: GUARD_ID, ops: [{ op: 'set', path: ['inspect', 'deadlineMs'], value: 0 }], expectedRevision: ns.revision })
      } catch (error) {
        refusal = error.error
      }
      assert.equal(refusal?.code, 'settings-rejected')
      assert.match(refusal.message, NAMES_THE_FIELD)
      await waitUntil(() => refusalsOn(web.stderr()) === 1, { ms: 5_000, what: 'the refused save on stderr' })
      assert.equal(await deadlineInForce(api, sessionId), '3000', 'the running config stays')
      const saved = await api.call('settings.mutate', { ns: GUARD_ID, ops: [{ op: 'set', path: ['inspect', 'deadlineMs'], value: 2000 }], expectedRevision: ns.revision })
      assert.deepEqual(saved.user, { inspect: { deadlineMs: 2000 } })
      await waitUntil(async () => (await deadlineInForce(api, sessionId)) === '2000', { ms: 5_000, what: 'the saved deadline in force' })
      const reset = await api.call('settings.mutate', { ns: GUARD_ID, ops: [{ op: 'unset', path: ['inspect', 'deadlineMs'] }], expectedRevision: saved.revision })
      assert.equal(reset.value.inspect.deadlineMs, 3000, 'reset: the row\'s value again')
      await waitUntil(async () => (await deadlineInForce(api, sessionId)) === '3000', { ms: 5_000, what: 'the row\'s deadline in force again' })
      assert.equal(refusalsOn(web.stderr()), 1, 'only the refused save was said')
    })
  })
}
