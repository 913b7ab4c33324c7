// Shared by both entry points; not exported from the package.
import { installInspectGuard } from './harness_guard.js'

const tools = await import('@deepseek-ai/dsh-tools').catch(() => undefined)

/** The host validator's violations for a client answer, as the registry itself would word them. */
function explainer(registry) {
  const validate = tools?.validateJsonSchemaValue
  if (typeof validate !== 'function') return undefined
  return (providerId, methodName, data) => {
    try {
      const provider = registry.list().find((p) => p.platform === 'client' && p.id === providerId)
      const method = provider?.methods.find((m) => m.name === methodName)
      const violations = method ? validate(method.outputSchema, data, 'output') : []
      return violations.length > 0 ? violations.join('; ') : undefined
    } catch {
      return undefined
    }
  }
}

/**
 * Install the inspect guard with `hooks`; returns `dispose()`. A registry of the
 * wrong shape is left untouched with a warning; invalid options throw.
 */
export function installInspect(registry, options, ledger, hooks) {
  let installed
  try {
    installed = installInspectGuard(registry, options, ledger, {
      ...hooks,
      explainInvalidOutput: explainer(registry),
    })
  } catch (error) {
    if (error?.code !== 'HARNESS_GUARD_HOST_SHAPE') throw error
    hooks.warn(`inspect half not installed: ${error.message}`)
    return () => {}
  }
  return once(() => installed.free())
}

/** A disposer that runs once (freeing a wasm object twice would throw). */
export function once(dispose) {
  let done = false
  return () => {
    if (done) return
    done = true
    dispose()
  }
}
