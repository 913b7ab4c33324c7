// The JavaScript side of the boundary: trampolines, patches, flights, the timer, fact readers.
//
// Rust makes every decision. What is here carries them out, or could not be
// done from wasm at the same cost:
// - trampolines: functions handed to the host that pass their `this` and
//   arguments to the current instance's `dispatch` with the token Rust gave
//   them. Each belongs to the instance (generation) that made it: once that
//   instance faulted it forwards to what it replaced and never enters wasm
//   again (see supervisor.js);
// - patches: the wrappers put on host objects by marker, kept here by target
//   and key so that a fresh instance re-points a wrapper the faulted one left
//   instead of stacking a second one over it;
// - the JavaScript half of each client query in flight, stored by the key Rust
//   gave it; the registry is called from here so that no wasm frame sits under
//   the host's code, and a query the guard ends is settled through the
//   registry's own pending entry;
// - the one deadline timer, a Node `Timeout` armed, refreshed and let go as
//   Rust says;
// - fact readers: defensive reads of host values into numbers (`shapeCode`)
//   and plain copies, with the field names Rust hands over in `configure`.
// Errors the guard means to throw (a host error passed along, a refused
// provider input) are handed over through `raise`, never thrown through wasm;
// anything else that comes out of wasm is a fault of the guard. Every call into
// wasm made here counts itself in `life.depth` and leaves through `left()`
// (supervisor.js); what the guard has for host code (warn lines, `onReport`
// calls) is queued while it runs and handed over at the outermost exit, so host
// code never runs beneath a wasm frame of the guard on their account.

import { fail, faultFacts, hooks, left, life } from './supervisor.js'

/**
 * A new instance: its constants (field names, event names, texts, and the
 * shape-code layout), and the entry points every trampoline of this generation calls.
 */
export function configure(constants, shape, repairSource, [dispatch, claim, begin, settle, tick]) {
  life.gen += 1
  life.K = { ...constants, shape, repairSource }
  life.dispatch = dispatch
  life.claim = claim
  life.begin = begin
  life.settle = settle
  life.tick = tick
}

/** Whether a trampoline of generation `gen` may enter wasm now. */
const up = (gen) => gen === life.gen && !life.down

life.standDown = () => {
  raised = NOTHING
  const failed = [...flights.values()]
  flights.clear()
  byRequest.clear()
  announcing.length = 0
  for (const flight of failed) end(flight, life.K.failedCode, life.K.failedMessage)
  clearTimer()
}

life.atExit = () => {
  if (lines.length > 0) drain(lines)
  if (reports.length > 0) drain(reports)
}

/** What Rust means to throw, handed over by `raise` and thrown once wasm returned. */
const NOTHING = Symbol('nothing')
let raised = NOTHING

/** Throw `error` from the trampoline once wasm has returned. */
export function raise(error) {
  raised = error
}

/** Throw what Rust raised while it ran, now that wasm has returned. */
function rethrow() {
  if (raised === NOTHING) return
  const error = raised
  raised = NOTHING
  throw error
}

// ---- warn lines ---------------------------------------------------------------------

/**
 * Lines written while wasm ran, `[log, text, …]`, logged at the outermost exit
 * from wasm (`life.atExit`): a host logger called from under wasm frames pays
 * several times more for the stack captures it makes.
 */
const lines = []

/** Queue a line; the outermost exit from wasm logs it. */
export function logLater(log, text) {
  lines.push(log, text)
}

/**
 * Call what `queue` holds, `[f, argument, …]`, in order (queued lines: a logger
 * and its text; queued reports: `onReport` and its report). A throw never stops
 * the rest, nor its caller: it is dropped.
 */
function drain(queue) {
  const batch = queue.splice(0)
  for (let i = 0; i < batch.length; i += 2) {
    try {
      batch[i](batch[i + 1])
    } catch {}
  }
}

/**
 * Reports for a programmatic install's `onReport`, `[onReport, report, …]`,
 * handed over once the guard left wasm: after the endings they report were
 * delivered, so whatever `onReport` does (dispose the guard, start a query,
 * throw) no query is left waiting on its account.
 */
const reports = []

/** Queue a report for `onReport`. */
export function reportLater(onReport, report) {
  reports.push(onReport, report)
}


/**
 * Enter the current instance with `token`, for a trampoline of generation `gen`.
 * When it may not (stood down, or made by an instance since replaced), or on a
 * fault, return `fallback()`; on a raise, throw what Rust handed over.
 */
