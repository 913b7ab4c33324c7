// Glue the Rust side cannot express: wrappers that hand their `this` over, the
// JavaScript half of each client query in flight (its signals and the caller's
// promise, kept by key), defensive shape reads and a safe renderer. No decision
// is made here: Rust decides when a query ends and how, and what an entry is.

// ---- warn lines ----------------------------------------------------------------

/**
 * Warn lines written while wasm ran, `[warn, text, …]`, logged by the wrapper
 * that entered wasm once it returned: a host logger called from under wasm
 * frames pays several times more for the stack captures it makes (cordis
 * creates an Error in its context proxy).
 */
const lines = []

/** Queue a warn line; the wrapper that entered wasm logs it on the way out. */
export function logLater(warn, text) {
  lines.push(warn, text)
}

/** Log the queued lines. A throwing logger never stops the rest, nor its caller. */
function flushLines() {
  const batch = lines.splice(0)
  for (let i = 0; i < batch.length; i += 2) {
    try {
      batch[i](batch[i + 1])
    } catch {}
  }
}

/** Enter the guard, then log what it queued. */
function enter(dispatch, token, previous, self, args) {
  try {
    return dispatch(token, previous, self, args)
  } finally {
    if (lines.length > 0) flushLines()
  }
}

/** A function that forwards `this` and its arguments to `dispatch`, tagged by `token`. */
export function makeWrapper(dispatch, token, previous) {
  return function harnessGuardWrapper(...args) {
    return enter(dispatch, token, previous, this, args)
  }
}

/**
 * The `agent/pre-step` entry: the guard sees the event, then the rest of the chain
 * runs from here, with no wasm frame beneath it.
 */
export function makePreStep(dispatch, token) {
  return function harnessGuardPreStep(event, next) {
    enter(dispatch, token, undefined, this, [event])
    return typeof next === 'function' ? next() : undefined
  }
}

/**
 * The JavaScript half of every guarded client query in the air, by slot (the low
 * 32 bits of its key). Rust holds the rest of each flight (deadline, refusal,
 * request id) under the same key and decides every ending.
 */
const flights = []
/** Flights whose registry call is running, innermost last. */
const announcing = []
const SLOTS = 2 ** 32

/**
 * One client query, from the wrapper to its ending. The registry gets the signal
 * of `controller`, not the caller's; this object is the `abort` listener on the
 * caller's signal while the query waits, and passes the caller's abort (and
 * reason) on. (`AbortSignal.any` would do the same at several times the cost.)
 */
class Flight {
  constructor(caller, controller, providerId, methodName) {
    this.caller = caller
    this.controller = controller
    this.providerId = providerId
    this.methodName = methodName
    this.request = undefined
    this.key = -1
    this.reject = undefined
  }

  handleEvent() {
    this.controller.abort(this.caller.reason)
  }

  release() {
    this.caller.removeEventListener('abort', this)
  }
}

/**
 * The flight of `key` still in the table, taken off it (its listener on the
 * caller's signal removed); `undefined` if it already left. Rust takes a flight
 * at the moment it lands one, so a slot is never reused while its flight is here.
 */
export function takeFlight(key) {
  const slot = key % SLOTS
  const flight = flights[slot]
  if (flight === undefined || flight.key !== key) return undefined
  flights[slot] = undefined
  flight.release()
  return flight
}

/** The flight of `key`, while it is in the table (for its names and request). */
export function flightOf(key) {
  const flight = flights[key % SLOTS]
  return flight !== undefined && flight.key === key ? flight : undefined
}

const idOf = (value) => (typeof value === 'string' ? value : undefined)

/**
 * The `query` wrapper. Only calls whose first argument is `platform` and that carry
 * a live `AbortSignal` concern the guard. The registry is called from here, not
 * from wasm, so no wasm frame sits under the host's code (cordis creates Errors
 * there, and their stack capture costs more through wasm frames). The guard is
 * entered once the registry returned its promise: `begin(guard, startedAt,
 * requestId, agentId)` starts the flight and returns its key, or -1 to leave the
 * query unguarded. A settled query reports back with `settle(key)`; its value
 * never crosses into wasm.
 */
