// The honest plain-JavaScript baseline: the guard a user could write instead of
// installing harness-guard, with the same observable behaviour, written the
// obvious way and without tricks in either direction.
//
// Inspect half: a `platform: "client"` query races a deadline held by one ref'd
// `setTimeout` per query; the registry gets a signal derived with
// `AbortSignal.any([caller, own])`, and the guard aborts its own controller at
// the deadline (the registry then removes its pending entry and emits
// `cordis/inspect-query-resolved`); the caller gets the same coded errors and
// messages as from harness-guard. Page refusals start the refusal grace; an
// unbound agent is refused instead of throwing; one report per rejected query.
//
// Inbox half: every agent created after the install has its `inbox.claim`
// wrapped; the claimed batch is sanitized in place with the same rules, records
// and warnings; a `session/event` observer records non-messages at their durable
// write. (harness-guard's pre-step placements, for agents and batches that
// predate the mount, are not on the measured paths and are left out.)

const ORIGINAL = Symbol.for('cordis.original')
const RECORD_CAP = 1000
const INSTEAD = 'Do not retry platform:"client" queries here: read the source, or use a platform:"host" provider from cordis_inspect_list instead.'

/** The object under `Symbol.for('cordis.original')`, else the value itself. */
export function originalOf(value) {
  try {
    return (value !== null && (typeof value === 'object' || typeof value === 'function') && value[ORIGINAL]) || value
  } catch {
    return value
  }
}

function coded(code, message) {
  const error = new Error(message)
  error.code = code
  return error
}

/** Replace `object[key]`; returns the restore function. */
function patch(object, key, replacement) {
  const own = Object.getOwnPropertyDescriptor(object, key)
  object[key] = replacement
  return () => {
    if (object[key] !== replacement) return
    if (own) Object.defineProperty(object, key, own)
    else delete object[key]
  }
}

/**
 * Guard `registry`'s client queries. Options as harness-guard's
 * `{ deadlineMs, refusalGraceMs }`, plus `warn(text, report)`.
 * Returns `dispose()`.
 */