function enter(point, fallback, token, gen, previous, self, args) {
  if (!up(gen)) return fallback()
  let result
  life.depth += 1
  try {
    result = life.dispatch(token, previous, self, args)
  } catch (error) {
    fail(point, error)
    return fallback()
  } finally {
    left()
  }
  rethrow()
  return result
}

/**
 * A fresh copy of a fallback answer Rust made (a caller may change what it
 * gets). An answer that says the guard failed also says what the supervisor
 * knows; once it gave up, the command's answer says so.
 */
function copy(value) {
  let out
  try {
    out = structuredClone(value)
  } catch {
    return undefined
  }
  if (out === null || typeof out !== 'object') return out
  if (Object.hasOwn(out, life.K.failedKey)) {
    Object.assign(out, faultFacts())
    if (life.gaveUp) out[life.K.failedKey] = `${life.K.failedLine}; ${life.K.gaveUpLine}`
  } else if (life.gaveUp && typeof out.text === 'string') {
    // The command's answer, in words.
    out.text = `${life.K.failedLine}; ${life.K.gaveUpLine}`
  }
  return out
}

// ---- trampolines --------------------------------------------------------------------

/**
 * A method or callback served by `token` at `point`. When it may not enter wasm
 * it answers with a copy of `fallback` (a value, or a table of values by first
 * argument when `byFirst`), or forwards to `previous` when there is one.
 */
export function makeMethod(token, point, previous, fallback, byFirst) {
  const gen = life.gen
  return function harnessGuardMethod(...args) {
    const otherwise = () => {
      if (typeof previous === 'function') return Reflect.apply(previous, this, args)
      return copy(byFirst ? fallback?.[args[0]] : fallback)
    }
    return enter(point, otherwise, token, gen, previous, this, args)
  }
}

/** The `agent/pre-step` entry: the guard sees the event, then the chain goes on from here. */
export function makePreStep(token) {
  const gen = life.gen
  return function harnessGuardPreStep(event, next) {
    enter('preStep', noop, token, gen, undefined, this, [event])
    return typeof next === 'function' ? next() : undefined
  }
}

const noop = () => undefined

/**
 * The `session/event` observer: only inbox writes that inserted something other
 * than usable messages reach the guard (a claim's own splices are deletions).
 */
export function makeInsertObserver(token, messageCode) {
  const gen = life.gen
  return function harnessGuardObserver(session, event) {
    if (!up(gen)) return
    let clean = true
    try {
      if (event?.type !== life.K.splicedEvent) return
      const inserted = event.data?.[life.K.inserted]
      clean = !Array.isArray(inserted) || inserted.every((entry) => shapeCode(entry) === messageCode)
    } catch {
      clean = false
    }
    if (!clean) enter('sessionEvent', noop, token, gen, undefined, this, [session, event])
  }
}

// ---- patches ---------------------------------------------------------------------------

const PATCHED = Symbol.for('harness-guard.patched')
/** Patch records by target, then key. */
const byTarget = new WeakMap()
/** Every patch record in place, of every generation. */
const records = new Set()

/** Whether `method` is a wrapper some harness-guard installed (any copy, any version). */
const isPatched = (method) => {
  try {
    return typeof method === 'function' && typeof method[PATCHED] === 'object' && method[PATCHED] !== null
  } catch {
    return false
  }
}

/**
 * Put the wrapper `make(previous, binding)` in `target[key]`, marked
 * `{ original, owner }`, and return its record. When this instance's wrapper is
 * there already, or another copy's, return `undefined`. When a wrapper an earlier
 * instance left is there (in the slot, or under another plugin's patch), re-point
 * it to `binding` and return its record instead: a wrapper is never stacked on one
 * of ours. Throws a `TypeError` when the slot holds no function or refuses the wrapper.
 */
