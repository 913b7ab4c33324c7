// A peer arm of `make bench`: the inbox guard of seed 002,
// `@argszero/cordis-plugin-inbox-input-guard`, reconstructed from the seed's
// published description. The seed's code is not published;
// this file implements what the document describes, as the document describes
// it, and nothing beyond it. Its four halves:
//
// 1. At the claim: every agent it can reach (through `agent/created`, and
//    through the first `agent/pre-step` of an agent that predates the mount)
//    has `agent.inbox.claim()` wrapped; the claimed batch is sanitized before
//    the pre-step waterfall starts.
// 2. At the pre-step entry: a batch claimed before the mount is repaired in
//    place at the guard's own `agent/pre-step` listener.
// 3. At the pending lists: at the same entry both pending lists (`nextStep`,
//    `nextTurn`) are swept, and bad entries repaired or dropped through
//    `inbox.splice`.
// 4. At the durable write: a `session/event` observer records every
//    non-message that reaches `agent/inbox/spliced`, with the session, the log
//    seq, the inbox list and a bounded rendering.
//
// Modes: `repair` (default: a string, number, boolean or bigint becomes the
// document's notice message, made with `createUserMessage`; anything else is
// dropped), `quarantine` (every non-message dropped), `report` (untouched,
// recorded). Every sighting is its own record and its own warn line through
// the cordis logger, naming the session and the log seq. The service
// `inboxInputGuard` has `violations()`, `counts()`, `reset()`.
//
// Adapted to run on the pinned host, and nothing else: the plugin is mounted
// with `ctx.plugin(plugin, { mode })` as the document's second mount spelling
// says (the config is read in `apply`, defaulting to repair); the service is
// provided with cordis 4's `ctx.provide`; `createUserMessage` is the pinned
// `@deepseek-ai/dsh-llm`'s. What the document leaves open is done the plain
// way: a usable message is an object with a non-empty string `id`,
// `role === 'user'`, an array `content` and a `source` object whose `kind` is a
// string (the shape the crash reads); the rendering is `String`/`JSON.stringify`
// cut at 80 characters. Not in the document, so not here: escaping of echoed
// text, bounds on log lines or records, defences against hostile values
// (throwing getters, Proxies), detached copies of message-shaped entries.

import { createUserMessage } from '@deepseek-ai/dsh-llm'

const PREVIEW_CHARS = 80
const SCALARS = new Set(['string', 'number', 'boolean', 'bigint'])

function isMessage(value) {
  return value !== null && typeof value === 'object'
    && typeof value.id === 'string' && value.id !== ''
    && value.role === 'user'
    && Array.isArray(value.content)
    && value.source !== null && typeof value.source === 'object'
    && typeof value.source.kind === 'string'
}

function valueKind(value) {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'array'
  return typeof value
}

function render(value) {
  let text
  if (typeof value === 'string') text = value
  else if (typeof value === 'bigint') text = `${value}n`
  else if (typeof value === 'object' && value !== null) text = JSON.stringify(value) ?? String(value)
  else text = String(value)
  return text.length > PREVIEW_CHARS ? `${text.slice(0, PREVIEW_CHARS)}…` : text
}

function repaired(value) {
  const kind = typeof value
  return createUserMessage({
    content: [{ type: 'text', text: kind === 'string' ? value : String(value) }],
    source: { kind: 'plugin', plugin: 'inbox-input-guard', form: 'notice', summary: `repaired inbox input (${kind})` },
  })
}

export const name = 'inbox-input-guard'

export function apply(ctx, config = {}) {
  const mode = config.mode ?? 'repair'
  const logger = ctx.logger(name)
  let violations = []
  const counts = { repaired: 0, quarantined: 0, observed: 0 }
  // Wrapped inboxes, held weakly (a disposed agent's inbox is not kept alive), restored on dispose.
  const wrapped = new WeakSet()
  const restore = new Set()

  const record = (value, action, origin, sessionId, seq, target, index) => {
    const violation = { at: Date.now(), origin, sessionId, seq, target, index, valueKind: valueKind(value), preview: render(value), action }
    violations.push(violation)
    counts[action] += 1
    logger.warn(`inbox-input-guard: ${origin} non-message in session ${sessionId} (seq ${seq ?? '-'}, ${target}[${index}]): ${violation.valueKind} ${JSON.stringify(violation.preview)}, ${action}`)
  }

  // What to put in a bad entry's place: a repaired message, or nothing (dropped);
  // in report mode the value itself.
  const decide = (value) => {
    if (mode === 'report') return { action: 'observed', replacement: [value] }
    if (mode === 'repair' && SCALARS.has(typeof value)) return { action: 'repaired', replacement: [repaired(value)] }
    return { action: 'quarantined', replacement: [] }
  }

  /** Sanitize a batch in place; `split` is where next-step input ends and the queued turn begins. */
  const sanitize = (batch, origin, sessionId, split) => {
    let index = 0
    for (let i = 0; i < batch.length; index += 1) {
      const value = batch[i]
      if (isMessage(value)) { i += 1; continue }
      const { action, replacement } = decide(value)
      batch.splice(i, 1, ...replacement)
      i += replacement.length
      record(value, action, origin, sessionId, undefined, index < split ? 'next-step' : 'next-turn', index)
    }
  }

  const wrap = (agent) => {
    const inbox = agent?.inbox
    if (inbox === undefined || wrapped.has(inbox)) return
    wrapped.add(inbox)
    const claim = inbox.claim
    inbox.claim = function guardedClaim(target, turn) {
      const split = this.nextStep.length
      const batch = claim.call(this, target, turn)
      sanitize(batch, 'claimed', this.session.id, split)
      return batch
    }
    restore.add(new WeakRef(inbox))
  }
  ctx.on('dispose', () => {
    for (const ref of restore) {
      const inbox = ref.deref()
      if (inbox !== undefined && Object.hasOwn(inbox, 'claim') && inbox.claim.name === 'guardedClaim') delete inbox.claim
    }
  })

  ctx.on('agent/created', ({ agent }) => wrap(agent))

  ctx.on('agent/pre-step', (payload, next) => {
    const { agent } = payload
    wrap(agent)
    sanitize(payload.messages, 'claimed', agent.inbox.session.id, Infinity)
    for (const target of ['next-step', 'next-turn']) {
      const list = target === 'next-step' ? agent.inbox.nextStep : agent.inbox.nextTurn
      for (let i = 0; i < list.length;) {
        const value = list[i]
        if (isMessage(value)) { i += 1; continue }
        const { action, replacement } = decide(value)
        if (mode !== 'report') agent.inbox.splice(target, i, 1, replacement)
        record(value, action, 'pending', agent.inbox.session.id, undefined, target, i)
        i += replacement.length
      }
    }
    return next()
  })

  ctx.on('session/event', (session, event) => {
    if (event.type !== 'agent/inbox/spliced') return
    const { inserted, target, start } = event.data
    for (let i = 0; i < inserted.length; i += 1) {
      if (!isMessage(inserted[i])) record(inserted[i], 'observed', 'durable', session.id, event.seq, target, start + i)
    }
  })

  ctx.provide('inboxInputGuard', {
    violations: () => violations.map((v) => ({ ...v })),
    counts: () => ({ ...counts }),
    reset: () => {
      violations = []
      counts.repaired = 0
      counts.quarantined = 0
      counts.observed = 0
    },
  })
}

export const plugin = { name, apply }
