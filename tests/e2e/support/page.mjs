// A stand-in for a browser page of `dsh web`, over the web app's real `/api`.
//
// When a page loads, `@deepseek-ai/dsh-cordis-client-runner` opens the host
// event downlink (`/api/events.host`) and mirrors its client inspect providers
// to the host (`dynamicCordisRunner/syncInspectManifest`). For each
// `cordis/inspect-query` event it answers through
// `dynamicCordisRunner/resolveInspectQuery` with `{ ok: true, data }` or a
// refusal `{ ok: false, reason, message }`. The host never clears the mirror,
// so a manifest synced by a page that then answers nothing is exactly the page
// that went away: the query waits for an answer that never comes.
//
// browser.test.mjs runs the real page in Chromium. The stand-in stays where a
// test needs a page the real one cannot be made to be (one that refuses) or a
// page with no browser behind it; it syncs the real page's manifest.

import { readFileSync } from 'node:fs'
import { isInspectQuery } from './web-api.mjs'

/**
 * The real page's manifest for the pinned CLI (fixtures/page-manifest.json:
 * the providers, and the package versions it was captured from).
 * browser.test.mjs checks it against what `dsh web`'s page syncs in Chromium.
 */
export const PAGE_MANIFEST = Object.freeze(JSON.parse(readFileSync(new URL('../fixtures/page-manifest.json', import.meta.url), 'utf8')))
/** The page's client providers: `Service`, `Event`, `Builtin`, `Slots`, `Theme`. */
export const PAGE_PROVIDERS = PAGE_MANIFEST.providers
/** The provider and method the suite's client queries name (the real page answers it with its theme tokens). */
export const THEME = Object.freeze({ provider: 'Theme', method: 'listTokens' })

/**
 * Load a page: sync `providers` (by default the real page's) as the page's manifest, then answer client
 * queries according to `mode`:
 * - `'silent'`: answer nothing (the page went away).
 * - `'refuse'`: `{ ok: false, ...refusal }` (default reason `provider-error`).
 * - `'answer'`: `{ ok: true, data: answer }`.
 * @returns {Promise<{ queries: object[], acks: object[], close(): void }>}
 *   `queries` are the `cordis/inspect-query` requests seen, `acks` the host's
 *   `{ accepted }` replies to this page's answers.
 */
export async function openPage(api, { providers = PAGE_PROVIDERS, mode = 'silent', refusal, answer } = {}) {
  const events = await api.hostEvents()
  const queries = []
  const acks = []
  events.on(async (payload) => {
    if (!isInspectQuery(payload)) return
    const request = payload.args[0]
    queries.push(request)
    if (mode === 'silent') return
    const resolution = mode === 'refuse'
      ? { ok: false, reason: refusal?.reason ?? 'provider-error', message: refusal?.message ?? 'the page refused' }
      : { ok: true, data: answer ?? { tokens: [], referencedTypes: [] } }
    try {
      acks.push(await api.remote('dynamicCordisRunner/resolveInspectQuery', { agentId: request.agentId, requestId: request.requestId, resolution }))
    } catch (error) {
      acks.push({ error: String(error) })
    }
  })
  await api.remote('dynamicCordisRunner/syncInspectManifest', { providers })
  return { queries, acks, events, close: () => events.close() }
}