export function installPlainInspectGuard(registry, { deadlineMs = 15000, refusalGraceMs = Math.min(1000, deadlineMs), warn } = {}) {
  const raw = originalOf(registry)
  const previousQuery = raw.query
  const previousResolve = raw.resolveClientQuery
  const flights = new Set()
  const byRequest = new Map()
  let announcing = null
  const counts = { deadline: 0, refused: 0, unboundAgent: 0, disposed: 0 }
  const reports = []

  const report = (kind, flight, reason) => {
    const entry = {
      kind,
      requestId: flight.requestId ?? '',
      providerId: flight.providerId ?? '',
      methodName: flight.methodName ?? '',
      deadlineMs,
      at: Date.now(),
      ...(reason === undefined ? {} : { reason }),
    }
    counts[kind === 'unbound-agent' ? 'unboundAgent' : kind] += 1
    if (reports.length === RECORD_CAP) reports.shift()
    reports.push(entry)
    warn?.(`harness-guard (plain JS): client inspect request ${entry.requestId} (${entry.providerId}.${entry.methodName}): ${kind}`, entry)
  }

  // Take a flight off every table; false if it already ended.
  const land = (flight) => {
    if (flight.done) return false
    flight.done = true
    clearTimeout(flight.timer)
    flights.delete(flight)
    if (flight.requestId !== undefined) byRequest.delete(flight.requestId)
    return true
  }

  const end = (flight, kind) => {
    if (!land(flight)) return
    flight.controller.abort()
    const name = `${flight.providerId}.${flight.methodName}`
    let error
    if (kind === 'deadline') {
      error = coded('INSPECT_CLIENT_DEADLINE', `Client inspect query ${name} got no answer from any page within ${deadlineMs}ms. Client Inspect Providers only run inside a live browser page, so a session with no page open — a subagent, a teammate, a headless or ACP run — has nobody to answer it. ${INSTEAD}`)
    } else if (kind === 'refused') {
      const r = flight.refusal
      error = r.invalidOutput
        ? coded('INSPECT_CLIENT_REFUSED', `Client inspect query ${name} was refused: the page's answer failed output validation against the method's outputSchema, so the registry discarded it. ${INSTEAD}`)
        : coded('INSPECT_CLIENT_REFUSED', `Client inspect query ${name} was refused by the page: ${r.reason}: ${r.message}. The page that answered cannot serve this query, so asking again will get the same refusal. ${INSTEAD}`)
    } else {
      error = coded('INSPECT_CLIENT_GUARD_DISPOSED', `Client inspect query ${name} was abandoned because harness-guard was stopped while it waited for a page. ${INSTEAD}`)
    }
    flight.reject(error)
    report(kind, flight, kind === 'refused' ? (flight.refusal.invalidOutput ? 'invalid-output' : flight.refusal.reason) : undefined)
  }
  const expire = (flight) => end(flight, flight.refusal ? 'refused' : 'deadline')

  const unlisten = raw.ctx.on('cordis/inspect-query', (request) => {
    if (announcing === null) return
    announcing.requestId = request.requestId
    announcing.agentId = request.agentId
    byRequest.set(request.requestId, announcing)
    announcing = null
  })

  const restoreQuery = patch(raw, 'query', function plainGuardedQuery(platform, providerId, methodName, input, agent, signal) {
    if (platform !== 'client' || !(signal instanceof AbortSignal) || signal.aborted) {
      return previousQuery.apply(this, arguments)
    }
    const controller = new AbortController()
    const flight = {
      providerId, methodName, controller,
      requestId: undefined, agentId: undefined,
      startedAt: performance.now(), timer: undefined, reject: undefined, refusal: undefined, done: false,
    }
    announcing = flight
    let inner
    try {
      inner = previousQuery.call(this, platform, providerId, methodName, input, agent, AbortSignal.any([signal, controller.signal]))
    } finally {
      announcing = null
    }
    return new Promise((resolve, reject) => {
      flight.reject = reject
      flight.timer = setTimeout(expire, deadlineMs, flight)
      flights.add(flight)
      inner.then(
        (value) => { if (land(flight)) resolve(value) },
        (error) => { if (land(flight)) reject(error) },
      )
    })
  })

  const restoreResolve = patch(raw, 'resolveClientQuery', function plainGuardedResolve(agent, requestId, resolution) {
    if (agent === null || agent === undefined) {
      const flight = byRequest.get(requestId)
      report('unbound-agent', flight ?? { requestId })
      return { accepted: false }
    }
    const result = previousResolve.apply(this, arguments)
    if (result?.accepted !== false) return result
    const flight = byRequest.get(requestId)
    if (flight === undefined || flight.done || flight.refusal || flight.agentId !== agent.id) return result
    flight.refusal = resolution?.ok
      ? { invalidOutput: true }
      : { reason: String(resolution?.reason ?? '').slice(0, 4096), message: String(resolution?.message ?? '').slice(0, 4096) }
    const left = flight.startedAt + deadlineMs - performance.now()
    if (refusalGraceMs < left) {
      clearTimeout(flight.timer)
      flight.timer = setTimeout(expire, refusalGraceMs, flight)
    }
    return result
  })

  return function dispose() {
    restoreQuery()
    restoreResolve()
    unlisten?.()
    for (const flight of [...flights]) end(flight, 'disposed')
  }
}

// ---- inbox ------------------------------------------------------------------

const REPAIRABLE = new Set(['string', 'number', 'boolean', 'bigint'])

/** A usable message, read defensively; a throwing getter or Proxy trap makes it unusable. */
function isMessage(value) {
  try {
    return value !== null && typeof value === 'object'
      && typeof value.id === 'string' && value.id.length > 0
      && value.role === 'user'
      && Array.isArray(value.content)
      && value.source !== null && typeof value.source === 'object'
      && typeof value.source.kind === 'string'
  } catch {
    return false
  }
}

function kindOf(value) {
  try {
    if (value === null) return 'null'
    if (Array.isArray(value)) return 'array'
    return typeof value
  } catch {
    return 'unreadable'
  }
}

function render(value) {
  try {
    switch (typeof value) {
      case 'string': return value
      case 'bigint': return `${value}n`
      case 'symbol': return value.toString()
      case 'function': return `[function ${value.name || 'anonymous'}]`
      case 'object': if (value !== null) return JSON.stringify(value) ?? Object.prototype.toString.call(value)
      // fall through
      default: return String(value)
    }
  } catch {
    try {
      return Object.prototype.toString.call(value)
    } catch {
      return '[unreadable]'
    }
  }
}

function preview(value, chars) {
  const text = render(value)
  return text.length > chars ? `${text.slice(0, chars)}…` : text
}

/**
 * Guard every agent's inbox in `ctx`. Options as harness-guard's inbox section,
 * plus `createUserMessage` and `warn(text, violation)`. Returns `dispose()`.
 */
