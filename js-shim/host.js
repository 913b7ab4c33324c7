// What the guard is handed from the JavaScript side: the host functions it cannot
// import itself, and `state`, where the glue records a fault of the guard's own.
// After a fault no export is entered again.
import { createUserMessage } from '@deepseek-ai/dsh-llm'

/** Optional peer: the registry's own validator, to word a refused page answer. */
const tools = await import('@deepseek-ai/dsh-tools').catch(() => undefined)

/** `{ fault?, fail?, refusal? }`: the glue fills it in (see helpers.js `bindShim`). */
const state = {}

export const host = {
  state,
  createUserMessage,
  validateJsonSchemaValue: tools?.validateJsonSchemaValue,
  warn: (text) => process.emitWarning(`harness-guard: ${text}`, { code: 'HARNESS_GUARD' }),
}

/**
 * Run `enter` (a call into the guard) at `point`. After a fault it refuses without
 * entering; a trap inside stands the guard down and fails the call.
 */
export function guarded(point, enter) {
  if (state.fault !== undefined) throw stoodDown()
  try {
    return enter()
  } catch (error) {
    if (!(error instanceof WebAssembly.RuntimeError || error instanceof RangeError)) throw error
    if (state.fail) state.fail(point, error)
    else state.fault = { point, error }
    throw stoodDown()
  }
}

function stoodDown() {
  const error = new Error(state.refusal?.message ?? 'harness-guard stood down after an internal fault')
  error.code = state.refusal?.code ?? 'HARNESS_GUARD_FAILED'
  return error
}
