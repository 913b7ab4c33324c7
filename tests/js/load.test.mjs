// Load in one process: 10,000 client inspect queries that no page answers and
// 1,000 agents with poisoned inboxes, all at once, under one mount of
// harness-guard covering both halves.
//
// One real host: a cordis Context with the agent stack (dsh-llm, dsh-session,
// dsh-system-prompt, dsh-tools, dsh-agent, dsh-agent-loop, dsh-time-context)
// and the published CordisInspectRegistryService in the same Context, with a
// client provider mirrored that no page serves. Only the model is fake.
//
// Every query is asked on behalf of one of the agents; half of the agents are
// resumed from a log whose inbox still holds a bad entry, the other half had a
// bad entry injected; all are woken while the queries wait.
//
// - control: after the same wait every query is still pending (the registry
//   holds 10,000 entries) and every poisoned turn fails before its step;
// - guarded: every query ends exactly once (rejects once with
//   INSPECT_CLIENT_DEADLINE, one `cordis/inspect-query-resolved` per request),
//   every turn completes, nothing is left pending (registry, inboxes, abort
//   listeners) and no Timeout is left.
//
// The guard package is imported lazily, so the control arm runs on its own:
//   node --test --test-name-pattern='^control' load.test.mjs
// Needs Node >= 22 (the agent loop).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { setImmediate as tick, setTimeout as sleep } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createRig, isClockMessage, logWithPendingInbox, messageText, userMessage } from './support/agent-rig.mjs';
import {
  CODES,
  CordisInspectRegistryService,
  GUARD_PACKAGE,
  MANIFEST,
  METHOD,
  PROVIDER,
  activeTimeouts,
  deadlineMessage,
  rawOf,
} from './support/inspect-rig.mjs';

const QUERIES = 10000;
const AGENTS = 1000;
const DEADLINE_MS = 300;
/** How long past the deadline a control arm waits before calling the queries hung. */
const MARGIN_MS = 700;

/** The bad entry agent `i` starts with: a scalar to repair, or an object to drop. */
function poison(i) {
  switch (i % 4) {
    case 0: return `a bare string from a plugin #${i}`;
    case 1: return i;
    case 2: return i % 8 === 2;
    default: return { id: `half-shaped-${i}`, note: 'never-content' };
  }
}
const isScalar = (value) => typeof value !== 'object';

/**
 * The host: agents, registry and (guarded) the guard, all in one Context;
 * `AGENTS` agents, each with a bad entry waiting in its inbox.
 */
async function loadedHost(t, { guarded }) {
  const rig = await createRig({ timeContext: true });
  t.after(() => rig.dispose());
  await rig.mount(CordisInspectRegistryService);
  const registry = rig.ctx.get('cordisInspect');
  registry.syncClientManifest(MANIFEST);
  const raw = rawOf(registry);
  const announced = [];
  const askedBy = new Map();
  const resolved = new Map();
  rig.ctx.on('cordis/inspect-query', (request) => {
    announced.push(request.requestId);
    askedBy.set(request.requestId, request.agentId);
  });
  rig.ctx.on('cordis/inspect-query-resolved', ({ requestId }) => resolved.set(requestId, (resolved.get(requestId) ?? 0) + 1));

  let services = {};
  if (guarded) {
    const guard = await import(GUARD_PACKAGE);
    await rig.mount(guard, { inspect: { deadlineMs: DEADLINE_MS }, inbox: { mode: 'repair' } });
    services = { inspect: rig.ctx.get('inspectClientGuard'), inbox: rig.ctx.get('inboxInputGuard') };
    assert.ok(services.inspect && services.inbox, 'one mount provides both halves');
  }

  const agents = [];
  for (let i = 0; i < AGENTS; i++) {
    if (i % 2 === 0) {
      // Resumed from a log whose inbox still holds the bad entry (next-turn).
      agents.push(await rig.createAgent({ seed: logWithPendingInbox([poison(i)]) }));
    } else {
      const agent = await rig.createAgent();
      agent.inject(poison(i)); // waits in next-step for the next wake
      agents.push(agent);
    }
  }
  for (const agent of agents) assert.equal(agent.inbox.nextStep.length + agent.inbox.nextTurn.length, 1);
  return { rig, registry, raw, announced, askedBy, resolved, services, agents };
}