export function makeQueryWrapper(begin, settle, guard, previous, platform) {
  return function harnessGuardQuery(...args) {
    if (args[0] !== platform) return Reflect.apply(previous, this, args)
    return guardClientQuery(begin, settle, guard, previous, this, args)
  }
}

function guardClientQuery(begin, settle, guard, previous, self, args) {
  const caller = args[5]
  if (!(caller instanceof AbortSignal) || caller.aborted) return Reflect.apply(previous, self, args)
  const startedAt = performance.now()
  const flight = new Flight(caller, new AbortController(), args[1], args[2])
  args[5] = flight.controller.signal
  caller.addEventListener('abort', flight)
  announcing.push(flight)
  let inner
  try {
    inner = Reflect.apply(previous, self, args)
  } catch (error) {
    flight.release()
    throw error
  } finally {
    announcing.pop()
  }
  if (!(inner instanceof Promise)) {
    flight.release()
    return inner
  }
  const key = begin(guard, startedAt, idOf(flight.request?.requestId), idOf(flight.request?.agentId))
  if (lines.length > 0) flushLines()
  if (key < 0) {
    // The guard is gone: the caller's abort still reaches the registry until it settles.
    const release = () => flight.release()
    inner.then(release, release)
    return inner
  }
  flight.key = key
  flights[key % SLOTS] = flight
  return new Promise((resolve, reject) => {
    flight.reject = reject
    inner.then(
      (value) => {
        if (takeFlight(key) !== undefined) {
          settle(key)
          resolve(value)
        }
      },
      (error) => {
        if (takeFlight(key) !== undefined) {
          settle(key)
          reject(error)
        }
      },
    )
  })
}

/**
 * A `cordis/inspect-query` listener: the registry announces a request synchronously
 * inside `query`, so it belongs to the innermost flight whose registry call runs.
 */
export function makeAnnouncer() {
  return function harnessGuardAnnounce(request) {
    const flight = announcing.at(-1)
    if (flight !== undefined && flight.request === undefined) flight.request = request
  }
}

/**
 * An inbox's `claim` wrapper. The claimed batch goes back untouched when every
 * entry has `messageCode` (the one shape code Rust classifies as a usable
 * message); otherwise the guard gets `[args, batch, nextStepLength]`, with the
 * length read before the claim emptied the list.
 */
export function makeClaimWrapper(dispatch, token, previous, messageCode) {
  return function harnessGuardClaim(...args) {
    let split
    try {
      split = this.nextStep.length
    } catch {}
    const batch = Reflect.apply(previous, this, args)
    if (Array.isArray(batch) && batch.every((entry) => shapeCode(entry) === messageCode)) return batch
    return enter(dispatch, token, previous, this, [args, batch, split])
  }
}

/**
 * A `session/event` listener that reaches the guard only for inbox writes that
 * inserted something other than usable messages (`messageCode`, as for claims):
 * a claim's own splices are deletions, and clean writes stay out of wasm.
 */
export function makeInsertObserver(dispatch, token, messageCode) {
  return function harnessGuardObserver(session, event) {
    if (event?.type !== 'agent/inbox/spliced') return
    const inserted = event.data?.inserted
    if (!isArray(inserted) || inserted.length === 0) return
    let clean = false
    try {
      clean = inserted.every((entry) => shapeCode(entry) === messageCode)
    } catch {}
    if (!clean) enter(dispatch, token, undefined, this, [session, event])
  }
}

/**
 * The `resolveClientQuery` wrapper. Only two cases reach the guard: an answer with
 * no bound agent (`unbound`, before the registry sees it) and an answer the registry
 * refused (`refused`, with the registry's result in place of `previous`). Accepted
 * answers go registry → caller without entering wasm.
 */
export function makeResolveWrapper(dispatch, unbound, refused, previous) {
  return function harnessGuardWrapper(...args) {
    if (args[0] === null || args[0] === undefined) return enter(dispatch, unbound, previous, this, args)
    const result = Reflect.apply(previous, this, args)
    return result?.accepted === false ? enter(dispatch, refused, result, this, args) : result
  }
}

