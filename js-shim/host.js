// What the guard is handed from the JavaScript side: the host functions it cannot
// import itself, and `state`, through which this module enters the guard
// (supervisor.js fills in `enter`: a trap stands the guard down and fails the call;
// a mount while it is down recovers it first).
import { readFileSync } from 'node:fs'
import { createUserMessage } from '@deepseek-ai/dsh-llm'
import * as wasm from './harness_guard.js'

// The compiled module is kept: after a fault the guard recovers on a fresh
// instance of it (wasm-bindgen's reset), never on the faulted one.
wasm.initSync({ module: new WebAssembly.Module(readFileSync(new URL('./harness_guard_bg.wasm', import.meta.url))) })

/** Optional peer: the registry's own validator, to word a refused page answer. */
const tools = await import('@deepseek-ai/dsh-tools').catch(() => undefined)
const state = { wasm }
export const host = {
  state,
  createUserMessage,
  validateJsonSchemaValue: tools?.validateJsonSchemaValue,
  warn: (text) => process.emitWarning(`harness-guard: ${text}`, { code: 'HARNESS_GUARD' }),
}
wasm.bindHost(host)

/** Enter the guard at `point` (`apply`: a mount or an install; `config`: validation only). */
export const guarded = (point, enter, logger) => state.enter(point, enter, logger)