/** Ask `QUERIES` client queries, round-robin over the agents; each is tracked, never left unhandled. */
function askAll(registry, agents) {
  const queries = [];
  for (let q = 0; q < QUERIES; q++) {
    const controller = new AbortController();
    const entry = { controller, settlements: 0, status: 'pending', error: undefined, agent: agents[q % agents.length] };
    entry.done = registry.query('client', PROVIDER, METHOD, {}, entry.agent, controller.signal).then(
      () => { entry.settlements += 1; entry.status = 'fulfilled'; },
      (error) => { entry.settlements += 1; entry.status = 'rejected'; entry.error = error; },
    );
    queries.push(entry);
  }
  return queries;
}

/** Wake every agent at once with a real message; resolves when all are idle again. */
async function wakeAll(rig, agents) {
  agents.forEach((agent, i) => agent.followup(userMessage(`wake ${i}`)));
  await Promise.all(agents.map((agent) => rig.waitIdle(agent, { timeoutMs: 60000 })));
}

/** Turn-end reasons of every agent, in order. */
function turnReasons(agent) {
  return agent.session.events.filter((e) => e.type === 'turn/end').map((e) => e.data.reason);
}

test('control: without the guard, 10,000 client queries stay pending and 1,000 poisoned turns fail', { timeout: 120000 }, async (t) => {
  const host = await loadedHost(t, { guarded: false });
  const { rig, registry, raw, announced, resolved, agents } = host;
  const timeoutsBefore = activeTimeouts();
  const started = performance.now();

  const queries = askAll(registry, agents);
  await wakeAll(rig, agents);
  await sleep(DEADLINE_MS + MARGIN_MS);

  assert.equal(announced.length, QUERIES, 'every query reached the pages as a request');
  assert.equal(queries.filter((q) => q.status === 'pending').length, QUERIES, 'every query is still waiting');
  assert.equal(raw.pending.size, QUERIES, 'the registry holds every one');
  assert.equal(resolved.size, 0);

  for (const [i, agent] of agents.entries()) {
    const first = turnReasons(agent)[0];
    assert.equal(first?.kind, 'error', `agent ${i}: the poisoned turn fails`);
    assert.match(first.error.message, /reading 'kind'/);
  }
  assert.equal(rig.requests.length, 0, 'no poisoned turn reaches the model');
  const stranded = agents.filter((agent) => agent.inbox.hasPending).length;
  t.diagnostic(`${QUERIES} queries pending after ${DEADLINE_MS + MARGIN_MS} ms, ${AGENTS} poisoned turns failed, `
    + `${stranded} agents with work stranded; ${Math.round(performance.now() - started)} ms`);

  // Clean up through the registry's own abort path.
  for (const q of queries) q.controller.abort();
  await Promise.all(queries.map((q) => q.done));
  assert.equal(raw.pending.size, 0);
  assert.equal(activeTimeouts(), timeoutsBefore);
});

