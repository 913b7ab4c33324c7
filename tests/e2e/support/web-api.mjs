// The web app's real `/api`, spoken the way the page speaks it
// (`@deepseek-ai/dsh-client-connection` + `@deepseek-ai/dsh-api-gateway/client`):
//
// - unary calls: `POST /api/<method>` with `{ type: 'client-request', rpcId, method, payload }`,
//   answered `{ type: 'server-response', rpcId, result: { ok, value } | { ok: false, error } }`.
//   The API proxy's own methods (`session.create`, `session.prompt`, `session.cancel`,
//   `session.history`, …) take their request object as `payload`; Typert Remote endpoints
//   (`<namespace>/<method>`, e.g. `dynamicCordisRunner/syncInspectManifest`,
//   `commands/execute`) take `payload: { args: { …named wire arguments } }`.
// - host events: a downlink-only WebSocket on `/api/events.host`, frames
//   `{ type: 'server-request', method, payload }`; forwarded cordis events arrive as
//   `payload: { type: 'host/remote-event', event, args }` (e.g. `cordis/inspect-query`).

import { randomUUID } from 'node:crypto'

export class ApiError extends Error {
  constructor(method, error) {
    super(`${method}: ${error?.code}: ${error?.message}`)
    this.method = method
    this.error = error
  }
}

/**
 * A client of one running `dsh web` at `baseUrl` (`http://127.0.0.1:<port>`).
 */
export function webApi(baseUrl) {
  async function post(method, payload, { signal, timeoutMs = 15_000 } = {}) {
    const rpcId = randomUUID()
    const s = signal ? AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]) : AbortSignal.timeout(timeoutMs)
    const res = await fetch(`${baseUrl}/api/${method}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'client-request', rpcId, method, payload }),
      signal: s,
    })
    if (!res.ok) throw new Error(`${method}: HTTP ${res.status}: ${await res.text()}`)
    const body = await res.json()
    if (body.rpcId !== rpcId) throw new Error(`${method}: rpcId mismatch`)
    return body.result
  }
  /** An API proxy method; resolves `value`, throws ApiError on `{ ok: false }`. */
  async function call(method, payload, options) {
    const result = await post(method, payload, options)
    if (!result.ok) throw new ApiError(method, result.error)
    return result.value
  }
  /** A Typert Remote endpoint `<namespace>/<method>` with named wire args. */
  async function remote(endpoint, args, options) {
    const result = await post(endpoint, { args }, options)
    if (!result.ok) throw new ApiError(endpoint, result.error)
    return result.value
  }
  return {
    baseUrl,
    post,
    call,
    remote,
    createSession: (payload = {}) => call('session.create', payload),
    /** A workspace for `path`, as the page's **Choose workspace** → **Open** makes one (`{ workspace: { workspaceId, … } }`). */
    createWorkspace: (path) => call('workspace.create', { path }),
    prompt: (sessionId, text) => call('session.prompt', { sessionId, mode: 'queue', content: [{ type: 'text', text }] }),
    cancel: (sessionId) => call('session.cancel', { sessionId }),
    history: (sessionId) => call('session.history', { sessionId }),
    /** How the web client runs a slash command without a model turn (dsh-client-ui-commands). */
    command: (sessionId, line) => remote('commands/execute', { agentId: sessionId, line, images: [] }),
    listCommands: (sessionId) => remote('commands/list', { agentId: sessionId }),
    hostEvents: () => openHostEvents(baseUrl),
  }
}

/**
 * Open the page's host-event downlink. `events` collects every frame payload;
 * `next(pred, ms)` resolves the first (past or future) payload matching `pred`.
 */
export async function openHostEvents(baseUrl) {
  const ws = new WebSocket(`${baseUrl.replace(/^http/, 'ws')}/api/events.host`)
  const events = []
  const waiters = new Set()
  const listeners = new Set()
  ws.addEventListener('message', (e) => {
    let frame
    try { frame = JSON.parse(String(e.data)) } catch { return }
    const payload = frame?.payload
    if (!payload) return
    events.push(payload)
    for (const w of [...waiters]) if (w.pred(payload)) { waiters.delete(w); w.resolve(payload) }
    for (const fn of [...listeners]) { try { fn(payload) } catch {} }
  })
  await new Promise((resolve, reject) => {
    ws.addEventListener('open', resolve, { once: true })
    ws.addEventListener('error', () => reject(new Error(`events.host: WebSocket failed to open on ${baseUrl}`)), { once: true })
  })
  return {
    events,
    /** Call `fn(payload)` for every frame from now on; returns an unsubscribe function. */
    on(fn) { listeners.add(fn); return () => listeners.delete(fn) },
    next(pred, ms = 10_000) {
      const hit = events.find(pred)
      if (hit) return Promise.resolve(hit)
      return new Promise((resolve, reject) => {
        const w = { pred, resolve: (p) => { clearTimeout(t); resolve(p) } }
        const t = setTimeout(() => { waiters.delete(w); reject(new Error(`events.host: no matching frame within ${ms} ms`)) }, ms)
        waiters.add(w)
      })
    },
    close() { try { ws.close() } catch {} },
  }
}

/** A `cordis/inspect-query` host event's request (`{ requestId, agentId, provider, method, input }`). */
export const isInspectQuery = (p) => p.type === 'host/remote-event' && p.event === 'cordis/inspect-query'
