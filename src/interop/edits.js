// The changes Rust makes to a batch, one call each: an entry repaired into the
// user message Rust decided it becomes, or dropped. Rust decides which entry,
// what becomes of it and what the message's source says (it hands the source
// over, made once per kind of value, and its outcome codes as `K.repair`);
// these carry it out and say how it went.
//
// Why JavaScript: the repaired message's input (`{ content: [{ type, text }],
// source }`) is a dozen values; put together here it is one crossing, where
// building it from wasm would be a crossing per value.

import { hasMessageCode } from './shapes.js'
import { life } from './supervisor.js'

/**
 * The user message a scalar becomes (Rust decided it is one): made by the host's
 * `createUserMessage` from `String(value)` verbatim and the `source` Rust made
 * (the host copies its input). Rust judges what comes back; `undefined` if the
 * host threw.
 */
export function repairMessage(create, value, source) {
  try {
    const text = typeof value === 'string' ? value : String(value)
    return create({ content: [{ type: 'text', text }], source })
  } catch {
    return undefined
  }
}

/**
 * Repair `batch[i]` in place (`repairMessage`), and say how it went, in Rust's
 * codes (`K.repair`): `repaired`; `refused` when the batch refused the message (a
 * frozen array); `unmade` when the host made no message with the code Rust
 * calls usable.
 */
export function repairAt(batch, i, create, source) {
  const R = life.K.repair
  let value
  try {
    value = batch[i]
  } catch {
    return R.unmade
  }
  const message = repairMessage(create, value, source)
  if (message === undefined || !hasMessageCode(message)) return R.unmade
  try {
    batch[i] = message
    return batch[i] === message ? R.repaired : R.refused
  } catch {
    return R.refused
  }
}

/**
 * Remove `batch[i]` in place; whether the batch let go of it (a frozen array
 * throws, a Proxy may ignore the writes: either way its length stays).
 */
export function dropAt(batch, i) {
  try {
    const n = batch.length
    batch.splice(i, 1)
    return batch.length === n - 1
  } catch {
    return false
  }
}
