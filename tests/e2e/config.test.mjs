// Installing and configuring the guard in real `dsh` profiles:
// `dsh plugin --profile <p> add <tarball>` picks up the package's bundle row,
// and a profile's cordis.patch.yml configures it. An invalid config must be
// refused with the field named where the user sees it: at boot that is the
// CLI's stderr (the run exits 1); a live edit of a running `dsh web` is
// refused by the loader, which keeps the last good guard running and writes
// the reason only to the cordis logger (which the CLI never prints).

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { GUARD_ID, HMR_OVERLAY, guardConfigPatch, runDsh, waitUntil } from './support/dsh.mjs'
import { byPrompt, callTool, promptOf, startFakeModel, stepOf } from './support/fake-model.mjs'
import { openPage } from './support/page.mjs'
import { deadlineMessage, prepareHome, runTask, withWeb } from './support/scenario.mjs'

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

test('(6) a live invalid edit in a running `dsh web` is refused and the last good guard keeps running', async (t) => {
  const plans = { [QUERY]: [callTool('cordis_inspect_query', { platform: 'client', provider: 'Theme', method: 'tokens' })] }
  await withWeb({ label: 'invalid-live', guard: true, guardConfig: 'inspect:\n  deadlineMs: 3000', logTap: true, respond: byPrompt(plans) }, async ({ home, model, api, web }) => {
    const page = await openPage(api, { mode: 'silent' })
    try {
      home.writePatch('web', home.readPatch('web').replace('deadlineMs: 3000', 'deadlineMs: 0'))
      const refused = await waitUntil(() => home.logs().find(l => l.type === 'error' && NAMES_THE_FIELD.test(l.text)), { ms: 15_000, what: 'the loader to refuse the edited config' })
      t.diagnostic(`cordis logger, [${refused.type}] ${refused.name}: ${refused.text.split('\n').slice(0, 2).join(' | ')}`)
      t.diagnostic(`dsh web stderr after the refusal: ${JSON.stringify(web.stderr())}`)
      const { entries } = await api.remote('pluginInventory/list', {})
      const row = entries.find(e => e.moduleName === NAME)
      t.diagnostic(`plugin inventory: ${JSON.stringify(row)}`)
      assert.equal(row?.fiberPhase, 'active', 'the running guard was not torn down')
      const { sessionId } = await api.createSession({ agentPreset: 'cordis', cwd: home.work })
      await api.prompt(sessionId, QUERY)
      const seen = await model.waitFor(r => promptOf(r) === QUERY && stepOf(r) === 1, 10_000)
      assert.equal(seen.body.messages.filter(m => m.role === 'tool').at(-1)?.content, deadlineMessage('Theme', 'tokens', 3000), 'the last good config (3000 ms) still guards the query')
    } finally {
      page.close()
    }
  })
})
