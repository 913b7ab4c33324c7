// What the guard is handed from the JavaScript side: the host functions it cannot
// import itself, and `state`, where the glue records a fault of the guard's own
// (helpers.js `bindShim` fills in `fault`, `fail` and `refusal`).
import { createUserMessage } from '@deepseek-ai/dsh-llm'

/** Optional peer: the registry's own validator, to word a refused page answer. */
const tools = await import('@deepseek-ai/dsh-tools').catch(() => undefined)
const state = {}
export const host = {
  state,
  createUserMessage,
  validateJsonSchemaValue: tools?.validateJsonSchemaValue,
  warn: (text) => process.emitWarning(`harness-guard: ${text}`, { code: 'HARNESS_GUARD' }),
}

/** Enter the guard at `point`: refused after a fault; a trap inside stands it down and fails the call. */
export function guarded(point, enter, logger) {
  if (state.fault !== undefined) throw stoodDown(state.refusal?.message)
  try {
    return enter()
  } catch (error) {
    if (!(error instanceof WebAssembly.RuntimeError || error instanceof RangeError)) throw error
    if (state.fail) state.fail(point, error, logger)
    else state.fault = { point, error }
    throw stoodDown(`harness-guard stood down after an internal fault in ${point} (${error.message}); nothing was installed`)
  }
}

function stoodDown(message = 'harness-guard stood down after an internal fault') {
  return Object.assign(new Error(message), { code: state.refusal?.code ?? 'HARNESS_GUARD_FAILED' })
}
