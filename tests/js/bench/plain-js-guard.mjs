// A peer arm of `make bench`: the guard written in plain JavaScript, as fast as
// this project can write it, with the behaviour of harness-guard's contract on
// every path the benchmark measures. It is the bar harness-guard is judged
// against; tests/js/bench/README.md says what it does and what it leaves out.
//
// Inspect half. `query` and `resolveClientQuery` replaced on the raw registry; a
// `platform: "client"` query goes to the registry with the caller's own
// arguments (signal included), and its request id is learnt from the registry's
// own `cordis/inspect-query` announcement (or, unannounced, from its newest
// pending entry, said once). Every query of one guard has the same deadline, so
// the flights are due in the order they began: one Node `Timeout` serves them
// all, refreshed when the first flight arrives, ref'd exactly while a flight
// waits. At the deadline (or the end of the refusal grace after a page's first
// refusal) the registry's pending entry is removed and settled, and
// `cordis/inspect-query-resolved` emitted, as the registry's own abort path
// would; the caller gets the contract's coded error, made without a stack. The
// caller's promise is one async function per query. An unbound agent is
// refused with `{ accepted: false }`. Disposal ends every flight with
// `INSPECT_CLIENT_GUARD_DISPOSED`. One report per rejected query, kept (the
// latest 1,000) and logged.
//
// Inbox half. Every agent's `inbox.claim` wrapped (at `agent/created`, and at
// the first `agent/pre-step` of an agent that predates the install); the
// claimed batch sanitized in place before any pre-step listener sees it:
// `repair` makes a string, finite number, boolean or bigint the contract's
// notice message with `createUserMessage`, anything else is dropped;
// `quarantine` drops every non-message; `report` records only. A batch not made
// by the host's own claim alone, of entries its durable log wrote (another
// plugin's claim under this one, an entry placed on the live list with no
// logged write, or a batch added to after its claim) has its message-shaped
// entries judged by their plain copy
// (through JSON), which is handed on in their place. A turn's batch emptied
// while more turns wait claims the next one. The pre-step entry sanitizes a
// batch the wrapper did not return as it is (claimed before the install, or
// added to since) and sweeps the pending lists through `inbox.splice`. A
// `session/event` observer records every non-message at its durable write. One
// value seen at its write, while pending and at the claim is one value (its
// records share a `valueId`; `counts().observed` counts values), told apart as
// harness-guard tells them. The latest 1,000 violations are kept.
//
// Both halves: every echoed string (log lines and previews) has its control and
// bidi characters shown as visible escapes, as harness-guard's (`\n`, `\u001b`,
// …); warn lines are bounded per session, 20 a minute, then one notice, then a
// count of what was left out.
//
// Not here: the `HarnessGuard` provider and the command, the services as cordis
// services, live reconfiguration, and failing open (a fault of this code is the
// host's); none is on a measured path.

const ORIGINAL = Symbol.for('cordis.original')
const RECORD_CAP = 1000
const PAGE_TEXT = 4096
const INSTEAD = 'Do not retry platform:"client" queries here: read the source, or use a platform:"host" provider from cordis_inspect_list instead.'

/** The object under `Symbol.for('cordis.original')`, else the value itself. */
export function originalOf(value) {
  try {
    return (value !== null && (typeof value === 'object' || typeof value === 'function') && value[ORIGINAL]) || value
  } catch {
    return value
  }
}

// ---- echoing ----------------------------------------------------------------

