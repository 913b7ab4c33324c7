// The JavaScript side of the boundary: trampolines, fact readers, failing open.
//
// Rust makes every decision. What is here carries them out, or could not be
// done from wasm at the same cost:
// - trampolines: functions that hand their `this` and arguments to one of the
//   closures the runtime made once (`dispatch`, `admit`, `begin`, `settle`,
//   `tick`), each named by the entry point it serves;
// - the JavaScript half of each client query in flight (its signals and the
//   caller's promise), stored by the key Rust gave it; the registry is called
//   from here so that no wasm frame sits under the host's code;
// - fact readers: defensive reads of host values into numbers (`shapeCode`),
//   with the field names and the constants Rust hands over in `configure`;
// - failing open: an exception out of wasm is a fault of the guard. The first
//   one is logged once, every flight ends with the code Rust handed over, and
//   from then on every trampoline forwards to what it replaced without entering
//   wasm again. Errors the guard means to throw (a host error passed along, a
//   refused provider input) are handed over through `raise`, never thrown
//   through wasm.

// ---- constants from Rust -----------------------------------------------------------

/** Set once per runtime by `configure` (Rust), before any trampoline exists. */
let K

/** Take the constants Rust owns: field names, event names, the failure error. */
export function configure(constants) {
  K = constants
}

// ---- failing open ---------------------------------------------------------------------

/** The shim's state object: `{ fault }`, shared with the plugin module. */
let shim = { fault: undefined }
/** Loggers of the mounts alive, for the one error line of a fault. */
const loggers = new Set()

/**
 * Share the plugin module's state object: it learns of a fault there, can
 * report one of its own (`fail`), and words its refusal to mount again.
 */
export function bindShim(state) {
  shim = state
  state.fail = fail
  state.refusal = { code: K.refusalCode, message: K.refusalMessage }
}

/** A mount's logger (`{ warn, error }`) while it lives; returns its removal. */
export function watch(logger) {
  loggers.add(logger)
}
export function unwatch(logger) {
  loggers.delete(logger)
}

/** Whether the guard stood down. */
const down = () => shim.fault !== undefined

/**
 * The guard faulted at `point`: stand down. Log one error line (through the mounts'
 * loggers, else `logger`, the one of the mount being applied, else a process
 * warning), end every flight with `INSPECT_CLIENT_GUARD_FAILED`; never enter wasm again.
 */
export function fail(point, error, applying) {
  if (shim.fault === undefined) {
    shim.fault = { point, error }
    const text = `${K?.failedLine ?? 'stood down after an internal fault'} (in ${point}: ${describe(error)})`
    for (const logger of loggers.size > 0 ? loggers : [applying]) {
      try {
        if (logger === undefined) process.emitWarning(`harness-guard: ${text}`, { code: 'HARNESS_GUARD' })
        else logger.error(text)
      } catch {}
    }
  }
  const failed = [...flights.values()]
  flights.clear()
  for (const flight of failed) {
    flight.release()
    // A flight exists only once the runtime is made, so `K` is there.
    end(flight, K.failedCode, K.failedMessage)
  }
}

function describe(error) {
  try {
    return error instanceof Error ? `${error.name}: ${error.message}` : String(error)
  } catch {
    return 'an unprintable error'
  }
}

/** What Rust means to throw, handed over by `raise` and thrown once wasm returned. */
const NOTHING = Symbol('nothing')
let raised = NOTHING

/** Throw `error` from the trampoline once wasm has returned. */
export function raise(error) {
  raised = error
}

// ---- warn lines ---------------------------------------------------------------------

/**
 * Lines written while wasm ran, `[log, text, …]`, logged by the trampoline once
 * wasm returned: a host logger called from under wasm frames pays several times
 * more for the stack captures it makes.
 */
const lines = []

