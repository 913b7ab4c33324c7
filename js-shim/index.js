// The cordis plugin module: what must exist before wasm runs, and the hand-over.
// `apply` is Rust's (src/interop/plugin.rs); so is every check.
import Schema from '@deepseek-ai/schemastery'
import * as wasm from './harness_guard.js'
import { guarded, host } from './host.js'

/** Cordis plugin name. */
export const name = 'harness-guard'
/** Nothing is required: the inspect half starts while `cordisInspect` exists, the inbox half always. */
export const inject = []

// The defaults the settings UI shows are Rust's (`parseConfig(undefined)`), written
// out so that importing runs no wasm; a package test binds them to Rust's.
const opt = (schema, value, text) => (value === undefined ? schema : schema.default(value)).description(text)
export const Config = Schema.object({
  inspect: Schema.object({
    enabled: opt(Schema.boolean(), true, 'Guard platform:"client" cordis_inspect_query calls. false: the inspect half is not installed.'),
    deadlineMs: opt(Schema.number(), 15000, 'How long a client inspect query may wait for a page, in ms. Integer, 1 ..= 2147483647.'),
    refusalGraceMs: opt(Schema.number(), undefined, 'After a page refuses, how long another page may still answer, in ms. Integer, 0 ..= deadlineMs; default min(1000, deadlineMs).'),
  }).description('Client inspect queries'),
  inbox: Schema.object({
    enabled: opt(Schema.boolean(), true, 'Guard every agent\'s inbox.claim. false: the inbox half is not installed.'),
    mode: opt(Schema.union(['repair', 'quarantine', 'report']), 'repair', 'repair: scalars become user messages, anything else is dropped. quarantine: every non-message is dropped. report: nothing is touched, only recorded.'),
    previewChars: opt(Schema.number(), 80, 'Longest preview of a recorded value, in characters. Integer, 1 ..= 100000.'),
  }).description('Agent inbox entries'),
})

// The loader validates a candidate config through `Config['~standard'].validate`
// before it tears the running plugin down: Rust's checks run there first, so an
// invalid change is refused while the last good tree keeps running.
// A refused config is also said on stderr (once per refusal), where a `dsh` user
// sees it: the CLI prints no cordis log lines.
const inner = Config['~standard']
let lastRefused
if (inner) {
  Object.defineProperty(Config, '~standard', { configurable: true, value: { ...inner, validate(value) {
    try {
      guarded('config', () => wasm.parseConfig(value))
    } catch (error) {
      if (error?.code !== 'HARNESS_GUARD_INVALID_CONFIG') throw error
      if (error.message !== lastRefused) host.warn(`config refused, the running config stays: ${lastRefused = error.message}`)
      return { issues: [{ message: error.message, path: error.field.split('.') }] }
    }
    lastRefused = undefined
    return inner.validate(value)
  } } })
}

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
  guarded('apply', () => wasm.apply(ctx, config, host), loggerOf(ctx))
}

export default { name, inject, Config, apply }
