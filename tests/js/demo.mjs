// `make demo`: the two failures, without and with harness-guard, against the real host packages.
import { setTimeout as sleep } from 'node:timers/promises'
import { Context } from '@deepseek-ai/cordis'
import { CordisInspectRegistryService } from '@deepseek-ai/dsh-cordis-host-runner'
import * as guard from 'cordis-plugin-harness-guard'
import { createRig, messageText } from './support/agent-rig.mjs'

const DEMO_DEADLINE_MS = 3000 // the default is 15000; shortened so the demo stays brief
const WAIT_MS = 4000

const manifest = [{
  id: 'Theme',
  description: 'design tokens of the open page',
  methods: [{ name: 'listTokens', description: 'list tokens', inputSchema: { type: 'object' }, outputSchema: { type: 'object' } }],
}]
const started = performance.now()
const clock = () => `${((performance.now() - started) / 1000).toFixed(1).padStart(5)}s`
const say = (text) => console.log(`${clock()}  ${text}`)
const wrap = (text) => text.replace(/(.{1,96})(\s|$)/g, '\n          $1').trimEnd()

async function registry(withGuard) {
  const ctx = new Context()
  await ctx.plugin(CordisInspectRegistryService)
  if (withGuard) await ctx.plugin(guard, { inspect: { deadlineMs: DEMO_DEADLINE_MS }, inbox: { enabled: false } })
  const svc = ctx.get('cordisInspect')
  svc.syncClientManifest(manifest)
  return { ctx, svc, raw: svc[Symbol.for('cordis.original')] }
}

const agent = { id: 'agent-1' }
console.log(`harness-guard demo — real @deepseek-ai/cordis + CordisInspectRegistryService + agent loop, Node ${process.version}\n`)

console.log('1. cordis_inspect_query { platform: "client" } with no browser page open')
{
  const { ctx, svc, raw } = await registry(false)
  const caller = new AbortController()
  let settled = false
  svc.query('client', 'Theme', 'listTokens', {}, agent, caller.signal).then(() => { settled = true }, () => { settled = true })
  await sleep(WAIT_MS)
  say(`without the guard: still pending after ${WAIT_MS / 1000}s (settled: ${settled}, pending entries: ${raw.pending.size}) — it waits until someone cancels`)
  caller.abort()
  await ctx.registry.delete(CordisInspectRegistryService)
}
{
  const { ctx, svc, raw } = await registry(true)
  const t0 = performance.now()
  try {
    await svc.query('client', 'Theme', 'listTokens', {}, agent, new AbortController().signal)
  } catch (error) {
    say(`with harness-guard: rejected after ${Math.round(performance.now() - t0)}ms, code ${error.code}, pending entries: ${raw.pending.size}`)
    console.log(`          the model reads:${wrap(error.message)}`)
  }

  console.log('\n2. a page that cannot serve the query answers { ok: false }')
  const off = ctx.on('cordis/inspect-query', (request) => {
    const answer = { ok: false, reason: 'provider-error', message: 'no catalogued Service named "agentPresets"' }
    queueMicrotask(() => svc.resolveClientQuery(agent, request.requestId, answer))
  })
  const t1 = performance.now()
  try {
    await svc.query('client', 'Theme', 'listTokens', {}, agent, new AbortController().signal)
  } catch (error) {
    say(`with harness-guard: refusal surfaced after ${Math.round(performance.now() - t1)}ms (refusal grace 1000ms), code ${error.code}`)
    console.log(`          the model reads:${wrap(error.message)}`)
  }
  off()
  const counts = ctx.get('inspectClientGuard').counts()
  say(`inspectClientGuard.counts(): ${JSON.stringify(counts)}`)
  const { reports } = await svc.query('host', 'HarnessGuard', 'reports', {}, agent, new AbortController().signal)
  say('the model asks why: cordis_inspect_query { platform: "host", provider: "HarnessGuard", method: "reports" }')
  for (const r of reports) say(`  ${r.kind} ${r.providerId}.${r.methodName} (${r.requestId}, session ${r.sessionId})${r.reason ? `: ${r.reason}` : ''}`)
  await ctx.registry.delete(CordisInspectRegistryService)
}

console.log('\n3. a plugin calls agent.followup(\'a bare string\') — real agent loop, real dsh-time-context')
{
  const rig = await createRig()
  const agent = await rig.createAgent()
  await agent.followup('please summarise the open files')
  await rig.waitIdle(agent).catch(() => {})
  const turn = rig.turn(agent, rig.lastTurn(agent))
  const reason = turn.reason?.kind === 'error' ? `error: ${turn.reason.error.message}` : JSON.stringify(turn.reason)
  say(`without the guard: the turn ends ${turn.stepStarted ? 'after' : 'before'} its first step — ${reason}`)
  say(`                   model requests: ${rig.requests.length}`)
  await rig.dispose()
}
{
  const rig = await createRig({ plugin: guard, pluginConfig: { inspect: { enabled: false } } })
  const agent = await rig.createAgent()
  await agent.followup('please summarise the open files')
  await rig.waitIdle(agent)
  const turn = rig.turn(agent, rig.lastTurn(agent))
  const request = rig.requests.at(-1)
  const repaired = request?.messages.find((m) => m?.source?.plugin === 'inbox-input-guard')
  say(`with harness-guard: the turn ends ${JSON.stringify(turn.reason)}, step started: ${turn.stepStarted}, model requests: ${rig.requests.length}`)
  say(`                   the model received ${JSON.stringify(messageText(repaired))} (source.summary: "${repaired?.source.summary}")`)
  const records = rig.ctx.get('inboxInputGuard').violations()
    .map((v) => `${v.origin}/${v.action}${v.seq == null ? '' : ` seq ${v.seq}`}`)
  say(`                   inboxInputGuard.violations(): ${records.join(', ')} (${JSON.stringify(rig.ctx.get('inboxInputGuard').counts())})`)
  await rig.dispose()
}
console.log(`\ndone in ${clock().trim()}`)
