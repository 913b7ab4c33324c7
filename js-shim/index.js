// The cordis plugin module: wiring only. Every decision is made in Rust.
import Schema from '@deepseek-ai/schemastery'
import { createUserMessage } from '@deepseek-ai/dsh-llm'
import { InboxLedger, InspectLedger, installInboxGuard, parseConfig } from './harness_guard.js'
import { installInspect, once } from './install.js'

// ---- config -------------------------------------------------------------------

// The schemastery schema the harness settings UI reads. Ranges are enforced,
// with messages naming field, value and range, by `parseConfig` in Rust.

/**
 * The defaults the settings UI shows. Rust defines and applies them
 * (`parseConfig(undefined)`); they are written out here so that importing the
 * plugin runs no wasm (about 2 ms of start-up), and the package tests check
 * that they are Rust's.
 */
const defaults = {
  inspect: { enabled: true, deadlineMs: 15000 },
  inbox: { enabled: true, mode: 'repair', previewChars: 80 },
}

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

// ---- plugin -------------------------------------------------------------------

/** Cordis plugin name. */
export const name = 'harness-guard'

/** Nothing is required: the inspect half starts while `cordisInspect` exists, the inbox half always. */
export const inject = []

/** Mount both halves; `config` may be omitted. Throws, installing nothing, on an invalid config. */
export function apply(ctx, config) {
  const options = parseConfig(config)
  const logger = ctx.logger(name)
  const warn = (text) => logger.warn(text)
  const inspectLedger = new InspectLedger()
  const inboxLedger = new InboxLedger()
  let live = true
  const alive = () => live
  ctx.provide('inspectClientGuard', service(inspectLedger, 'reports', alive))
  ctx.provide('inboxInputGuard', service(inboxLedger, 'violations', alive))
  ctx.effect(() => () => {
    live = false
    inspectLedger.free()
    inboxLedger.free()
  }, 'harness-guard: records')

  if (options.inbox.enabled) {
    ctx.effect(() => {
      const installed = installInboxGuard(options.inbox, inboxLedger, {
        on: (event, listener, opts) => ctx.on(event, listener, opts),
        warn,
        createUserMessage,
      })
      return once(() => installed.free())
    }, 'harness-guard: inbox.claim guard')
  }

  if (options.inspect.enabled) {
    const { deadlineMs, refusalGraceMs } = options.inspect
    ctx.inject(['cordisInspect'], (ctx) => {
      ctx.effect(() => installInspect(ctx.cordisInspect, { deadlineMs, refusalGraceMs }, inspectLedger, {
        on: (event, listener) => ctx.on(event, listener),
        warn,
      }), 'harness-guard: cordisInspect client-query guard')
    })
  }
}

// A service read kept past disposal finds the records gone, not freed memory.
function service(ledger, records, alive) {
  return {
    [records]: () => (alive() ? ledger[records]() : []),
    counts: () => (alive() ? ledger.counts() : undefined),
    reset: () => { if (alive()) ledger.reset() },
  }
}

export default { name, inject, Config, apply }
