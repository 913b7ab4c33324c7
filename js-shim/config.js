// The plugin's config schema: a real schemastery schema whose checks are Rust's.
//
// `Config` is the schemastery object schema below seen through a Proxy: every
// read (its `type`, `dict`, `meta`, `toJSON()`, `simplify()`) is the schema's
// own, so the loader, dsh-settings and any settings surface read it as they read
// any schemastery schema; calling it (`Config(value)`, as schemastery schemas are
// called) and its standard-schema `validate` first ask Rust (`parseConfig`), the
// one authority on what the mount accepts, and refuse with Rust's message.
// The schema's own ranges and defaults are written out here so that importing
// runs no wasm; a package test binds every one of them to Rust's.
import Schema from '@deepseek-ai/schemastery'
import * as wasm from './harness_guard.js'
import { guarded } from './host.js'

/** The largest delay Node's `setTimeout` honours (Rust: `config::MAX_TIMER_MS`). */
const MAX_TIMER_MS = 2147483647
/** The largest preview (Rust: `config::MAX_PREVIEW_CHARS`). */
const MAX_PREVIEW_CHARS = 100000

const integer = (min, max) => Schema.number().step(1).min(min).max(max)
const field = (schema, value, text) => (value === undefined ? schema : schema.default(value)).description(text)

const shape = Schema.object({
  inspect: Schema.object({
    enabled: field(Schema.boolean(), true, 'Guard platform:"client" cordis_inspect_query calls. false: the inspect half is not installed.'),
    deadlineMs: field(integer(1, MAX_TIMER_MS), 15000, `How long a client inspect query may wait for a page, in ms. Integer, 1 ..= ${MAX_TIMER_MS}.`),
    refusalGraceMs: field(integer(0, MAX_TIMER_MS), undefined, 'After a page refuses, how long another page may still answer, in ms. Integer, 0 ..= deadlineMs; default min(1000, deadlineMs).'),
  }).description('Client inspect queries'),
  inbox: Schema.object({
    enabled: field(Schema.boolean(), true, 'Guard every agent\'s inbox.claim. false: the inbox half is not installed.'),
    mode: field(Schema.union(['repair', 'quarantine', 'report']), 'repair', 'repair: scalars become user messages, anything else is dropped. quarantine: every non-message is dropped. report: nothing is touched, only recorded.'),
    previewChars: field(integer(1, MAX_PREVIEW_CHARS), 80, `Longest preview of a recorded value, in characters. Integer, 1 ..= ${MAX_PREVIEW_CHARS}.`),
  }).description('Agent inbox entries'),
}).description('harness-guard: client inspect queries end at a deadline instead of hanging; inbox entries that are not messages are repaired, quarantined or reported.')

/**
 * Rust's refusal of `value` as a schemastery `ValidationError` (its message is
 * Rust's: the field, the value and the range; `code` and `field` as the mount's
 * error carries them), or `undefined` when the mount would accept it.
 */
function refusal(value) {
  try {
    guarded('config', () => wasm.parseConfig(value))
    return undefined
  } catch (error) {
    if (error?.code !== 'HARNESS_GUARD_INVALID_CONFIG') throw error
    const path = error.field.split('.')
    return Object.assign(new Schema.ValidationError(error.message, { path }), { message: error.message, code: error.code, field: error.field })
  }
}

/**
 * The schema, checked by Rust. `onRefused(message)`, when given, hears every
 * refusal of a call: the settings namespace's schema says a refused settings
 * change there (dsh-settings calls its schema only to resolve a registration, a
 * write or a reloaded document). The exported `Config` has none: validating a
 * value has no side effect.
 */
export function configSchema(onRefused) {
  const inner = shape['~standard']
  const standard = {
    ...inner,
    validate(value) {
      const refused = refusal(value)
      return refused ? { issues: [{ message: refused.message, path: refused.options.path }] } : inner.validate(value)
    },
  }
  return new Proxy(shape, {
    apply(target, self, [value, options]) {
      const refused = refusal(value)
      if (refused) {
        onRefused?.(refused.message)
        throw refused
      }
      return Reflect.apply(target, self, [value, options])
    },
    get: (target, key, receiver) => (key === '~standard' ? standard : Reflect.get(target, key, receiver)),
  })
}

/** The plugin's config schema (see the file's head). */
export const Config = configSchema()
