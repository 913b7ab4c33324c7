// Client queries in flight: the registry's `query` and `resolveClientQuery`
// wrappers, the JavaScript half of each guarded query, and how a query the
// guard ends is ended.
//
// A `platform: "client"` call is passed to the registry with the caller's own
// arguments, signal included; when the registry waits, `begin` (Rust) gives the
// flight a key and its deadline, and `settle` learns when the registry settled
// it first. The request's ids stay here, with the flight, by that key: only
// numbers cross. When Rust ends flights (the deadline timer's `tick`, a
// disposal), it reads what their reports need once per chunk (`flightTexts`),
// and they are delivered here: the caller gets a coded error, and the
// registry's pending entry is removed and settled as its own abort path does.
//
// The deadline timer is Rust's (timer.rs binds Node's `setTimeout`, its
// `Timeout` and `setImmediate`); what JavaScript keeps of it is its callback,
// `onDeadline`, which enters `tick` and delivers the endings, and, for a fault
// only, the handles of the current instance's timers (`keepTimers`): a faulted
// instance is never entered again, so its runtime cannot clear them itself.
//
// Why JavaScript: the registry is called, and the ending's `Error` made, with no
// wasm frame beneath the host (cordis creates `Error`s inside the registry call,
// and capturing stacks through wasm frames cost about 6 µs per call); the caller's
// promise is one async function (no closure per query); a host query passes
// through with one comparison and never enters wasm.

import { patchWith } from './patches.js'
import { fail, left, life } from './supervisor.js'
import { enter, up } from './trampolines.js'

// ---- the registry's methods ----------------------------------------------------------

/**
 * Wrap `registry.query`. A call whose first argument is not the platform Rust
 * guards passes through with one comparison. For the rest the registry is
 * called as it was, with the caller's own signal; then `begin(guard, startedAt,
 * unannounced)` returns the flight's key, or -1 to leave the call as it is, and
 * `settle(key)` learns when the registry's outcome reached the caller first.
 */
export function patchQuery(registry, owner, guard) {
  const platform = life.K.client
  const pending = registry.pending
  return patchWith('query', registry, 'query', owner, { gen: life.gen, guard }, (previous, b) =>
    // The registry's six parameters by name, and the client query's whole path in
    // one function: a call into a helper with them measured slower per query.
    function harnessGuardQuery(first, providerId, methodName, input, agent, signal) {
      if (arguments.length > 6) return Reflect.apply(previous, this, Array.from(arguments))
      if (first !== platform || b.gen !== life.gen || life.down) return previous.call(this, first, providerId, methodName, input, agent, signal)
      const before = pending.size
      const flight = new Flight(registry, providerId, methodName)
      const started = performance.now()
      const outer = announcing
      announcing = flight
      let inner
      try {
        inner = previous.call(this, first, providerId, methodName, input, agent, signal)
      } finally {
        announcing = outer
      }
      if (!(inner instanceof Promise)) return inner
      const unannounced = flight.request === undefined
      // Not announced: a query the registry refused before waiting (it made no
      // pending entry: nothing more to do), or a registry that does not announce.
      if (unannounced && !newestRequest(flight, pending, before)) return inner
      const requestId = flight.request.requestId
      if (typeof requestId !== 'string') return inner
      let key = -1
      life.depth += 1
      try {
        key = life.begin(b.guard, started, unannounced)
      } catch (error) {
        // The call in hand passes on unguarded; the flights already waiting end as on any fault.
        fail('begin', error)
      } finally {
        left()
      }
      if (key < 0) return inner
      flight.key = key
      flights[key % SLOTS] = flight
      inTable += 1
      if (byRequest !== undefined) byRequest.set(requestId, flight)
      return waitFor(inner, flight)
    })
}

/**
 * Wrap `registry.resolveClientQuery`. An answer without a bound agent reaches the
 * guard first (`unbound`); an answer the registry refused reaches it after, with
 * the registry's result in place of `previous` (`refused`). Accepted answers go
 * registry → caller without entering wasm.
 */
export function patchResolve(registry, owner, unbound, refused) {
  return patchWith('resolve', registry, 'resolveClientQuery', owner, { gen: life.gen, unbound, refused }, (previous, b) =>
    function harnessGuardResolve(agent, requestId, resolution) {
      if (arguments.length !== 3) return resolveWith(b, previous, this, Array.from(arguments))
      if (agent === null || agent === undefined) return resolveWith(b, previous, this, [agent, requestId, resolution])
      const result = previous.call(this, agent, requestId, resolution)
      if (!up(b.gen) || result?.accepted !== false) return result
      return refusedAnswer(b, this, result, agent, requestId, resolution)
    })
}

