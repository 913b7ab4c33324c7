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

import { isInspectQuery } from './web-api.mjs'

/** A client provider like the web UI's own `Theme` provider. */
export const THEME_PROVIDER = Object.freeze({
  id: 'Theme',
  description: 'Theme tokens of the live page (e2e stand-in).',
  methods: [{
    name: 'tokens',
    description: 'Every theme token with its current value.',
    inputSchema: { type: 'object', properties: {} },
    outputSchema: { type: 'object', properties: { tokens: { type: 'object' } }, required: ['tokens'] },
  }],
})

/**
 * Load a page: sync `providers` as the page's manifest, then answer client
 * queries according to `mode`:
 * - `'silent'`: answer nothing (the page went away).
 * - `'refuse'`: `{ ok: false, ...refusal }` (default reason `provider-error`).
 * - `'answer'`: `{ ok: true, data: answer }`.
 * @returns {Promise<{ queries: object[], acks: object[], close(): void }>}
 *   `queries` are the `cordis/inspect-query` requests seen, `acks` the host's
 *   `{ accepted }` replies to this page's answers.
 */
export async function openPage(api, { providers = [THEME_PROVIDER], mode = 'silent', refusal, answer } = {}) {
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
      : { ok: true, data: answer ?? { tokens: {} } }
    try {
      acks.push(await api.remote('dynamicCordisRunner/resolveInspectQuery', { agentId: request.agentId, requestId: request.requestId, resolution }))
    } catch (error) {
      acks.push({ error: String(error) })
    }
  })
  await api.remote('dynamicCordisRunner/syncInspectManifest', { providers })
  return { queries, acks, events, close: () => events.close() }
}
