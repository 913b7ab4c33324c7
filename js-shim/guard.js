// Programmatic entry point: the inspect guard on any registry, without a plugin row.
import { InspectLedger, originalOf } from './harness_guard.js'
import { installInspect, once } from './install.js'

export { originalOf }

/**
 * Guard `registry` (the raw `CordisInspectRegistryService` or any cordis read of it).
 * Returns `dispose()`, which restores the previous methods by marker.
 */
export function installInspectClientGuard(registry, options = {}) {
  const raw = originalOf(registry)
  const ledger = new InspectLedger()
  const dispose = installInspect(raw, options, ledger, {
    on: (event, listener) => raw.ctx.on(event, listener),
    warn: (text) => process.emitWarning(`harness-guard: ${text}`, { code: 'HARNESS_GUARD' }),
    onReport: options?.onReport,
  })
  return once(() => {
    dispose()
    ledger.free()
  })
}
