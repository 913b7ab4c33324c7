// What the guard is handed from the JavaScript side: the host functions it cannot
// import itself, and `state`, through which this module enters the guard
// (supervisor.js fills in `enter`: a trap stands the guard down and fails the call;
// a mount while it is down recovers it first).
import { createUserMessage } from '@deepseek-ai/dsh-llm'
import * as wasm from './harness_guard.js'

/** Optional peer: the registry's own validator, to word a refused page answer. */
const tools = await import('@deepseek-ai/dsh-tools').catch(() => undefined)
const state = { wasm }
export const host = {
  state,
  createUserMessage,
  validateJsonSchemaValue: tools?.validateJsonSchemaValue,
  warn: (text) => process.emitWarning(`harness-guard: ${text}`, { code: 'HARNESS_GUARD' }),
}

/**
 * Compile and instantiate the .wasm and hand it `host`, once, at the first entry
 * (a mount, a config check, an install): importing runs no wasm, and a row that
 * is disabled never pays for it. The compiled module is kept: after a fault the
 * guard recovers on a fresh instance of it (wasm-bindgen's reset), never on the
 * faulted one.
 */
export function ready() {
  if (state.enter !== undefined) return
  // `node:fs` is taken here, not imported: importing it as a module builds its
  // namespace, which loads `fs/promises`, streams and readline: a few ms of the
  // host's start-up for one read (BENCHMARKS.md's history).
  const { readFileSync } = process.getBuiltinModule('node:fs')
  wasm.initSync({ module: new WebAssembly.Module(readFileSync(new URL('./harness_guard_bg.wasm', import.meta.url))) })
  wasm.bindHost(host)
}

/** Enter the guard at `point` (`apply`: a mount or an install; `config`: validation only). */
export const guarded = (point, enter, logger) => {
  ready()
  return state.enter(point, enter, logger)
}
