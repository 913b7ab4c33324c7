// Programmatic entry point: the inspect guard on any registry, without a plugin row.
import * as wasm from './harness_guard.js'
import { guarded, host } from './host.js'

export const originalOf = wasm.originalOf

/** Guard `registry` (raw, or any cordis read of it); returns `dispose()`. */
export function installInspectClientGuard(registry, options = {}) {
  return guarded('apply', () => wasm.installInspectClientGuard(registry, options, host))
}