// Shape codes: the facts classification needs, one number per inbox entry, read
// defensively here so that a clean batch crosses into wasm once. Rust decodes
// them (`Probe::from_code`) and makes every decision. Low 4 bits: the value's
// type; for objects, 4 bits each for `id`, `role`, `content`, `source` from bit 4.
const FIELD_MISSING = 0, FIELD_EMPTY_STRING = 1, FIELD_STRING = 2, FIELD_EXPECTED = 3, FIELD_ARRAY = 4
const FIELD_OBJECT_KIND_STRING = 5, FIELD_OBJECT = 6, FIELD_OTHER = 7, FIELD_UNREADABLE = 8

function fieldCode(object, key, expected) {
  let value
  try {
    value = object[key]
    if (value === undefined) return FIELD_MISSING
    if (typeof value === 'string') {
      return value === expected ? FIELD_EXPECTED : value.length === 0 ? FIELD_EMPTY_STRING : FIELD_STRING
    }
    if (Array.isArray(value)) return FIELD_ARRAY
    if (typeof value === 'object' && value !== null) {
      return typeof value.kind === 'string' ? FIELD_OBJECT_KIND_STRING : FIELD_OBJECT
    }
    return FIELD_OTHER
  } catch {
    return FIELD_UNREADABLE
  }
}

/** The shape code of one value. */
export function shapeCode(value) {
  switch (typeof value) {
    case 'string': return 0
    case 'number': return Number.isFinite(value) ? 1 : 2
    case 'boolean': return 3
    case 'bigint': return 4
    case 'undefined': return 6
    case 'symbol': return 7
    case 'function': return 8
  }
  if (value === null) return 5
  try {
    if (Array.isArray(value)) return 9
  } catch {
    return 11
  }
  return 10 | fieldCode(value, 'id') << 4 | fieldCode(value, 'role', 'user') << 8
    | fieldCode(value, 'content') << 12 | fieldCode(value, 'source') << 16
}

/** The shape code of every entry of `list`. */
export function shapes(list) {
  const codes = new Uint32Array(list.length)
  for (let i = 0; i < codes.length; i++) codes[i] = shapeCode(list[i])
  return codes
}

/**
 * Perform the endings Rust decided, `[flight, code, message, warn, text, …]`:
 * abort the registry's signal (the registry removes its entry and emits its
 * event), reject the caller with the coded error, log. The error is made here,
 * not in wasm, where its stack capture would cost several times more, and is
 * also the abort reason (the registry does not read it; a reason spares the
 * `DOMException` an abort without one creates). A throwing logger never stops
 * the rest.
 */
export function deliver(work) {
  for (let i = 0; i < work.length; i += 5) {
    const flight = work[i]
    const error = new Error(work[i + 2])
    error.code = work[i + 1]
    flight.controller.abort(error)
    flight.reject?.(error)
    try {
      work[i + 3]?.(work[i + 4])
    } catch {}
  }
}

/**
 * The deadline timer's callback: `tick` (Rust) ends what is due and returns the
 * work, delivered here so the registry's abort path runs with no wasm frame
 * beneath it.
 */
export function makeTicker(tick) {
  return function harnessGuardTick() {
    deliver(tick())
  }
}

/** The user message a repaired scalar becomes, made by the host's `create`. */
export function userMessage(create, text, summary) {
  return create({
    content: [{ type: 'text', text }],
    source: { kind: 'plugin', plugin: 'inbox-input-guard', form: 'notice', summary },
  })
}

/** `String(value)` that never throws. */
export function safeString(value) {
  try {
    return String(value)
  } catch {
    return '[unprintable]'
  }
}

/** A human rendering of any value; never throws. Only a prefix of it crosses into wasm. */
export function render(value) {
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

/** `Array.isArray` that never throws (a revoked Proxy throws there). */
export function isArray(value) {
  try {
    return Array.isArray(value)
  } catch {
    return undefined
  }
}

/** Remove one element of an array in place. */
export function removeAt(array, index) {
  array.splice(index, 1)
}
