// Reading host values defensively: into text (a rendering, of which only a
// head crosses into wasm), and into plain data (a copy through JSON, or a
// structured clone of a config). None of these ever throws.
//
// Why JavaScript: `JSON.stringify`, `String()` and `structuredClone` are the
// host's own readings of a value, one call each; done from wasm they would be
// the same calls through a binding each, and a long rendering would be copied
// into wasm whole before Rust cut it.

/** A human rendering of any value; never throws. Only a head of it crosses into wasm. */
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

/** The first `units` UTF-16 units of `render(value)` (Rust keeps what a preview needs). */
export function renderHead(value, units) {
  return render(value).slice(0, units)
}

/** `renderHead(list[i], units)`, in one crossing. */
export function renderAt(list, i, units) {
  let value
  try {
    value = list[i]
  } catch {
    return render(undefined).slice(0, units)
  }
  return render(value).slice(0, units)
}

/** `String(value)` that never throws. */
export function safeString(value) {
  try {
    return String(value)
  } catch {
    return '[unprintable]'
  }
}

/** `String(value)` cut to `max` UTF-16 units with `…`, never throwing. */
export function textOf(value, max) {
  const text = safeString(value)
  return text.length <= max ? text : `${text.slice(0, max)}…`
}

/**
 * How the config reader takes an object apart: its `[key, value]` pairs (a
 * non-iterable object's own enumerable string-keyed entries), `null` for bytes
 * (a `Uint8Array` or an `ArrayBuffer`, unread), `undefined` for an iterable (a
 * `Map` or a `Set`: the schema the loader calls resolves neither as an object,
 * so the guard reads neither as one).
 */
export function entriesOf(value) {
  if (value instanceof Uint8Array || value instanceof ArrayBuffer) return null
  if (Symbol.iterator in value) return undefined
  return Object.entries(value)
}

/** `Array.isArray` that never throws (a revoked Proxy throws there). */
export function isArray(value) {
  try {
    return Array.isArray(value)
  } catch {
    return undefined
  }
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

/** A plain-data copy of a config value (its getters read once); throws what cannot be copied. */
export function snapshot(value) {
  return structuredClone(value)
}
