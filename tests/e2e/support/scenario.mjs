// One end-to-end scenario: a fresh Harness home, the fake model, optionally the
// guard (installed with `dsh plugin --profile <p> add <tarball>`), the
// profile's user layer, and a running `dsh web` or one `dsh --profile
// headless` run. Everything is torn down in `finally`.

import { HMR_OVERLAY, guardConfigPatch, logTapRows, makeHome, runDsh, startWeb } from './dsh.mjs'
import { startFakeModel } from './fake-model.mjs'

/** How long a control arm waits for a tool result that should never come. */
export const HANG_BOUND_MS = 10_000

/** The guard's deadline message (CONTRACT.md), as the tool runtime hands it to the model. */
export const deadlineMessage = (provider, method, deadlineMs) =>
  `Error: Client inspect query ${provider}.${method} got no answer from any page within ${deadlineMs}ms. ` +
  'Client Inspect Providers only run inside a live browser page, so a session with no page open — a subagent, a teammate, a headless or ACP run — has nobody to answer it. ' +
  'Do not retry platform:"client" queries here: read the source, or use a platform:"host" provider from cordis_inspect_list instead.'

/**
 * Prepare a home for `profile`: the guard added when `guard`, local fixture
 * plugins copied in, and the user layer written from `guardConfig` (YAML of
 * the guard row's `config:`), `insert` rows (`logTap` adds the log-tap) and
 * `extraPatch` (raw YAML appended).
 */
export async function prepareHome({ label, profile, guard, guardConfig, logTap = false, localPlugins = [], insertRows = '', extraPatch = '' }) {
  const home = makeHome(label)
  try {
    if (guard) await home.addGuard(profile)
    else await home.initProfile(profile)
    const rows = (logTap ? logTapRows(home.logFile) : '') + insertRows
    if (logTap) home.addLocalPlugin(profile, 'log-tap.mjs')
    for (const file of localPlugins) home.addLocalPlugin(profile, file)
    let patch = ''
    if (rows) patch += `- insert:\n${rows}`
    if (guard && guardConfig) patch += guardConfigPatch(guardConfig)
    patch += extraPatch
    home.writePatch(profile, patch || '[]\n')
    return home
  } catch (error) {
    home.remove()
    throw error
  }
}

/**
 * Run `fn({ home, model, web, api })` against a running `dsh web` (profile
 * `web`), then stop everything.
 */
export async function withWeb({ label = 'web', guard, guardConfig, logTap, respond, profile = 'web' }, fn) {
  const model = await startFakeModel(respond)
  let home
  let web
  try {
    home = await prepareHome({ label, profile, guard, guardConfig, logTap })
    web = await startWeb({ home: home.home, modelUrl: model.url, cwd: home.work, profile })
    return await fn({ home, model, web, api: web.api })
  } finally {
    await web?.stop()
    await model.close()
    home?.remove()
  }
}

/** One `dsh --profile <profile> --patch <hmr overlay> <task>` run in `home`. */
export function runTask(home, model, task, { profile = 'headless', timeoutMs = 60_000 } = {}) {
  return runDsh(['--profile', profile, '--patch', HMR_OVERLAY, task], { home: home.home, modelUrl: model.url, cwd: home.work, timeoutMs })
}

/** Session events of one type from `session.history`. */
export async function eventsOf(api, sessionId, type) {
  const { events } = await api.history(sessionId)
  return events.map(e => e.event).filter(e => !type || e.type === type)
}

/** What `/harness-guard` answers in a session (the web client's `commands/execute`, no model turn); `''` when nothing answers it. */
export const guardStatus = async (api, sessionId) => (await api.command(sessionId, '/harness-guard'))?.result?.text ?? ''

/** The deadline in force, as `/harness-guard` states it (`'3000'`), or `undefined`. */
export const deadlineInForce = async (api, sessionId) => /deadline (\d+) ms/.exec(await guardStatus(api, sessionId))?.[1]