function patchWith(kind, target, key, owner, binding, make) {
  const previous = target[key]
  if (typeof previous !== 'function') throw new TypeError(`${key} is not a function`)
  const known = byTarget.get(target)?.get(key)
  if (known !== undefined) {
    if (known.binding.gen === life.gen) return undefined
    Object.assign(known.binding, binding)
    known.owner = owner
    return known
  }
  if (isPatched(previous)) return undefined
  const own = Reflect.getOwnPropertyDescriptor(target, key)
  const wrapper = make(previous, binding, own === undefined)
  Object.defineProperty(wrapper, PATCHED, { value: Object.freeze({ original: previous, owner: life.K.owner }) })
  const placed = Reflect.defineProperty(target, key, {
    value: wrapper, writable: true, configurable: true, enumerable: own?.enumerable ?? false,
  })
  if (!placed) throw new TypeError(`${key} cannot be replaced`)
  const record = { kind, target: new WeakRef(target), key, wrapper, own, binding, owner }
  let keys = byTarget.get(target)
  if (keys === undefined) byTarget.set(target, keys = new Map())
  keys.set(key, record)
  records.add(record)
  return record
}

/**
 * Take a patch off: its wrapper forwards from now on wherever it sits, and the
 * slot gets its previous method back if it still holds the wrapper (a later
 * patch over ours is left alone). Idempotent.
 */
export function unpatch(record) {
  if (!records.delete(record)) return
  record.binding.gen = 0
  const target = record.target.deref()
  if (target === undefined) return
  byTarget.get(target)?.delete(record.key)
  try {
    if (Reflect.getOwnPropertyDescriptor(target, record.key)?.value !== record.wrapper) return
    if (record.own !== undefined) Reflect.defineProperty(target, record.key, record.own)
    else Reflect.deleteProperty(target, record.key)
  } catch {}
}

/** Whether the patched object is still alive. */
export function patchAlive(record) {
  return record.target.deref() !== undefined
}

/** The live targets of `owner`'s `kind` patches that an earlier instance made. */
export function stalePatches(owner, kind) {
  const out = []
  for (const record of records) {
    if (record.owner !== owner || record.kind !== kind || record.binding.gen === life.gen) continue
    const target = record.target.deref()
    if (target === undefined) unpatch(record)
    else out.push(target)
  }
  return out
}

hooks.unpatchOwner = (owner) => {
  for (const record of records) if (record.owner === owner) unpatch(record)
}
hooks.unpatchStale = () => {
  for (const record of records) if (record.binding.gen !== life.gen) unpatch(record)
}

// ---- inbox claims ------------------------------------------------------------------------

/** Batches the wrappers returned with every entry judged, and their lengths (see `vouched`). */
const judged = new WeakMap()

/**
 * Wrap `inbox.claim`. A batch the host's own claim produced whose every entry has
 * `messageCode` (the shape Rust classifies as a usable message) goes back
 * untouched; otherwise the guard gets `[args, batch, nextStepLength, codes,
 * foreign]`: the length read before the claim, the shape codes already read
 * (`undefined`: every entry has `messageCode`; `null`: the batch could not be
 * read), and whether something other than the host's own claim produced the
 * batch. After a fault the host's batch goes back as claimed.
 */
export function patchClaim(inbox, owner, token, messageCode) {
  return patchWith('claim', inbox, 'claim', owner, { gen: life.gen, token }, (previous, b, inherited) => {
    // An inherited method is the host's own `Inbox.prototype.claim`: its entries
    // were written through the host's splice, which stores plain copies.
    const foreign = !inherited
    return function harnessGuardClaim(...args) {
      if (!up(b.gen)) return Reflect.apply(previous, this, args)
      for (;;) {
        const split = lengthOf(this, life.K.nextStep)
        const batch = Reflect.apply(previous, this, args)
        if (!isArray(batch)) return batch
        let codes
        try {
          codes = codesUnlessClean(batch, messageCode)
        } catch {
          codes = null
        }
        if (codes === undefined && !foreign) {
          judged.set(batch, batch.length)
          return batch
        }
        // Rust sanitizes the batch in place, and says whether to claim again (it
        // emptied a turn's batch while more turns wait).
        const again = enterClaim(b, this, batch, split, codes, foreign, args[0] === life.K.nextTurn)
        if (up(b.gen)) judged.set(batch, batch.length)
        if (!again) return batch
      }
    }
  })
}

/** `target[key].length`, or -1 when it cannot be read. */
function lengthOf(target, key) {
  try {
    const n = target[key].length
    return typeof n === 'number' ? n : -1
  } catch {
    return -1
  }
}

/** An inbox's session id, or `undefined`. */
function sessionIdOf(inbox) {
  try {
    const id = inbox.session?.id
    return typeof id === 'string' ? id : undefined
  } catch {
    return undefined
  }
}