const ESCAPED = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/
const ESCAPED_ALL = new RegExp(ESCAPED.source, 'g')
const SHORT = { '\n': '\\n', '\r': '\\r', '\t': '\\t' }
const escapeChar = (c) => SHORT[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`

/** `text` with every control and bidi character shown as a visible escape. */
export function escape(text) {
  return ESCAPED.test(text) ? text.replace(ESCAPED_ALL, escapeChar) : text
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

/**
 * At most `chars` UTF-16 units of the escaped rendering, plus `…` when cut; a
 * cut never splits an escape or a surrogate pair.
 */
function preview(value, chars) {
  const text = render(value)
  const head = text.length > chars + 1 ? text.slice(0, chars + 2) : text
  let out = ''
  let used = 0
  let read = 0
  for (const c of head) {
    const shown = ESCAPED.test(c) ? escapeChar(c) : c
    if (used + shown.length > chars) return `${out}…`
    out += shown
    used += shown.length
    read += c.length
  }
  return read < text.length ? `${out}…` : out
}

/**
 * Warn lines bounded per session: the first 20 of a minute written, the 21st
 * replaced by a notice, the rest left out and counted in the session's first
 * line after the minute. At most 4,096 sessions' windows are kept.
 */
function logBound(warn) {
  const windows = new Map()
  return (session, text) => {
    if (warn === undefined) return
    const now = performance.now()
    let w = windows.get(session)
    if (w !== undefined && now - w.start >= 60_000) {
      windows.delete(session)
      if (w.leftOut > 0) {
        const n = w.leftOut
        warn(`${n} warn ${n === 1 ? 'line' : 'lines'} for session ${escape(session)} ${n === 1 ? 'was' : 'were'} left out (more than 20 in a minute)`)
      }
      w = undefined
    }
    if (w === undefined) {
      if (windows.size >= 4096) windows.delete(windows.keys().next().value)
      windows.set(session, { start: now, written: 1, leftOut: 0 })
      warn(text())
      return
    }
    if (w.written < 20) {
      w.written += 1
      warn(text())
      return
    }
    w.leftOut += 1
    if (w.leftOut === 1) warn(`further warn lines for session ${escape(session)} are left out for the rest of the minute (more than 20 in a minute)`)
  }
}

/** An `Error` with `code`, without a stack (made at a deadline, it would only show the timer). */
function coded(code, message) {
  const limit = Error.stackTraceLimit
  Error.stackTraceLimit = 0
  const error = new Error(message)
  Error.stackTraceLimit = limit
  error.code = code
  return error
}

/** Replace `object[key]`; returns the restore function. */
function patch(object, key, replacement) {
  const own = Object.getOwnPropertyDescriptor(object, key)
  Object.defineProperty(object, key, { value: replacement, writable: true, configurable: true, enumerable: own?.enumerable ?? false })
  return () => {
    if (Object.getOwnPropertyDescriptor(object, key)?.value !== replacement) return
    if (own) Object.defineProperty(object, key, own)
    else delete object[key]
  }
}

// ---- inspect ----------------------------------------------------------------

/** What a pending entry the guard ended is settled with (the caller gets the guard's error). */
const ENDED = Object.freeze({ ok: true, data: undefined })

/**
 * Guard `registry`'s client queries. Options as harness-guard's
 * `{ deadlineMs, refusalGraceMs, onReport }`, plus `warn(text)` for log lines and
 * `validate` (dsh-tools' `validateJsonSchemaValue`) to word an invalid answer.
 * Returns `dispose()`. `onBegin(startedAt)` and `onLand()`, off unless passed,
 * are for one arm of section 1 only (bench.mjs, `xc`): called where a guarded
 * query begins to wait and where it lands, they let that arm enter harness-guard's
 * wasm where harness-guard's query wrapper does.
 */
export function installPlainInspectGuard(registry, { deadlineMs = 15000, refusalGraceMs = Math.min(1000, deadlineMs), onReport, warn, validate, onBegin, onLand } = {}) {
  const raw = originalOf(registry)
  const previousQuery = raw.query
  const previousResolve = raw.resolveClientQuery
  const pending = raw.pending
  /** Flights by request id; insertion order is due order (one deadline for all). */
  const flights = new Map()
  /** Flights after a page's refusal: due at the end of their grace. */
  const refused = new Set()
  const announcing = []
  const counts = { deadline: 0, refused: 0, unboundAgent: 0, disposed: 0 }
  const reports = []
  const say = logBound(warn)
  let warnedUnannounced = false
  let timer
  let timerDelay = 0
  let armedFor = Infinity

  const report = (kind, flight, reason) => {
    const entry = {
      kind,
      requestId: flight.requestId ?? '',
      sessionId: flight.agentId,
      providerId: flight.providerId ?? '',
      methodName: flight.methodName ?? '',
      deadlineMs,
      at: Date.now(),
      ...(reason === undefined ? {} : { reason: escape(reason) }),
    }
    counts[kind === 'unbound-agent' ? 'unboundAgent' : kind] += 1
    if (reports.length === RECORD_CAP) reports.shift()
    reports.push(entry)
    say(flight.agentId ?? '', () => `client inspect request ${escape(entry.requestId)} (${escape(entry.providerId)}.${escape(entry.methodName)}) of session ${escape(flight.agentId ?? '?')}: ${kind}${reason === undefined ? '' : ` (${escape(reason)})`}`)
    onReport?.(entry)
  }

  const error = (kind, flight) => {
    const name = `${flight.providerId}.${flight.methodName}`
    if (kind === 'deadline') return coded('INSPECT_CLIENT_DEADLINE', `Client inspect query ${name} got no answer from any page within ${deadlineMs}ms. Client Inspect Providers only run inside a live browser page, so a session with no page open — a subagent, a teammate, a headless or ACP run — has nobody to answer it. ${INSTEAD}`)
    if (kind === 'disposed') return coded('INSPECT_CLIENT_GUARD_DISPOSED', `Client inspect query ${name} was abandoned because harness-guard was stopped while it waited for a page. ${INSTEAD}`)
    const r = flight.refusal
    if (!r.invalidOutput) return coded('INSPECT_CLIENT_REFUSED', `Client inspect query ${name} was refused by the page: ${r.reason}: ${r.message}. The page that answered cannot serve this query, so asking again will get the same refusal. ${INSTEAD}`)
    if (r.detail) return coded('INSPECT_CLIENT_REFUSED', `Client inspect query ${name} was refused: the page's answer failed output validation: ${r.detail}. The registry discards such answers, so asking again will get the same refusal. ${INSTEAD}`)
    return coded('INSPECT_CLIENT_REFUSED', `Client inspect query ${name} was refused: the page's answer failed output validation against the method's outputSchema, so the registry discarded it. ${INSTEAD}`)
  }

  /**
   * `raw.ctx` and its `emit`, read once per pass that ends flights (a read through
   * cordis's context proxy makes an `Error`, stack and all, each time); `expire`
   * and `dispose` start each pass afresh.
   */
  let emitter
  const resolved = (requestId) => {
    if (emitter === undefined) {
      const ctx = raw.ctx
      emitter = [ctx, ctx.emit]
    }
    emitter[1].call(emitter[0], 'cordis/inspect-query-resolved', { requestId })
  }

  /** End a flight: the caller's error, the registry's entry removed and settled, the event emitted. */
  const end = (flight, kind) => {
    flights.delete(flight.requestId)
    refused.delete(flight)
    flight.error = error(kind, flight)
    const entry = pending.get(flight.requestId)
    if (entry !== undefined) {
      pending.delete(flight.requestId)
      entry.settle(ENDED)
      try {
        resolved(flight.requestId)
      } catch (thrown) {
        process.nextTick(() => { throw thrown })
      }
    }
    report(kind, flight, kind === 'refused' ? (flight.refusal.invalidOutput ? 'invalid-output' : flight.refusal.reason) : undefined)
  }

  /** The one timer: set for `at` unless set earlier; refreshed when its delay is the same. */
  const arm = (at, now) => {
    if (armedFor <= at) return
    armedFor = at
    const delay = Math.max(1, Math.ceil(at - now))
    if (timer !== undefined && delay === timerDelay) timer.refresh()
    else {
      if (timer !== undefined) clearTimeout(timer)
      timer = setTimeout(expire, delay)
      timerDelay = delay
    }
    if (flights.size === 0) timer.unref()
    else timer.ref()
  }

  const expire = () => {
    armedFor = Infinity
    emitter = undefined
    const now = performance.now()
    for (const flight of refused) if (flight.due <= now) end(flight, 'refused')
    for (const flight of flights.values()) {
      if (flight.deadlineAt > now) break
      end(flight, flight.refusal ? 'refused' : 'deadline')
    }
    let next = Infinity
    for (const flight of refused) next = Math.min(next, flight.due)
    const first = flights.values().next().value
    if (first !== undefined) next = Math.min(next, first.deadlineAt)
    if (next < Infinity) arm(next, now)
    else timer?.unref()
  }

  const land = (flight) => {
    onLand?.()
    flights.delete(flight.requestId)
    refused.delete(flight)
    if (flights.size === 0) timer?.unref()
  }

  /** The caller's promise: the registry's outcome, unless the guard ended the flight first. */
  const waitFor = async (inner, flight) => {
    let value
    try {
      value = await inner
    } catch (thrown) {
      if (flight.error !== undefined) throw flight.error
      land(flight)
      throw thrown
    }
    if (flight.error !== undefined) throw flight.error
    land(flight)
    return value
  }

  const unlisten = raw.ctx.on('cordis/inspect-query', (request) => {
    const flight = announcing.at(-1)
    if (flight !== undefined && flight.requestId === undefined) {
      flight.requestId = request.requestId
      flight.agentId = request.agentId
    }
  })

  const restoreQuery = patch(raw, 'query', function plainGuardedQuery(platform, providerId, methodName) {
    if (platform !== 'client') return Reflect.apply(previousQuery, this, arguments)
    const before = pending.size
    const startedAt = performance.now()
    const flight = { requestId: undefined, agentId: undefined, providerId, methodName, deadlineAt: startedAt + deadlineMs, due: 0, refusal: undefined, error: undefined }
    announcing.push(flight)
    let inner
    try {
      inner = Reflect.apply(previousQuery, this, arguments)
    } finally {
      announcing.pop()
    }
    if (!(inner instanceof Promise)) return inner
    if (flight.requestId === undefined) {
      if (pending.size <= before) return inner
      for (const [requestId, entry] of pending) {
        flight.requestId = requestId
        flight.agentId = entry?.request?.agentId
      }
      if (!warnedUnannounced) {
        warnedUnannounced = true
        warn?.('the registry did not emit cordis/inspect-query while a client query went on waiting; the guard found the request in the registry\'s pending entries instead')
      }
    }
    onBegin?.(startedAt)
    flights.set(flight.requestId, flight)
    if (flights.size === 1) {
      if (timer === undefined || armedFor === Infinity) arm(flight.deadlineAt, startedAt)
      timer.ref()
    }
    return waitFor(inner, flight)
  })

  const restoreResolve = patch(raw, 'resolveClientQuery', function plainGuardedResolve(agent, requestId, resolution) {
    if (agent === null || agent === undefined) {
      const flight = flights.get(requestId)
      report('unbound-agent', flight ?? { requestId, providerId: '', methodName: '' })
      return { accepted: false }
    }
    const result = Reflect.apply(previousResolve, this, arguments)
    if (result?.accepted !== false) return result
    const flight = flights.get(requestId)
    if (flight === undefined || flight.refusal || agent.id !== flight.agentId) return result
    const now = performance.now()
    if (now > flight.deadlineAt) return result
    flight.refusal = resolution?.ok
      ? { invalidOutput: true, detail: explain(flight, resolution) }
      : { reason: String(resolution?.reason ?? '').slice(0, PAGE_TEXT), message: String(resolution?.message ?? '').slice(0, PAGE_TEXT) }
    flight.due = Math.min(now + refusalGraceMs, flight.deadlineAt)
    refused.add(flight)
    arm(flight.due, now)
    return result
  })

  /** Why an answer failed validation, as dsh-tools' validator words it, when it is given. */
  const explain = (flight, resolution) => {
    if (validate === undefined) return undefined
    try {
      const provider = raw.list().find((p) => p.platform === 'client' && p.id === flight.providerId)
      const schema = provider?.methods?.find((m) => m.name === flight.methodName)?.outputSchema
      const problems = schema === undefined ? [] : validate(schema, resolution.data, 'output')
      return problems.length > 0 ? problems.join('; ').slice(0, PAGE_TEXT) : undefined
    } catch {
      return undefined
    }
  }

  const dispose = () => {
    restoreQuery()
    restoreResolve()
    unlisten?.()
    emitter = undefined
    for (const flight of [...flights.values()]) end(flight, 'disposed')
    if (timer !== undefined) clearTimeout(timer)
    timer = undefined
    armedFor = Infinity
  }
  dispose.reports = () => reports.map((r) => ({ ...r }))
  dispose.counts = () => ({ ...counts })
  return dispose
}

