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
 * As `makeWrapper`, for calls the guard only needs to see when `args[index] === value`
 * (a filter Rust chooses); every other call goes straight to `previous`, unchanged.
 */
export function makeFilteredWrapper(dispatch, token, previous, index, value) {
  return function harnessGuardWrapper(...args) {
    return args[index] === value ? dispatch(token, previous, this, args) : Reflect.apply(previous, this, args)
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