/**
 * Enter the current instance's claim entry: `(token, batch, split, nextTurn,
 * codes, flags, session)`, numbers and one string only (the flags are Rust's,
 * `K.claimFlags`). Returns whether to claim again; on a fault the batch goes back
 * as claimed.
 */
function enterClaim(b, inbox, batch, split, codes, foreign, forTurn) {
  if (!up(b.gen)) return false
  const F = life.K.claimFlags
  const flags = (foreign ? F.foreign : 0) | (forTurn ? F.forTurn : 0)
    | (codes === null ? F.unread : 0) | (codes === undefined ? F.clean : 0)
  let again = false
  life.depth += 1
  try {
    again = life.claim(b.token, batch, split, lengthOf(inbox, life.K.nextTurnList), codes ?? NO_CODES, flags, sessionIdOf(inbox))
  } catch (error) {
    fail('claim', error)
    return false
  } finally {
    left()
  }
  rethrow()
  return again
}

const NO_CODES = new Uint32Array(0)

/** `undefined` when every entry of `batch` has `messageCode`; else every entry's code. */
function codesUnlessClean(batch, messageCode) {
  let codes
  for (let i = 0; i < batch.length; i++) {
    const code = shapeCode(batch[i])
    if (codes === undefined) {
      if (code === messageCode) continue
      codes = new Uint32Array(batch.length)
      codes.fill(messageCode, 0, i)
    }
    codes[i] = code
  }
  return codes
}

/**
 * Whether `list` is a batch a claim wrapper returned, at the length it had then:
 * its message-shaped entries were judged already (see `plainCopy`).
 */
export function vouched(list) {
  try {
    return judged.get(list) === list.length
  } catch {
    return false
  }
}

// ---- the registry -----------------------------------------------------------------------

/**
 * Wrap `registry.resolveClientQuery`. An answer without a bound agent reaches the
 * guard first (`unbound`); an answer the registry refused reaches it after, with
 * the registry's result in place of `previous` (`refused`). Accepted answers go
 * registry → caller without entering wasm.
 */
export function patchResolve(registry, owner, unbound, refused) {
  return patchWith('resolve', registry, 'resolveClientQuery', owner, { gen: life.gen, unbound, refused }, (previous, b) =>
    function harnessGuardResolve(...args) {
      if (up(b.gen) && (args[0] === null || args[0] === undefined)) {
        const forward = () => Reflect.apply(previous, this, args)
        const refusal = enter('resolve', forward, b.unbound, b.gen, previous, this, [args[1], byRequest.get(args[1]) ?? -1])
        return refusal === undefined ? forward() : refusal
      }
      const result = Reflect.apply(previous, this, args)
      if (!up(b.gen) || result?.accepted !== false) return result
      // Only a refusal of a flight's request concerns the guard.
      const key = byRequest.get(args[1])
      if (key === undefined) return result
      return enter('resolve', () => result, b.refused, b.gen, result, this, [key, askedBy(flights.get(key), args[0]), args[2]])
    })
}

/** Whether `agent` (the one a page answered for) asked the flight's query. */
function askedBy(flight, agent) {
  try {
    return flight !== undefined && agent?.id === flight.request?.agentId
  } catch {
    return false
  }
}

/** The JavaScript half of every guarded client query in the air, by the key Rust gave it. */
const flights = new Map()
/** The key of each flight, by its request id. */
const byRequest = new Map()
/** Flights whose registry call is running, innermost last. */
const announcing = []

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

/** The flight of `key`, taken off the table; `undefined` if gone. */
export function takeFlight(key) {
  const flight = flights.get(key)
  if (flight !== undefined) forget(flight)
  return flight
}

/**
 * Off the table. The deadline timer keeps the process alive exactly while a
 * flight is on it: let go with the last one, held again with the next.
 */
function forget(flight) {
  flights.delete(flight.key)
  byRequest.delete(flight.request.requestId)
  if (flights.size === 0) timer?.unref()
}

/** The flight of `key` while it is in the table (for its names). */
export function flightOf(key) {
  return flights.get(key)
}

/**
 * Wrap `registry.query`. A call whose first argument is not the platform Rust
 * guards passes through with one comparison. For the rest the registry is
 * called as it was, with the caller's own signal; then `begin(guard, startedAt,
 * unannounced)` returns the flight's key, or -1 to leave the call as it is, and
 * `settle(key)` learns when the registry's outcome reached the caller first. The
 * request's ids stay here, with the flight.
 */
