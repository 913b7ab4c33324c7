// The cordis plugin module: wiring only. Every decision is made in Rust.
import { createUserMessage } from '@deepseek-ai/dsh-llm'
import { InboxLedger, InspectLedger, installInboxGuard, parseConfig } from './harness_guard.js'
import { Config } from './config.js'
import { installInspect, once } from './install.js'

export { Config }

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
