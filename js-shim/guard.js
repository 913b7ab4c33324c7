// Programmatic entry point: the inspect guard on any registry, without a plugin row.
import { InspectLedger, installInspectGuard, originalOf } from './harness_guard.js'

export { originalOf }

/**
 * Guard `registry` (the raw `CordisInspectRegistryService` or any cordis read of it).
 * Returns `dispose()`, which restores the previous methods by marker.
 */
export function installInspectClientGuard(registry, options = {}) {
  const raw = originalOf(registry)
  const hooks = {
    on: (event, listener) => raw.ctx.on(event, listener),
    warn: (text) => process.emitWarning(text, { code: 'HARNESS_GUARD' }),
    onReport: options?.onReport,
  }
  return installInspect(raw, options, new InspectLedger(), hooks)
}

/** Install with `hooks`; a registry of the wrong shape is left untouched with a warning. */
export function installInspect(registry, options, ledger, hooks) {
  let installed
  try {
    installed = installInspectGuard(registry, options, ledger, hooks)
  } catch (error) {
    if (error?.code !== 'HARNESS_GUARD_HOST_SHAPE') throw error
    hooks.warn(`harness-guard: inspect half not installed: ${error.message}`)
    return () => {}
  }
  return () => installed.dispose()
}