export function patchQuery(registry, owner, guard) {
  const platform = life.K.client
  return patchWith('query', registry, 'query', owner, { gen: life.gen, guard }, (previous, b) =>
    function harnessGuardQuery(...args) {
      if (args[0] !== platform || !up(b.gen)) return Reflect.apply(previous, this, args)
      return guardClientQuery(b, previous, registry, this, args)
    })
}

function guardClientQuery(b, previous, registry, self, args) {
  const pending = registry.pending
  const before = pending.size
  const flight = new Flight(registry, args[1], args[2])
  const started = performance.now()
  announcing.push(flight)
  let inner
  try {
    inner = Reflect.apply(previous, self, args)
  } finally {
    announcing.pop()
  }
  if (!(inner instanceof Promise)) return inner
  let unannounced = false
  if (flight.request === undefined) {
    // Not announced: a query the registry refused before waiting (it made no
    // pending entry), or a registry that does not announce (its newest entry).
    if (pending.size <= before) return inner
    flight.request = newestRequest(pending)
    unannounced = true
  }
  const requestId = flight.request?.requestId
  if (typeof requestId !== 'string') return inner
  let key = -1
  if (up(b.gen)) {
    life.depth += 1
    try {
      key = life.begin(b.guard, started, unannounced)
    } catch (error) {
      // The call in hand passes on unguarded; the flights already waiting end as on any fault.
      fail('begin', error)
    } finally {
      left()
    }
  }
  if (key < 0) return inner
  flight.key = key
  flights.set(key, flight)
  byRequest.set(requestId, key)
  if (flights.size === 1) timer?.ref()
  return waitFor(inner, flight)
}

/** The request of the newest pending entry (a registry that does not announce; rare). */
function newestRequest(pending) {
  let last
  for (const [requestId, entry] of pending) last = { requestId, agentId: entry?.request?.agentId }
  return last
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
 * `cordis/inspect-query-resolved` emitted once), so nothing of the query stays.
 */
function end(flight, code, message) {
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
    flight.registry.ctx.emit(life.K.resolvedEvent, { requestId })
  } catch (error) {
    // A throwing listener of the event: reported as uncaught, as the registry's
    // own abort path (an AbortSignal listener) reports it, and never thrown here.
    process.nextTick(() => {
      throw error
    })
  }
}

/** Perform the endings Rust decided, `[flight, code, message, …]`. */
export function deliver(work) {
  for (let i = 0; i < work.length; i += 3) end(work[i], work[i + 1], work[i + 2])
}

// ---- the deadline timer -------------------------------------------------------------------

/** The one deadline timer: a Node `Timeout` kept across arms (refreshed, not remade). */
let timer
let timerDelay = -1
let immediate

/**
 * Arm the timer for `delay` ms (0: work already due, at the next turn of the
 * loop). Rust says when it fires; whether it keeps the process alive follows the
 * flight table (see `forget`): a timer whose flights settled stays set, unref'd,
 * and a firing then finds nothing due.
 */
export function armTimer(delay) {
  if (immediate !== undefined) {
    clearImmediate(immediate)
    immediate = undefined
  }
  if (delay <= 0) {
    immediate = setImmediate(onTimer)
    return
  }
  if (timer !== undefined && timerDelay === delay) {
    timer.refresh()
  } else {
    if (timer !== undefined) clearTimeout(timer)
    timer = setTimeout(onTimer, delay)
    timerDelay = delay
  }
  if (flights.size === 0) timer.unref()
  else timer.ref()
}

/** Clear the deadline timer (stand-down, and disposal of the last waiting guard). */
export function clearTimer() {
  if (immediate !== undefined) clearImmediate(immediate)
  immediate = undefined
  if (timer !== undefined) clearTimeout(timer)
  timer = undefined
  timerDelay = -1
}

/**
 * The timer's callback: `tick` (Rust) ends what is due and returns the work,
 * delivered here so the registry's clean-up runs with no wasm frame beneath it;
 * the lines and reports of those endings follow their delivery. Never throws:
 * a throw out of a timer would end the host process.
 */
function onTimer() {
  immediate = undefined
  if (life.down || life.tick === undefined) return
  life.depth += 1
  try {
    deliver(life.tick())
  } catch (error) {
    fail('tick', error)
  } finally {
    left()
  }
}