/** An answer the fast path does not take: without a bound agent, or with other than three arguments. */
function resolveWith(b, previous, self, args) {
  if (up(b.gen) && (args[0] === null || args[0] === undefined)) {
    const forward = () => Reflect.apply(previous, self, args)
    const refusal = enter('resolve', forward, b.unbound, b.gen, previous, self, [args[1], flightFor(args[1])?.key ?? -1])
    return refusal === undefined ? forward() : refusal
  }
  const result = Reflect.apply(previous, self, args)
  if (!up(b.gen) || result?.accepted !== false) return result
  return refusedAnswer(b, self, result, args[0], args[1], args[2])
}

/** The registry refused an answer: only a refusal of a flight's request concerns the guard. */
function refusedAnswer(b, self, result, agent, requestId, resolution) {
  const flight = flightFor(requestId)
  if (flight === undefined) return result
  return enter('resolve', () => result, b.refused, b.gen, result, self, [flight.key, askedBy(flight, agent), resolution])
}

/** Whether `agent` (the one a page answered for) asked the flight's query. */
function askedBy(flight, agent) {
  try {
    return flight !== undefined && agent?.id === flight.request?.agentId
  } catch {
    return false
  }
}

/**
 * A `cordis/inspect-query` listener: the registry announces a request synchronously
 * inside `query`, so it belongs to the innermost flight whose registry call runs.
 */
export function makeAnnouncer() {
  return (request) => {
    const flight = announcing
    if (flight !== undefined && flight.request === undefined) flight.request = request
  }
}

// ---- the flight table ------------------------------------------------------------------

/**
 * The JavaScript half of every guarded client query in the air, by the slot of
 * the key Rust gave it (a key is its slot plus a generation times 2^32: an array
 * indexed by slot instead of a map of non-integer keys).
 */
const flights = []
const SLOTS = 4294967296
/**
 * Each flight by its request id, for the answers that name a request and
 * concern the guard (a refusal, an unbound agent): made from the table when one
 * first asks, kept while flights wait, and dropped with the last of them, so a
 * query answered as asked writes no map entry (a `Map` write and delete per
 * query measured 1% of the query's time).
 */
let byRequest
/** Flights in the table (its array keeps its length: Rust reuses slots). */
let inTable = 0
/** The flight whose registry call is running, the innermost of nested ones (or `undefined`). */
let announcing

/** One client query, from the wrapper to its ending (then `error` is what the caller gets). */
class Flight {
  constructor(registry, providerId, methodName) {
    this.registry = registry
    this.providerId = providerId
    this.methodName = methodName
    this.request = undefined
    this.key = -1
    this.error = undefined
  }
}

/**
 * The flight waiting on `requestId`, if any. With none in the table, an answer
 * is looked up without scanning it or making a map.
 */
function flightFor(requestId) {
  if (byRequest === undefined) {
    if (inTable === 0) return undefined
    byRequest = new Map()
    for (const flight of flights) if (flight !== undefined) byRequest.set(flight.request.requestId, flight)
  }
  return byRequest.get(requestId)
}

/** The flight of `key` while it is in the table. */
function flightOf(key) {
  const flight = flights[key % SLOTS]
  return flight !== undefined && flight.key === key ? flight : undefined
}

/** The flight of `key`, taken off the table; `undefined` if gone. */
function takeFlight(key) {
  const flight = flightOf(key)
  if (flight !== undefined) forget(flight)
  return flight
}

/**
 * What the reports of the flights `keys` (ended by Rust, still in the table
 * until delivered) need, handed over so that a chunk of endings crosses once:
 * each flight's provider, method, request id and asking agent, concatenated,
 * with their lengths in UTF-8 bytes (as the texts reach wasm) written into
 * `lengths`, four per flight (a view of Rust's memory), -1 for a field that
 * is not a string. A flight that is gone keeps the lengths Rust made.
 */
export function flightTexts(keys, lengths) {
  let packed = ''
  for (let i = 0; i < keys.length; i += 1) {
    const flight = flightOf(keys[i])
    if (flight === undefined) continue
    let requestId
    let agentId
    try {
      ;({ requestId, agentId } = flight.request)
    } catch {}
    const at = 4 * i
    packed += text(lengths, at, flight.providerId) + text(lengths, at + 1, flight.methodName)
      + text(lengths, at + 2, requestId) + text(lengths, at + 3, agentId)
  }
  return packed
}

/** One field of `flightTexts`: its text, its length written at `lengths[at]`. */
function text(lengths, at, value) {
  if (typeof value !== 'string') {
    lengths[at] = -1
    return ''
  }
  lengths[at] = Buffer.byteLength(value)
  return value
}

/** Off the table. */
function forget(flight) {
  flights[flight.key % SLOTS] = undefined
  inTable -= 1
  if (byRequest !== undefined && byRequest.delete(flight.request.requestId) && byRequest.size === 0) byRequest = undefined
}

/**
 * The request of a query the registry did not announce: its newest pending
 * entry, when the query made one (rare: a registry that does not announce).
 */
function newestRequest(flight, pending, before) {
  if (pending.size <= before) return false
  for (const [requestId, entry] of pending) flight.request = { requestId, agentId: entry?.request?.agentId }
  return true
}

