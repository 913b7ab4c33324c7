// The cordis plugin module: what must exist before wasm runs, and the hand-over.
// `apply` is Rust's (src/interop/plugin.rs); so is every check.
import * as wasm from './harness_guard.js'
import { Config, configSchema } from './config.js'
import { guarded, host } from './host.js'

/** Cordis plugin name. */
export const name = 'harness-guard'
/** Nothing is required: the inspect half starts while `cordisInspect` exists, the inbox half always. */
export const inject = []
export { Config }

/**
 * What a mount hands Rust besides `host`: how a refused live change of a running
 * guard is said (once per refusal, on stderr, where a `dsh` user sees it: the
 * CLI prints no cordis log lines), and the schema of its settings namespace,
 * which says so for a refused settings change.
 */
const refused = (message) => host.warn(`config refused, the running config stays: ${message}`)
const mountHost = { ...host, refused, settingsSchema: configSchema(refused) }

/** The mount's cordis logger, for a fault inside `apply` itself. */
function loggerOf(ctx) {
  try {
    return ctx.logger(name)
  } catch {
    return undefined
  }
}

/** Mount both halves; `config` may be omitted. Throws, installing nothing, on an invalid config. */
export function apply(ctx, config) {
  guarded('apply', () => wasm.apply(ctx, config, mountHost), loggerOf(ctx))
}

export default { name, inject, Config, apply }
