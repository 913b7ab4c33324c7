// A peer arm of `make bench`: the inspect guard of seed 000,
// `@argszero/cordis-plugin-inspect-client-guard`, reconstructed from the seed's
// published description. The seed's code is not published;
// this file implements what the document describes, as the document describes
// it, and nothing beyond it:
//
// - installs on the raw registry (unwrapping `Symbol.for('cordis.original')`)
//   and replaces two methods, marked so that dispose() restores by marker (a
//   service method read is not identity-stable); installing twice is a no-op;
// - query(): a `platform: "client"` call is raced against a deadline held by
//   one ref'd `setTimeout` per call, cleared on every exit. On expiry the
//   request's pending entry is deleted from the registry's `pending` map,
//   `cordis/inspect-query-resolved { requestId }` is emitted (the requestId is
//   learnt from the registry's own `cordis/inspect-query` event, which the
//   registry emits synchronously inside the call), and the call rejects with
//   the contract's INSPECT_CLIENT_DEADLINE message and code. The owner's inner
//   promise is abandoned, not settled (the document says it cannot be). An
//   answer or an abort that wins the race is propagated as it came; host
//   queries are forwarded untouched;
// - resolveClientQuery(): an unbound agent (`agent == null`) is refused with
//   `{ accepted: false }` instead of throwing;
// - onReport (optional) receives `{ kind: 'deadline' | 'unbound-agent',
//   requestId, providerId, methodName, deadlineMs }`.
//
// Adapted to run on the pinned host, and nothing else: the document's plugin
// row (`inject: ['cordisInspect']`, config `{ deadlineMs }`) is the `plugin`
// export below; the benchmark calls the document's programmatic API
// (`installInspectClientGuard`) on the registry, as it does the plain-JS guard.
// Not in the document, so not here: refusal grace, disposal of in-flight
// queries, records or a service, log lines, config validation beyond
// "a positive integer".
//
// One option beyond the document, off unless passed, for section 3's floor arm
// only: `settleEntry: true` settles the expired request's pending entry as the
// registry's own abort path settles it, instead of abandoning it, so that the
// registry's wait ends and takes its listener off the caller's signal. That is
// the contract's "no listener left on the call's AbortSignal", which the
// document's guard does not keep (bench/README.md, "The floor arm").

const ORIGINAL = Symbol.for('cordis.original')
const MARK = Symbol.for('inspect-client-guard')

/** The object under `Symbol.for('cordis.original')`, else the value itself. */
export function originalOf(value) {
  return (value !== null && (typeof value === 'object' || typeof value === 'function') && value[ORIGINAL]) || value
}

function deadlineError(providerId, methodName, deadlineMs) {
  const error = new Error(`Client inspect query ${providerId}.${methodName} got no answer from any page within ${deadlineMs}ms. Client Inspect Providers only run inside a live browser page, so a session with no page open — a subagent, a teammate, a headless or ACP run — has nobody to answer it. Do not retry platform:"client" queries here: read the source, or use a platform:"host" provider from cordis_inspect_list instead.`)
  error.code = 'INSPECT_CLIENT_DEADLINE'
  return error
}

/**
 * Guard `registry`'s client queries with a deadline. Returns `dispose()`,
 * which restores the previous methods by marker.
 */
export function installInspectClientGuard(registry, { deadlineMs = 15000, onReport, settleEntry = false } = {}) {
  if (!Number.isInteger(deadlineMs) || deadlineMs <= 0) throw new TypeError(`deadlineMs must be a positive integer, got ${deadlineMs}`)
  const raw = originalOf(registry)
  if (raw.query?.[MARK]) return raw.query[MARK].dispose
  const hadQuery = Object.hasOwn(raw, 'query')
  const hadResolve = Object.hasOwn(raw, 'resolveClientQuery')
  const previousQuery = raw.query
  const previousResolve = raw.resolveClientQuery

  // The registry emits `cordis/inspect-query` synchronously inside query(),
  // after it has created the pending entry: the call being made learns its id there.
  let announced
  const unlisten = raw.ctx.on('cordis/inspect-query', (request) => {
    if (announced !== undefined) announced.requestId = request.requestId
  })

  const query = function guardedQuery(platform, providerId, methodName, input, agent, signal) {
    if (platform !== 'client') return previousQuery.apply(this, arguments)
    const call = { requestId: undefined }
    announced = call
    let inner
    try {
      inner = previousQuery.apply(this, arguments)
    } finally {
      announced = undefined
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        if (call.requestId !== undefined) {
          // The floor arm only (see above): the wait ended quietly, as harness-guard and
          // the plain-JS guard end it; the caller gets the deadline error below.
          if (settleEntry) raw.pending.get(call.requestId)?.settle({ ok: true, data: undefined })
          raw.pending.delete(call.requestId)
          raw.ctx.emit('cordis/inspect-query-resolved', { requestId: call.requestId })
        }
        reject(deadlineError(providerId, methodName, deadlineMs))
        onReport?.({ kind: 'deadline', requestId: call.requestId, providerId, methodName, deadlineMs })
      }, deadlineMs)
      inner.then(
        (value) => { clearTimeout(timer); resolve(value) },
        (error) => { clearTimeout(timer); reject(error) },
      )
    })
  }

  const resolveClientQuery = function guardedResolveClientQuery(agent, requestId, resolution) {
    if (agent === null || agent === undefined) {
      const pending = raw.pending.get(requestId)
      onReport?.({ kind: 'unbound-agent', requestId, providerId: pending?.request.provider, methodName: pending?.request.method, deadlineMs })
      return { accepted: false }
    }
    return previousResolve.apply(this, arguments)
  }

  const dispose = () => {
    if (raw.query?.[MARK] !== marker) return
    if (hadQuery) raw.query = previousQuery
    else delete raw.query
    if (raw.resolveClientQuery?.[MARK] === marker) {
      if (hadResolve) raw.resolveClientQuery = previousResolve
      else delete raw.resolveClientQuery
    }
    unlisten?.()
  }
  const marker = { dispose }
  query[MARK] = marker
  resolveClientQuery[MARK] = marker
  raw.query = query
  raw.resolveClientQuery = resolveClientQuery
  return dispose
}

/** The document's plugin row: `inject: ['cordisInspect']`, config `{ deadlineMs }`. */
export const plugin = {
  name: 'inspect-client-guard',
  inject: ['cordisInspect'],
  apply(ctx, config = {}) {
    const dispose = installInspectClientGuard(ctx.cordisInspect, config)
    ctx.on('dispose', dispose)
  },
}