// ---- inbox ------------------------------------------------------------------

const REPAIRABLE = new Set(['string', 'number', 'boolean', 'bigint'])
/** Values followed at once, across sessions (as harness-guard's). */
const MAX_TRACKED = 4096

/** A usable message, read defensively; a throwing getter or Proxy trap makes it unusable. */
function isMessage(value) {
  try {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return false
    const id = value.id
    if (typeof id !== 'string' || id.length === 0 || value.role !== 'user' || !Array.isArray(value.content)) return false
    const source = value.source
    return source !== null && typeof source === 'object' && !Array.isArray(source) && typeof source.kind === 'string'
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

/** A detached plain copy through JSON, or `undefined` when there is none. */
function plainCopy(value) {
  try {
    const text = JSON.stringify(value)
    return text === undefined ? undefined : JSON.parse(text)
  } catch {
    return undefined
  }
}

/**
 * Which sightings of a bad value are one value, as harness-guard tells them
 * (src/sightings.rs): by kind and the head of the rendering, within a session,
 * followed as the inbox moves them (written → pending → claimed).
 */
class Sightings {
  entries = []
  next = 0

  push(session, fp, id, place) {
    if (this.entries.length === MAX_TRACKED) this.entries.shift()
    this.entries.push({ session, fp, id, place })
  }

  take(session, fp, place) {
    const i = this.entries.findIndex((e) => e.place === place && e.session === session && e.fp === fp)
    if (i < 0) return undefined
    return this.entries.splice(i, 1)[0].id
  }

  written(session, fp) {
    const id = ++this.next
    this.push(session, fp, id, 'pending')
    return { id, fresh: true }
  }

  swept(session, found) {
    const seen = found.map(({ fp }) => {
      const id = this.take(session, fp, 'pending')
      return id === undefined ? { id: ++this.next, fresh: true } : { id, fresh: false }
    })
    this.entries = this.entries.filter((e) => !(e.place === 'pending' && e.session === session))
    found.forEach(({ fp, stays }, k) => { if (stays) this.push(session, fp, seen[k].id, 'pending') })
    return seen
  }

  claimed(session, fps, byClaim) {
    const seen = fps.map((fp) => {
      const id = byClaim ? this.take(session, fp, 'pending') : (this.take(session, fp, 'claimed') ?? this.take(session, fp, 'pending'))
      return id === undefined ? { id: ++this.next, fresh: true } : { id, fresh: false }
    })
    if (byClaim) {
      this.entries = this.entries.filter((e) => !(e.place === 'claimed' && e.session === session))
      fps.forEach((fp, k) => this.push(session, fp, seen[k].id, 'claimed'))
    }
    return seen
  }

  reset() {
    this.entries = []
  }
}

/**
 * Guard every agent's inbox in `ctx`. Options as harness-guard's inbox section,
 * plus `createUserMessage` and `warn(text)` for log lines. Returns `dispose()`.
 * `onBad(batch, split, inbox)`, for the benchmark's crossing floor only, is
 * called when the claim wrapper is about to sanitize a batch.
 */
export function installPlainInboxGuard(ctx, { mode = 'repair', previewChars = 80, createUserMessage, warn, onBad } = {}) {
  const counts = { repaired: 0, quarantined: 0, observed: 0 }
  const violations = []
  const say = logBound(warn)
  const sightings = new Sightings()
  // Wrapped inboxes, held weakly: a guard must not keep a disposed agent's
  // inbox (and through it, its whole session log) alive.
  const wrapped = new Set()
  let pruned = 0
  /**
   * The usable messages durable writes inserted (the log's own snapshots,
   * deep-frozen): an entry here cannot stop being a message, so a claim looks
   * it up alone. One that is not frozen, with its `source`, is not noted.
   */
  const logged = new WeakSet()
  const noteLogged = (value) => {
    try {
      if (Object.isFrozen(value) && Object.isFrozen(value.source)) logged.add(value)
    } catch { /* not the log's */ }
  }
  /** The units of a rendering a preview and a fingerprint are made of. */
  const units = 2 * previewChars + 2

  /** What tells a value apart within its session: its kind and the head of its rendering. */
  const fingerprint = (value) => {
    const text = render(value)
    return `${kindOf(value)}\u0000${text.length > units ? 1 : 0}\u0000${text.slice(0, units)}`
  }

  const record = (value, action, origin, sessionId, target, index, seq, seen) => {
    const violation = {
      at: Date.now(),
      origin,
      sessionId,
      ...(seq === undefined ? {} : { seq }),
      target,
      index,
      valueKind: kindOf(value),
      preview: preview(value, previewChars),
      action,
      valueId: seen.id,
    }
    if (action !== 'observed' || seen.fresh) counts[action] += 1
    if (violations.length === RECORD_CAP) violations.shift()
    violations.push(violation)
    say(sessionId ?? '', () => `${origin} non-message in session ${escape(sessionId ?? '?')} (${seq === undefined ? '' : `log seq ${seq}, `}${target === undefined ? `claimed position ${index}` : `${escape(String(target))}[${index}]`}): ${violation.valueKind} “${violation.preview}” ${action}`)
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

  /**
   * Sanitize a batch in place (backwards); records in batch order. `deep`: the
   * batch is not the host's own claim alone, so a message-shaped entry is judged
   * by its plain copy, which is handed on in its place. `byClaim`: seen by the
   * claim wrapper (else at the pre-step entry), where a message-shaped entry the
   * durable log did not write is judged so too. Returns the entries left.
   */
  const sanitize = (batch, sessionId, split, deep, byClaim) => {
    let found
    let left = batch.length
    for (let i = batch.length - 1; i >= 0; i -= 1) {
      const value = batch[i]
      if (isMessage(value)) {
        if (!deep && (!byClaim || logged.has(value))) continue
        const copy = plainCopy(value)
        if (isMessage(copy)) {
          if (mode !== 'report') batch[i] = copy
          continue
        }
      }
      let action = 'observed'
      if (mode !== 'report') {
        const message = isMessage(value) ? undefined : repair(value)
        if (message === undefined) {
          batch.splice(i, 1)
          left -= 1
          action = 'quarantined'
        } else {
          batch[i] = message
          action = 'repaired'
        }
      }
      ;(found ??= []).push(i, value, action)
    }
    if (found === undefined) return left
    const fps = []
    for (let k = found.length - 3; k >= 0; k -= 3) fps.push(fingerprint(found[k + 1]))
    const seen = sightings.claimed(sessionId ?? '', fps, byClaim)
    for (let k = found.length - 3, n = 0; k >= 0; k -= 3, n += 1) {
      const i = found[k]
      record(found[k + 1], found[k + 2], 'claimed', sessionId, split === undefined ? undefined : i < split ? 'next-step' : 'next-turn', i, undefined, seen[n])
    }
    return left
  }

  const wrap = (inbox) => {
    const previous = inbox?.claim
    if (typeof previous !== 'function' || previous.plainGuard) return
    // The host's own claim (inherited) hands over its live lists' entries: those
    // its splice put there are the durable log's plain snapshots (`logged`).
    const foreign = Object.hasOwn(inbox, 'claim')
    const guarded = function plainGuardedClaim(target, turn) {
      for (;;) {
        const split = this.nextStep?.length
        const batch = Reflect.apply(previous, this, arguments)
        if (!Array.isArray(batch)) return batch
        const claimed = batch.length
        let left = claimed
        let clean = !foreign
        // The log's own entries are messages (`logged`); anything else is judged
        // (`sanitize`: a message the durable log did not write, by its plain copy).
        for (let i = 0; clean && i < claimed; i += 1) clean = logged.has(batch[i])
        if (!clean) {
          onBad?.(batch, split, this)
          left = sanitize(batch, this.session?.id, split, foreign, true)
        }
        // Judged: the pre-step entry needs not judge this batch's copies again.
        guarded.batch = batch
        guarded.judged = batch.length
        if (!(claimed > 0 && left === 0 && target === 'next-turn' && this.nextTurn?.length > 0)) return batch
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

  /** Repair or drop bad pending entries through the inbox's own splice. */
  const sweep = (inbox, sessionId) => {
    const found = []
    for (const [target, list] of [['next-step', inbox.nextStep], ['next-turn', inbox.nextTurn]]) {
      for (let i = list.length - 1; i >= 0; i -= 1) {
        const value = list[i]
        if (isMessage(value)) continue
        let action = 'observed'
        if (mode !== 'report') {
          const message = repair(value)
          try {
            inbox.splice(target, i, 1, message === undefined ? [] : [message])
            action = message === undefined ? 'quarantined' : 'repaired'
          } catch {}
        }
        found.push({ value, action, target, i, fp: fingerprint(value), stays: action === 'observed' })
      }
    }
    const seen = sightings.swept(sessionId ?? '', found)
    found.forEach((f, k) => record(f.value, f.action, 'pending', sessionId, f.target, f.i, undefined, seen[k]))
  }

  const unlisten = [
    ctx.on('agent/created', (payload) => {
      try { wrap(payload?.agent?.inbox) } catch { /* never veto an agent */ }
    }),
    ctx.on('agent/pre-step', (payload, next) => {
      try {
        const inbox = payload?.agent?.inbox
        wrap(inbox)
        const messages = payload?.messages
        const claim = inbox?.claim
        const vouched = claim?.batch === messages && claim?.judged === messages?.length
        if (Array.isArray(messages)) sanitize(messages, inbox?.session?.id, undefined, !vouched, false)
        if (inbox !== undefined) sweep(inbox, inbox.session?.id)
      } catch { /* the chain goes on */ }
      return next()
    }, { prepend: true }),
    ctx.on('session/event', (session, event) => {
      if (event?.type !== 'agent/inbox/spliced') return
      const inserted = event.data?.inserted
      if (!Array.isArray(inserted)) return
      for (let i = 0; i < inserted.length; i += 1) {
        const value = inserted[i]
        if (isMessage(value)) {
          noteLogged(value)
          continue
        }
        const seen = sightings.written(session?.id ?? '', fingerprint(value))
        record(value, 'observed', 'durable', session?.id, event.data.target, (event.data.start ?? 0) + i, event.seq, seen)
      }
    }),
  ]

  const dispose = () => {
    for (const off of unlisten) off?.()
    for (const ref of wrapped) {
      const inbox = ref.deref()
      if (inbox !== undefined && Object.hasOwn(inbox, 'claim') && inbox.claim.plainGuard) delete inbox.claim
    }
    wrapped.clear()
  }
  dispose.violations = () => violations.map((v) => ({ ...v }))
  dispose.counts = () => ({ ...counts })
  dispose.reset = () => {
    violations.length = 0
    counts.repaired = counts.quarantined = counts.observed = 0
    sightings.reset()
  }
  return dispose
}