test('guarded: 10,000 waiting queries and 1,000 poisoned agents at once — every query ends once, every turn completes, nothing is left', { timeout: 120000 }, async (t) => {
  const faults = [];
  const onFault = (error) => faults.push(error);
  process.on('uncaughtException', onFault);
  process.on('unhandledRejection', onFault);
  t.after(() => {
    process.removeListener('uncaughtException', onFault);
    process.removeListener('unhandledRejection', onFault);
  });

  const host = await loadedHost(t, { guarded: true });
  const { rig, registry, raw, announced, askedBy, resolved, services, agents } = host;
  const timeoutsBefore = activeTimeouts();
  const started = performance.now();

  const queries = askAll(registry, agents);
  assert.equal(raw.pending.size, QUERIES, 'all 10,000 wait at once');
  assert.ok(activeTimeouts() > timeoutsBefore, 'a ref\'d deadline timer while they wait');
  await wakeAll(rig, agents);
  const turnsDone = performance.now() - started;

  // Every query ends, bounded: a guard that lets one hang fails here, not by hanging the run.
  let bound;
  const all = Promise.all(queries.map((q) => q.done)).then(() => 'settled');
  const outcome = await Promise.race([all, new Promise((resolve) => { bound = setTimeout(resolve, 30000, 'hung'); })]);
  clearTimeout(bound);
  const queriesDone = performance.now() - started;
  assert.equal(outcome, 'settled', `${queries.filter((q) => q.status === 'pending').length} queries never ended`);
  await sleep(DEADLINE_MS); // anything that would settle twice or fire late has had its chance

  // Every query ended exactly once, with the contract's expiry.
  const expected = deadlineMessage(PROVIDER, METHOD, DEADLINE_MS);
  const wrong = queries.filter((q) => q.settlements !== 1 || q.status !== 'rejected'
    || q.error?.code !== CODES.deadline || q.error?.message !== expected);
  assert.deepEqual(wrong.slice(0, 3).map((q) => ({ settlements: q.settlements, status: q.status, code: q.error?.code, message: q.error?.message })), [],
    `${wrong.length} queries did not reject exactly once with ${CODES.deadline}`);
  assert.equal(announced.length, QUERIES);
  assert.equal(new Set(announced).size, QUERIES);
  const notOnce = announced.filter((id) => resolved.get(id) !== 1);
  assert.deepEqual(notOnce.slice(0, 5), [], `${notOnce.length} requests without exactly one resolved event`);
  assert.equal(resolved.size, QUERIES);

  // Nothing left pending: registry, abort listeners, inboxes.
  assert.equal(raw.pending.size, 0, 'no pending entry');
  const listening = queries.filter((q) => getEventListeners(q.controller.signal, 'abort').length > 0).length;
  assert.equal(listening, 0, 'no listener left on any caller\'s signal');

  // Every turn completed; every agent's queue was worked off; the model got each repaired value.
  const repairedTexts = new Set();
  for (const request of rig.requests) {
    for (const m of request.messages) {
      if (m?.source?.plugin === 'inbox-input-guard') repairedTexts.add(messageText(m));
    }
  }
  for (const [i, agent] of agents.entries()) {
    const reasons = turnReasons(agent);
    assert.ok(reasons.length > 0, `agent ${i} ran`);
    assert.deepEqual(reasons.filter((r) => r?.kind !== 'completed'), [], `agent ${i}: every turn completes`);
    assert.equal(agent.inbox.nextStep.length + agent.inbox.nextTurn.length, 0, `agent ${i}: nothing pending`);
    assert.equal(agent.status, 'idle');
    const bad = poison(i);
    if (isScalar(bad)) assert.ok(repairedTexts.has(String(bad)), `agent ${i}: the model got ${JSON.stringify(String(bad))}`);
  }
  assert.equal(rig.agentErrors.length, 0);
  const nonMessages = rig.requests.flatMap((r) => r.messages).filter((m) => m === null || typeof m !== 'object'
    || typeof m.id !== 'string' || (m.role !== 'user' && m.role !== 'assistant') || (!isClockMessage(m) && !Array.isArray(m.content)));
  assert.deepEqual(nonMessages.slice(0, 3), [], 'no non-message reached the model');

  // No Timeout left.
  assert.equal(activeTimeouts(), timeoutsBefore, `no Timeout left (${process.getActiveResourcesInfo().join(', ')})`);

  // The records agree: one deadline report per query; per agent one repair or
  // drop, and one record of each injected bad entry at its durable write.
  const inspectCounts = { ...services.inspect.counts() };
  const inboxCounts = { ...services.inbox.counts() };
  assert.deepEqual(inspectCounts, { deadline: QUERIES, refused: 0, unboundAgent: 0, disposed: 0 });
  const reports = services.inspect.reports();
  assert.equal(reports.length, 1000, 'the latest 1,000 reports are kept');
  assert.equal(new Set(reports.map((r) => r.requestId)).size, 1000, 'each of a different query');
  const odd = reports.filter((r) => r.kind !== 'deadline' || !askedBy.has(r.requestId) || r.sessionId !== askedBy.get(r.requestId)
    || r.providerId !== PROVIDER || r.methodName !== METHOD || r.deadlineMs !== DEADLINE_MS);
  assert.deepEqual(odd.slice(0, 3), [], 'each report names its request, the asking agent\'s session, provider, method and deadline');
  const scalars = agents.filter((_, i) => isScalar(poison(i))).length;
  assert.deepEqual(inboxCounts, { repaired: scalars, quarantined: AGENTS - scalars, observed: AGENTS / 2 });
  assert.deepEqual(faults, [], 'no uncaught exception or unhandled rejection');

  t.diagnostic(`${QUERIES} queries and ${AGENTS} agents: turns done in ${Math.round(turnsDone)} ms, `
    + `every query ended by ${Math.round(queriesDone)} ms (deadline ${DEADLINE_MS} ms); `
    + `inspect counts ${JSON.stringify(inspectCounts)} (${reports.length} reports kept), inbox counts ${JSON.stringify(inboxCounts)}`);
});

