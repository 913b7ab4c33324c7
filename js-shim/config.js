// The schemastery schema the harness settings UI reads. Ranges are enforced,
// with messages naming field, value and range, by `parseConfig` in Rust.
import Schema from '@deepseek-ai/schemastery'
import { parseConfig } from './harness_guard.js'

/** The defaults, from the one place that defines them (the Rust config). */
const defaults = parseConfig(undefined)

export const Config = Schema.object({
  inspect: Schema.object({
    enabled: Schema.boolean().default(defaults.inspect.enabled)
      .description('Guard platform:"client" cordis_inspect_query calls. false: the inspect half is not installed.'),
    deadlineMs: Schema.number().default(defaults.inspect.deadlineMs)
      .description('How long a client inspect query may wait for a page, in ms. Integer, 1 ..= 2147483647.'),
    refusalGraceMs: Schema.number()
      .description('After a page refuses, how long another page may still answer, in ms. Integer, 0 ..= deadlineMs; default min(1000, deadlineMs).'),
  }).description('Client inspect queries'),
  inbox: Schema.object({
    enabled: Schema.boolean().default(defaults.inbox.enabled)
      .description('Guard every agent\'s inbox.claim. false: the inbox half is not installed.'),
    mode: Schema.union(['repair', 'quarantine', 'report']).default(defaults.inbox.mode)
      .description('repair: scalars become user messages, anything else is dropped. quarantine: every non-message is dropped. report: nothing is touched, only recorded.'),
    previewChars: Schema.number().default(defaults.inbox.previewChars)
      .description('Longest preview of a recorded value, in characters. Integer, 1 ..= 100000.'),
  }).description('Agent inbox entries'),
})

// The loader validates a candidate config through `Config['~standard'].validate`
// before it tears the running plugin down. Run the Rust checks there first, so an
// invalid change is refused while the last good tree keeps running.
const standard = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Config), '~standard')?.get
if (standard) {
  Object.defineProperty(Config, '~standard', {
    configurable: true,
    get() {
      const inner = standard.call(this)
      return {
        ...inner,
        validate(value) {
          try {
            parseConfig(value)
          } catch (error) {
            if (error?.code !== 'HARNESS_GUARD_INVALID_CONFIG') throw error
            return { issues: [{ message: error.message, path: error.field.split('.') }] }
          }
          return inner.validate(value)
        },
      }
    },
  })
}