export function installPlainInboxGuard(ctx, { mode = 'repair', previewChars = 80, createUserMessage, warn } = {}) {
  const counts = { repaired: 0, quarantined: 0, observed: 0 }
  const violations = []
  // Wrapped inboxes, held weakly: a guard must not keep a disposed agent's
  // inbox (and through it, its whole session log) alive.
  const wrapped = new Set()
  let pruned = 0

  const record = (value, action, place) => {
    const violation = {
      at: Date.now(),
      origin: place.origin,
      sessionId: place.sessionId,
      ...(place.seq === undefined ? {} : { seq: place.seq }),
      target: place.target,
      index: place.index,
      valueKind: kindOf(value),
      preview: preview(value, previewChars),
      action,
    }
    counts[action] += 1
    if (violations.length === RECORD_CAP) violations.shift()
    violations.push(violation)
    warn?.(`harness-guard (plain JS): ${place.origin} non-message in session ${place.sessionId ?? '?'} (${place.target}[${place.index}]): ${violation.valueKind} ${JSON.stringify(violation.preview)} ${action}`, violation)
  }

  const repair = (value) => {
    if (mode !== 'repair') return undefined
    const kind = typeof value
    if (!REPAIRABLE.has(kind) || (kind === 'number' && !Number.isFinite(value))) return undefined
    try {
      const message = createUserMessage({
        content: [{ type: 'text', text: kind === 'string' ? value : String(value) }],
        source: { kind: 'plugin', plugin: 'inbox-input-guard', form: 'notice', summary: `repaired inbox input (${kind})` },
      })
      return isMessage(message) ? message : undefined
    } catch {
      return undefined
    }
  }

  const sanitize = (batch, sessionId, split) => {
    let found
    for (let i = batch.length - 1; i >= 0; i -= 1) {
      const value = batch[i]
      if (isMessage(value)) continue
      let action = 'observed'
      if (mode !== 'report') {
        const message = repair(value)
        if (message === undefined) {
          batch.splice(i, 1)
          action = 'quarantined'
        } else {
          batch[i] = message
          action = 'repaired'
        }
      }
      ;(found ??= []).push([i, value, action])
    }
    if (found === undefined) return
    for (let k = found.length - 1; k >= 0; k -= 1) {
      const [i, value, action] = found[k]
      record(value, action, { origin: 'claimed', sessionId, target: i < split ? 'next-step' : 'next-turn', index: i })
    }
  }

  const wrap = (inbox) => {
    const previous = inbox?.claim
    if (typeof previous !== 'function' || previous.plainGuard) return
    const guarded = function plainGuardedClaim(target, turn) {
      for (;;) {
        const split = this.nextStep?.length ?? Infinity
        const batch = previous.call(this, target, turn)
        if (!Array.isArray(batch)) return batch
        const claimed = batch.length
        sanitize(batch, this.session?.id, split)
        if (!(claimed > 0 && batch.length === 0 && target === 'next-turn' && this.nextTurn?.length > 0)) return batch
      }
    }
    guarded.plainGuard = true
    Object.defineProperty(inbox, 'claim', { value: guarded, writable: true, configurable: true, enumerable: false })
    wrapped.add(new WeakRef(inbox))
    if (wrapped.size > 64 && wrapped.size > 2 * pruned) {
      for (const ref of wrapped) if (ref.deref() === undefined) wrapped.delete(ref)
      pruned = wrapped.size
    }
  }

  const unlisten = [
    ctx.on('agent/created', (payload) => {
      try { wrap(payload?.agent?.inbox) } catch { /* never veto an agent */ }
    }),
    ctx.on('session/event', (session, event) => {
      if (event?.type !== 'agent/inbox/spliced') return
      const inserted = event.data?.inserted
      if (!Array.isArray(inserted)) return
      for (let i = 0; i < inserted.length; i += 1) {
        if (isMessage(inserted[i])) continue
        record(inserted[i], 'observed', { origin: 'durable', sessionId: session?.id, seq: event.seq, target: event.data.target, index: (event.data.start ?? 0) + i })
      }
    }),
  ]

  return function dispose() {
    for (const off of unlisten) off?.()
    for (const ref of wrapped) {
      const inbox = ref.deref()
      if (inbox !== undefined && Object.hasOwn(inbox, 'claim') && inbox.claim.plainGuard) delete inbox.claim
    }
    wrapped.clear()
  }
}