// ---------------------------------------------------------------------------
// Agents come and go under a long-lived mount (every subagent is a new agent):
// what the guard wraps for an agent must not outlive it for long. The guard
// keeps a handle per wrapped inbox and drops those of collected inboxes as its
// list grows, so a few may wait for that; one per agent ever created may not.

const CHURN = 400;
/** A full GC every this many agents, as a live host's heap sees one now and then. */
const GC_EVERY = 20;

/** A full garbage collection, without --expose-gc on the command line. */
function collectGarbage() {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc');
}

/** A plugin that gives every new agent an own, transparent claim (a wrapper, minus the guard). */
const ownClaim = {
  name: 'own-claim',
  apply(ctx) {
    ctx.on('agent/created', ({ agent }) => {
      const previous = agent.inbox.claim;
      agent.inbox.claim = function claim(target, turn) { return previous.call(this, target, turn); };
    });
  },
};

/** Create, run and dispose CHURN agents; returns how many of their claim functions are still alive after a full GC. */
async function churn(t, plugin, config) {
  const gc = collectGarbage();
  const rig = await createRig({ timeContext: true });
  t.after(() => rig.dispose());
  await rig.mount(plugin, config);
  const claims = [];
  for (let i = 0; i < CHURN; i++) {
    const agent = await rig.createAgent();
    agent.followup(i % 2 ? userMessage(`hello ${i}`) : `a bare string #${i}`);
    await rig.waitIdle(agent);
    assert.equal(turnReasons(agent).at(-1)?.kind, i % 2 || plugin !== ownClaim ? 'completed' : 'error');
    assert.notEqual(agent.inbox.claim, Object.getPrototypeOf(agent.inbox).claim, 'claim is wrapped');
    claims.push(new WeakRef(agent.inbox.claim));
    await rig.disposeAgent(agent);
    rig.model.requests.length = 0;
    rig.agentErrors.length = 0;
    rig.logs.length = 0;
    // Yield to the event loop as a host does between sessions (a WeakRef read
    // keeps its target alive until the current job ends).
    await tick();
    if (i % GC_EVERY === GC_EVERY - 1) gc();
  }
  for (let round = 0; round < 3; round++) {
    await tick();
    gc();
  }
  return claims.filter((ref) => ref.deref() !== undefined).length;
}

test('control: a plain claim wrapper is collected with its agent', async (t) => {
  const alive = await churn(t, ownClaim);
  t.diagnostic(`${alive} of ${CHURN} wrapped claims alive after their agents were disposed`);
  assert.ok(alive <= 2, `${alive} alive`);
});

test(`guarded: ${CHURN} agents created and disposed under one mount — what the guard wrapped for them does not accumulate`, async (t) => {
  const guard = await import(GUARD_PACKAGE);
  const alive = await churn(t, guard, { inspect: { enabled: false } });
  t.diagnostic(`${alive} of ${CHURN} wrapped claims alive after their agents were disposed`);
  // Handles wait for the next pruning: about twice what was alive at the last one (measured: 21 to 42).
  assert.ok(alive <= 4 * GC_EVERY, `${alive} of ${CHURN} alive: the guard keeps one per agent`);
});