/** Queue a line; the trampoline that entered wasm logs it on the way out. */
export function logLater(log, text) {
  lines.push(log, text)
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

/**
 * Enter the guard at `point`. On a fault, stand down and return `fallback()`;
 * on a raise, throw what Rust handed over; then log what it queued.
 */
function enter(point, fallback, dispatch, token, previous, self, args) {
  if (down()) return fallback()
  let result
  try {
    result = dispatch(token, previous, self, args)
  } catch (error) {
    fail(point, error)
    return fallback()
  } finally {
    if (lines.length > 0) flushLines()
  }
  if (raised !== NOTHING) {
    const error = raised
    raised = NOTHING
    throw error
  }
  return result
}

/** A fresh copy of a fallback answer Rust made (a caller may change what it gets). */
function copy(value) {
  try {
    return structuredClone(value)
  } catch {
    return undefined
  }
}

// ---- trampolines --------------------------------------------------------------------

/**
 * A method or callback served by `dispatch` at `point`. After a fault it answers
 * with a copy of `fallback` (a value, or a table of values by first argument
 * when `byFirst`), or forwards to `previous` when there is one.
 */
export function makeMethod(dispatch, token, point, previous, fallback, byFirst) {
  const otherwise = (self, args) => () => {
    if (typeof previous === 'function') return Reflect.apply(previous, self, args)
    return copy(byFirst ? fallback?.[args[0]] : fallback)
  }
  return function harnessGuardMethod(...args) {
    return enter(point, otherwise(this, args), dispatch, token, previous, this, args)
  }
}

/** The `agent/pre-step` entry: the guard sees the event, then the chain goes on from here. */
export function makePreStep(dispatch, token) {
  return function harnessGuardPreStep(event, next) {
    enter('preStep', noop, dispatch, token, undefined, this, [event])
    return typeof next === 'function' ? next() : undefined
  }
}

const noop = () => undefined

/**
 * An inbox's `claim` wrapper. A batch whose every entry has `messageCode` (the
 * shape Rust classifies as a usable message) goes back untouched; otherwise the
 * guard gets `[args, batch, nextStepLength]`, the length read before the claim.
 * After a fault the host's batch goes back as claimed.
 */
export function makeClaimWrapper(dispatch, token, previous, messageCode) {
  return function harnessGuardClaim(...args) {
    if (down()) return Reflect.apply(previous, this, args)
    let split
    try {
      split = this[K.nextStep].length
    } catch {}
    const batch = Reflect.apply(previous, this, args)
    if (Array.isArray(batch) && batch.every((entry) => shapeCode(entry) === messageCode)) return batch
    return enter('claim', () => batch, dispatch, token, previous, this, [args, batch, split])
  }
}

/**
 * The `session/event` observer: only inbox writes that inserted something other
 * than usable messages reach the guard (a claim's own splices are deletions).
 */
export function makeInsertObserver(dispatch, token, messageCode) {
  return function harnessGuardObserver(session, event) {
    if (down()) return
    let clean = true
    try {
      if (event?.type !== K.splicedEvent) return
      const inserted = event.data?.[K.inserted]
      clean = !Array.isArray(inserted) || inserted.every((entry) => shapeCode(entry) === messageCode)
    } catch {
      clean = false
    }
    if (!clean) enter('sessionEvent', noop, dispatch, token, undefined, this, [session, event])
  }
}

/**
 * The `resolveClientQuery` wrapper. An answer without a bound agent reaches the
 * guard first (`unbound`); an answer the registry refused reaches it after, with
 * the registry's result in place of `previous` (`refused`). Accepted answers go
 * registry → caller without entering wasm.
 */
export function makeResolveWrapper(dispatch, unbound, refused, previous) {
  return function harnessGuardResolve(...args) {
    if (!down() && (args[0] === null || args[0] === undefined)) {
      return enter('resolve', () => Reflect.apply(previous, this, args), dispatch, unbound, previous, this, args)
    }
    const result = Reflect.apply(previous, this, args)
    if (down() || result?.accepted !== false) return result
    return enter('resolve', () => result, dispatch, refused, result, this, args)
  }
}

// ---- client queries -----------------------------------------------------------------

/** The JavaScript half of every guarded client query in the air, by the key Rust gave it. */
const flights = new Map()
/** Flights whose registry call is running, innermost last. */
const announcing = []

/**
 * One client query, from the wrapper to its ending. The registry gets the signal
 * of `controller`, not the caller's; this object is the `abort` listener on the
 * caller's signal while the query waits, and passes the caller's abort on.
 */
class Flight {
  constructor(caller, providerId, methodName) {
    this.caller = caller
    this.controller = new AbortController()
    this.providerId = providerId
    this.methodName = methodName
    this.request = undefined
    this.reject = undefined
  }

  handleEvent() {
    this.controller.abort(this.caller.reason)
  }

  release() {
    this.caller.removeEventListener('abort', this)
  }
}

/** The flight of `key`, taken off the table (its listener removed); `undefined` if gone. */
export function takeFlight(key) {
  const flight = flights.get(key)
  if (flight === undefined) return undefined
  flights.delete(key)
  flight.release()
  return flight
}

/** The flight of `key` while it is in the table (for its names). */
export function flightOf(key) {
  return flights.get(key)
}

const idOf = (value) => (typeof value === 'string' ? value : undefined)

/**
 * The `query` wrapper. A call whose first argument is not the platform Rust
 * guards passes through with one comparison. For the rest, `admit(guard,
 * isSignal, aborted)` says whether the guard takes the call; the registry is
 * called from here; `begin(guard, startedAt, requestId, agentId, isPromise)`
 * returns the flight's key, or -1 to leave the call as it is; `settle(key)`
 * says whether the registry's outcome still reaches the caller.
 */
export function makeQueryWrapper(admit, begin, settle, guard, previous, platform) {
  return function harnessGuardQuery(...args) {
    if (args[0] !== platform || down()) return Reflect.apply(previous, this, args)
    return guardClientQuery(admit, begin, settle, guard, previous, this, args)
  }
}

function guardClientQuery(admit, begin, settle, guard, previous, self, args) {
  const caller = args[5]
  const isSignal = caller instanceof AbortSignal
  let admitted
  try {
    admitted = admit(guard, isSignal, isSignal && caller.aborted)
  } catch (error) {
    fail('begin', error)
    admitted = false
  }
  if (!admitted) return Reflect.apply(previous, self, args)
  const startedAt = performance.now()
  const flight = new Flight(caller, args[1], args[2])
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
  const isPromise = inner instanceof Promise
  let key = -1
  if (!down()) {
    try {
      key = begin(guard, startedAt, idOf(flight.request?.requestId), idOf(flight.request?.agentId), isPromise)
    } catch (error) {
      // The call in hand passes on unguarded (the registry still settles it);
      // the flights already waiting end as every flight does on a fault.
      fail('begin', error)
    }
  }
  if (lines.length > 0) flushLines()
  if (key < 0) {
    // Not the guard's: the caller's abort still reaches the registry until it settles.
    const release = () => flight.release()
    if (isPromise) inner.then(release, release)
    else release()
    return inner
  }
  flights.set(key, flight)
  return new Promise((resolve, reject) => {
    flight.reject = reject
    const landed = () => {
      if (takeFlight(key) === undefined) return false
      if (down()) return true
      try {
        settle(key)
      } catch (error) {
        fail('settle', error)
      }
      return true
    }
    inner.then(
      (value) => landed() && resolve(value),
      (error) => landed() && reject(error),
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
 * End one flight: abort the registry's signal (the registry removes its entry and
 * emits its event), then reject the caller with the coded error. The error is made
 * here, not in wasm, where its stack capture costs several times more, and is also
 * the abort reason (it spares the `DOMException` an abort without one creates).
 */
function end(flight, code, message) {
  const error = new Error(message)
  error.code = code
  try {
    flight.controller.abort(error)
  } catch {}
  flight.reject?.(error)
}

/** Perform the endings Rust decided, `[flight, code, message, …]`. */
export function deliver(work) {
  for (let i = 0; i < work.length; i += 3) end(work[i], work[i + 1], work[i + 2])
}

/**
 * The deadline timer's callback (the one `setImmediate` and the one gloo
 * `Timeout` both land here): `tick` (Rust) ends what is due and returns the work,
 * delivered here so the registry's abort path runs with no wasm frame beneath it.
 * Never throws: a throw out of a timer would end the host process.
 */
export function makeTicker(tick) {
  return function harnessGuardTick() {
    if (down()) return
    let work
    try {
      work = tick()
    } catch (error) {
      fail('tick', error)
      return
    } finally {
      if (lines.length > 0) flushLines()
    }
    deliver(work)
  }
}

// ---- facts --------------------------------------------------------------------------

// Shape codes: the facts classification needs, one number per inbox entry, read
// defensively so that a clean batch crosses into wasm once or never. Rust decodes
// them (`Probe::from_code`) and decides. The field names, the role a message must
// have, and the numbering are Rust's, handed over in `configure` (`K.shape`).

function fieldCode(object, key, expected) {
  const S = K.shape
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
  const S = K.shape
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
      codes[i] = K.shape.types.unreadable
      continue
    }
    codes[i] = shapeCode(entry)
  }
  return codes
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
