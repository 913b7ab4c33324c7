// Programmatic entry point: the inspect guard on any registry, without a plugin row.
import * as wasm from './harness_guard.js'
import { guarded, host, ready } from './host.js'

/** The object under `Symbol.for('cordis.original')`, else the value itself. */
export function originalOf(value) {
  ready()
  return wasm.originalOf(value)
}

/** Guard `registry` (raw, or any cordis read of it); returns `dispose()`. */
export function installInspectClientGuard(registry, options = {}) {
  return guarded('apply', () => wasm.installInspectClientGuard(registry, options, host))
}