// ---- facts --------------------------------------------------------------------------

// Shape codes: the facts classification needs, one number per inbox entry, read
// defensively so that a clean batch crosses into wasm once or never. Rust decodes
// them (`Probe::from_code`) and decides. The field names, the role a message must
// have, and the numbering are Rust's, handed over in `configure` (`K.shape`).

function fieldCode(object, key, expected) {
  const S = life.K.shape
  let value
  try {
    value = object[key]
    if (value === undefined) return S.missing
    if (typeof value === 'string') {
      return value === expected ? S.expected : value.length === 0 ? S.emptyString : S.string
    }
    if (Array.isArray(value)) return S.array
    if (typeof value === 'object' && value !== null) {
      return typeof value[S.kindKey] === 'string' ? S.objectKindString : S.object
    }
    return S.other
  } catch {
    return S.unreadable
  }
}

/** The shape code of one value. */
export function shapeCode(value) {
  const S = life.K.shape
  const type = typeof value
  if (type !== 'object' || value === null) {
    if (type === 'number') return Number.isFinite(value) ? S.types.finite : S.types.nonFinite
    return value === null ? S.types.null : S.types[type]
  }
  try {
    if (Array.isArray(value)) return S.types.array
  } catch {
    return S.types.unreadable
  }
  const [id, role, content, source] = S.fields
  return S.types.object | fieldCode(value, id) << S.shifts[0] | fieldCode(value, role, S.role) << S.shifts[1]
    | fieldCode(value, content) << S.shifts[2] | fieldCode(value, source) << S.shifts[3]
}

/** The shape code of every entry of `list`; none when its length cannot be read (a trapping Proxy). */
export function shapes(list) {
  let codes
  try {
    codes = new Uint32Array(list.length)
  } catch {
    return new Uint32Array(0)
  }
  for (let i = 0; i < codes.length; i++) {
    let entry
    try {
      entry = list[i]
    } catch {
      codes[i] = life.K.shape.types.unreadable
      continue
    }
    codes[i] = shapeCode(entry)
  }
  return codes
}

/**
 * A detached plain copy of `value` as the host would store it (through JSON: each
 * field read once, no Proxy, no accessor, no cycle), or `undefined` when it has
 * none (a cycle, a trapping Proxy, a throwing getter, a bigint).
 */
export function plainCopy(value) {
  try {
    const text = JSON.stringify(value)
    return text === undefined ? undefined : JSON.parse(text)
  } catch {
    return undefined
  }
}

/**
 * The user message a scalar becomes (Rust decided it is one): made by the host's
 * `createUserMessage` from `String(value)` verbatim and the source Rust handed
 * over, with `summary`. Rust judges what comes back; `undefined` if the host threw.
 */
export function repairMessage(create, value, summary) {
  try {
    const text = typeof value === 'string' ? value : String(value)
    return create({ content: [{ type: 'text', text }], source: { ...life.K.repairSource, summary } })
  } catch {
    return undefined
  }
}

/**
 * Repair `batch[i]` in place (`repairMessage`), and say how it went, in Rust's
 * codes (`K.repair`): `repaired`; `refused` when the batch refused the message (a
 * frozen array); `unmade` when the host made no usable message (`K.messageCode`
 * is the one shape Rust calls usable).
 */
export function repairAt(batch, i, create, summary) {
  const R = life.K.repair
  const message = repairMessage(create, batch[i], summary)
  if (message === undefined || shapeCode(message) !== life.K.messageCode) return R.unmade
  try {
    batch[i] = message
    return batch[i] === message ? R.repaired : R.refused
  } catch {
    return R.refused
  }
}

/** Remove `batch[i]` in place; whether the batch let go of it. */
export function dropAt(batch, i) {
  try {
    batch.splice(i, 1)
    return true
  } catch {
    return false
  }
}

/** The first `units` UTF-16 units of `render(value)` (Rust keeps what a preview needs). */
export function renderHead(value, units) {
  return render(value).slice(0, units)
}

/** `renderHead(list[i], units)`. */
export function renderAt(list, i, units) {
  let value
  try {
    value = list[i]
  } catch {
    return render(undefined).slice(0, units)
  }
  return render(value).slice(0, units)
}

/** A plain-data copy of a config value (its getters read once); throws what cannot be copied. */
export function snapshot(value) {
  return structuredClone(value)
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