/**
 * The caller's promise: the registry's outcome, unless the guard ended the
 * flight first (then its error). No closure and no promise beyond this one.
 */
async function waitFor(inner, flight) {
  let value
  try {
    value = await inner
  } catch (error) {
    if (flight.error !== undefined) throw flight.error
    landed(flight)
    throw error
  }
  if (flight.error !== undefined) throw flight.error
  landed(flight)
  return value
}

/**
 * The registry settled a flight first (the guard has not ended it, which would
 * have taken it off): off the table, and Rust learns it.
 */
function landed(flight) {
  forget(flight)
  if (life.down) return
  life.depth += 1
  try {
    life.settle(flight.key)
  } catch (error) {
    fail('settle', error)
  } finally {
    left()
  }
}

// ---- endings -------------------------------------------------------------------------------

/** An `Error` with `code`, without a stack (made at a deadline, it would only show the timer). */
function coded(code, message) {
  const limit = Error.stackTraceLimit
  let error
  try {
    Error.stackTraceLimit = 0
    error = new Error(message)
  } catch {
    error = new Error(message)
  } finally {
    try {
      Error.stackTraceLimit = limit
    } catch {}
  }
  error.code = code
  return error
}

/**
 * What a pending entry the guard ended is settled with: its wait ends quietly
 * (the registry's own result is never read; the caller gets the guard's error),
 * so the registry builds no error of its own per query. Shared, and frozen.
 */
const ENDED = Object.freeze({ ok: true, data: undefined })

/**
 * End one flight: the caller gets the coded error, and the registry's pending
 * entry is removed and settled, as its own abort path removes and settles it
 * (its wait ended, which takes its listener off the caller's signal;
 * `cordis/inspect-query-resolved` emitted once, through `events`), so nothing
 * of the query stays.
 */
function end(flight, code, message, events) {
  flight.error = coded(code, message)
  const requestId = flight.request?.requestId
  let entry
  try {
    const { pending } = flight.registry
    entry = pending.get(requestId)
    if (entry === undefined) return
    pending.delete(requestId)
    entry.settle(ENDED)
  } catch {
    return
  }
  try {
    events.resolved(flight.registry, requestId)
  } catch (error) {
    // A throwing listener of the event: reported as uncaught, as the registry's
    // own abort path (an AbortSignal listener) reports it, and never thrown here.
    process.nextTick(() => {
      throw error
    })
  }
}

/**
 * Emits `cordis/inspect-query-resolved` on a registry's context, for one run of
 * endings: its `ctx` and `ctx.emit` are read once per registry in the run, not
 * per ending (a read through cordis's context proxy makes an `Error`, stack and
 * all, each time). A read that throws is tried again at the next ending.
 */
class Resolved {
  registry = undefined
  ctx = undefined
  emit = undefined

  resolved(registry, requestId) {
    if (registry !== this.registry) {
      const ctx = registry.ctx
      this.emit = ctx.emit
      this.ctx = ctx
      this.registry = registry
    }
    this.emit.call(this.ctx, life.K.resolvedEvent, { requestId })
  }
}

/** Perform the endings Rust decided, `[key, code, message, …]`. */
export function deliver(work) {
  const events = new Resolved()
  for (let i = 0; i < work.length; i += 3) {
    const flight = takeFlight(work[i])
    if (flight !== undefined) end(flight, work[i + 1], work[i + 2], events)
  }
}

// ---- the deadline timer's callback ------------------------------------------------------------

/**
 * The deadline timer's callback (Rust sets it on the timer): `tick` ends what is
 * due and returns the work, delivered here so the registry's clean-up runs with
 * no wasm frame beneath it; the lines and reports of those endings follow their
 * delivery. Never throws: a throw out of a timer would end the host process.
 */
export function onDeadline() {
  if (life.down) return
  life.depth += 1
  try {
    deliver(life.tick())
  } catch (error) {
    fail('tick', error)
  } finally {
    left()
  }
}

/** The current instance's deadline `Timeout` and `Immediate`, kept for a fault only. */
let timers = [undefined, undefined]

/** Rust's note of its current timers (either may be `undefined`). */
export function keepTimers(timeout, immediate) {
  timers = [timeout, immediate]
}

// A fault: every flight ends at once, without entering wasm, and the faulted
// instance's timers are cleared (its runtime is never entered again).
life.standDown.push(() => {
  const failed = flights.filter((flight) => flight !== undefined)
  flights.length = 0
  inTable = 0
  byRequest = undefined
  announcing = undefined
  const events = new Resolved()
  for (const flight of failed) end(flight, life.K.failedCode, life.K.failedMessage, events)
  const [timeout, immediate] = timers
  timers = [undefined, undefined]
  if (timeout !== undefined) clearTimeout(timeout)
  if (immediate !== undefined) clearImmediate(immediate)
})
