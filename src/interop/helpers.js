// Glue the Rust side cannot express: a wrapper that hands its `this` over,
// a promise continuation that reports back by slot, and a safe renderer.
// No guard logic lives here.

/** A function that forwards `this` and its arguments to `dispatch`, tagged by `token`. */
export function makeWrapper(dispatch, token, previous) {
  return function harnessGuardWrapper(...args) {
    return dispatch(token, previous, this, args)
  }
}

/**
 * The `query` wrapper. Only calls whose first argument is `platform` concern the
 * guard. The registry is called from here, not from wasm, so no wasm frame sits
 * under the host's code (cordis creates Errors there, and their stack capture
 * costs more through wasm frames). The guard is entered twice: `begin` (derive
 * the signal, start the flight; `undefined` passes the call through) and `track`
 * (the registry's promise in, the guarded promise out).
 */
export function makeQueryWrapper(dispatch, begin, track, previous, platform) {
  return function harnessGuardQuery(...args) {
    if (args[0] !== platform) return Reflect.apply(previous, this, args)
    const key = dispatch(begin, undefined, this, args)
    if (key === undefined) return Reflect.apply(previous, this, args)
    let inner
    try {
      inner = Reflect.apply(previous, this, args)
    } catch (error) {
      dispatch(track, undefined, this, [key])
      throw error
    }
    return dispatch(track, inner, this, [key])
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
    return dispatch(token, previous, this, [args, batch, split])
  }
}

/**
 * A `session/event` listener that reaches the guard only for inbox writes that
 * inserted something: a claim's own splices are deletions and cannot insert a
 * non-message, so they stay out of wasm.
 */
export function makeInsertObserver(dispatch, token) {
  return function harnessGuardObserver(session, event) {
    if (event?.type === 'agent/inbox/spliced' && event.data?.inserted?.length > 0) {
      dispatch(token, undefined, this, [session, event])
    }
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
    if (args[0] === null || args[0] === undefined) return dispatch(unbound, previous, this, args)
    const result = Reflect.apply(previous, this, args)
    return result?.accepted === false ? dispatch(refused, result, this, args) : result
  }
}

/**
 * Replace `args[index]` (the caller's signal) by one that also aborts through a new
 * controller, and return that controller; `undefined` when there is no live signal.
 */
export function deriveSignal(args, index) {
  const caller = args[index]
  if (!(caller instanceof AbortSignal) || caller.aborted) return undefined
  const controller = new AbortController()
  args[index] = AbortSignal.any([caller, controller.signal])
  return controller
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
 * Perform the endings Rust decided, `[controller, reject, error, warn, text, …]`:
 * abort (the registry removes the entry and emits its event), reject the caller,
 * log. A throwing logger never stops the rest.
 */
export function deliver(work) {
  for (let i = 0; i < work.length; i += 5) {
    work[i].abort()
    work[i + 1]?.(work[i + 2])
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

/** Report the settlement of `inner` to `settle(key, ok, value)`. */
export function chain(inner, key, settle) {
  inner.then((value) => settle(key, true, value), (error) => settle(key, false, error))
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
