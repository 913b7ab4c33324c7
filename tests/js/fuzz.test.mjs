// Fuzzing the inbox half of harness-guard on the real agent loop.
//
// A seeded stream of generated values (scalars with control characters, empty,
// astral and lone-surrogate strings, NaN/-0/Infinity, booleans, bigints,
// nested objects, frozen arrays, near-messages with exactly one field wrong,
// trapping and revoked Proxies, cycles, throwing getters, getters that answer
// differently on each read, deep nesting, multi-megabyte strings) is mixed
// with real user messages and delivered in batches through three channels:
// - api:    `agent.inject` while idle, then a real wake (`followup` or `steer`),
//           then `steer`/`inject`/`followup` while the turn runs;
// - resume: a session seeded with a durable log whose inbox still holds the
//           values (next-step and next-turn), then a wake;
// - claim:  a plugin's own `inbox.claim` (mounted under the guard) appends the
//           values to the claimed batch; only this path hands a reader values
//           the host refuses at its durable write (Proxies, cycles, bigint, …).
//
// The stream is cut into three consecutive slices of HARNESS_GUARD_FUZZ_CASES
// cases (whole batches), one per guarded mode, and runs in five arms on the
// real host (cordis Context, dsh-llm, dsh-session, dsh-system-prompt,
// dsh-tools, dsh-agent, dsh-agent-loop; only the model is fake):
// - control with time-context (the repair slice): turns die before their
//   step and strand what was queued behind them (the bug);
// - control without time-context (every slice): the model receives the raw
//   non-messages; this arm is the reference the guarded arms are compared with;
// - guarded repair and guarded quarantine (with time-context): every turn
//   completes; usable messages reach the model untouched and in order; scalars
//   are repaired to exactly `String(value)` (repair) or dropped; nothing
//   queued is lost; `counts()` is the tally of `violations()` and matches what
//   was repaired, dropped and written; every push the host refuses, it refuses
//   identically without the guard, and nothing more;
// - guarded report (without time-context: with it the turn crashes by
//   design): turns end and the model receives exactly what it does without
//   the guard; every non-message is recorded.
// The guard must never throw: no error originating in the guard package, no
// uncaught exception, no unhandled rejection while an arm runs.
//
// `make test` runs a fixed seed with 4,000 cases per mode (12,000 in all). A
// longer run (cases per mode):
//   HARNESS_GUARD_FUZZ_CASES=200000 HARNESS_GUARD_FUZZ_SEED=7 node --test fuzz.test.mjs
// A failure prints the seed, the batch and the case index: the same variables
// replay the same run, `generateCase(seed, index)` (support/fuzz-gen.mjs)
// rebuilds the value alone, and HARNESS_GUARD_FUZZ_FROM=<batch start> starts
// the stream at that batch (it then opens the repair slice).
//
// The guard package is imported lazily, so the control arms run on their own:
//   node --test --test-name-pattern='^control' fuzz.test.mjs
// Needs Node >= 22.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { setImmediate as tick } from 'node:timers/promises';
import { createRig, isClockMessage, userMessage } from './support/agent-rig.mjs';
import {
  ECHO_UNSAFE,
  Rng,
  fingerprint,
  generateCase,
  isRepairable,
  isUsable,
  mix,
} from './support/fuzz-gen.mjs';
import { tallyOf } from './support/records.mjs';

const GUARD_PACKAGE = 'cordis-plugin-harness-guard';

function envInt(name, fallback) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`${name} must be a non-negative integer, got ${raw}`);
  return value;
}

const SEED = envInt('HARNESS_GUARD_FUZZ_SEED', 20261130);
/** Cases per guarded mode; the three modes take consecutive slices of one stream. */
const CASES = envInt('HARNESS_GUARD_FUZZ_CASES', 4000);
const FROM = envInt('HARNESS_GUARD_FUZZ_FROM', 0);
const PREVIEW_CHARS = 40;
/** Failures kept per arm (an arm stops early once it has this many). */
const MAX_FAILURES = 12;
/** Batches an agent serves before a fresh one takes over (its history grows every model call). */
const BATCHES_PER_AGENT = 12;
const REPRODUCE = `HARNESS_GUARD_FUZZ_SEED=${SEED} HARNESS_GUARD_FUZZ_CASES=${CASES}${FROM ? ` HARNESS_GUARD_FUZZ_FROM=${FROM}` : ''}`;
/** Every guarded slice ends with a whole batch: at most this many cases past its nominal end. */
const SLICE_SLACK = 60;

let guardModule;
function loadGuard() {
  guardModule ??= import(GUARD_PACKAGE);
  return guardModule;
}

// ---------------------------------------------------------------------------
// Process-level faults: anything uncaught while an arm runs fails it.

const processFaults = [];
const onUncaught = (error) => processFaults.push({ kind: 'uncaughtException', error });
const onUnhandled = (error) => processFaults.push({ kind: 'unhandledRejection', error });
before(() => {
  process.on('uncaughtException', onUncaught);
  process.on('unhandledRejection', onUnhandled);
});
after(() => {
  process.removeListener('uncaughtException', onUncaught);
  process.removeListener('unhandledRejection', onUnhandled);
});

/** Whether an error was thrown by the guard's own code (its first stack frame is in the package or in wasm). */
function fromGuard(error) {
  const stack = typeof error?.stack === 'string' ? error.stack : '';
  const frame = stack.split('\n').find((line) => /^\s+at /.test(line));
  return frame !== undefined && (frame.includes(GUARD_PACKAGE) || frame.includes('wasm://'));
}

function errorText(error) {
  try {
    return `${error?.name ?? typeof error}: ${error?.message ?? String(error)}`;
  } catch {
    return '<unprintable error>';
  }
}

// ---------------------------------------------------------------------------
// The batch plan: a pure function of (seed, start index).

/**
 * Split cases `[from, from + count)` into batches. A batch's composition
 * depends only on the seed and its first case index, so a run started at any
 * batch start replays the same batches from there.
 *
 * Within a batch, the values pushed through the host's API (or seeded) carry
 * at most one value per shared pending identity (`id` undefined, '' or null):
 * the host refuses a second one as `already pending`, which would make the
 * outcome depend on the queue's state rather than on the value.
 */
function* plan(seed, from, count) {
  const end = from + count;
  let index = from;
  for (let no = 0; index < end; no++) {
    const rng = new Rng(mix(seed, index, 7));
    const channel = rng.weighted({ api: 60, resume: 33, claim: 7 });
    const limit = { api: rng.range(1, 8), resume: rng.range(1, 6), claim: rng.range(20, 60) }[channel];
    const batch = {
      start: index,
      channel,
      items: [],
      wakeVerb: channel === 'api' && rng.chance(0.4) ? 'steer' : 'followup',
      // A fresh agent every few batches (its history grows with every model
      // call), decided here so that every arm's agents see the same history.
      freshAgent: no % BATCHES_PER_AGENT === 0,
    };
    const identities = new Set();
    while (index < end && batch.items.length < limit) {
      const c = generateCase(seed, index);
      let route;
      // In a claim batch, message-shaped hostile values and values whose reads
      // disagree go through the API (where the host refuses or snapshots them):
      // handed to the guard directly they are the subject of the tests at the end.
      if (channel === 'claim') route = c.expect === 'shaped' || c.expect === 'either' ? 'pre' : 'feed';
      else if (channel === 'resume') route = c.json ? rng.pick(['seed-ns', 'seed-nt']) : 'pre';
      else route = rng.weighted({ pre: 45, ns: 25, nt: 30 });
      if (route !== 'feed' && c.collision !== 'unique' && c.collision !== 'throws') {
        if (identities.has(c.collision)) break;
        identities.add(c.collision);
      }
      batch.items.push({ case: c, route, verb: route === 'ns' ? rng.pick(['steer', 'inject']) : undefined });
      index += 1;
    }
    // Real user messages, mixed in where the generated values go.
    const reals = channel === 'claim' ? rng.range(0, 3) : rng.range(0, 2);
    for (let k = 0; k < reals; k++) {
      const routes = { api: ['pre', 'ns', 'nt'], resume: ['seed-ns', 'seed-nt', 'pre'], claim: ['feed'] }[channel];
      const route = rng.pick(routes);
      batch.items.splice(rng.int(batch.items.length + 1), 0, {
        real: `real ${batch.start}.${k}`,
        route,
        verb: route === 'ns' ? rng.pick(['steer', 'inject']) : undefined,
      });
    }
    if (batch.items.some((it) => it.case?.family === 'huge')) batch.freshAgent = true;
    yield batch;
  }
}

// ---------------------------------------------------------------------------
// A plugin whose own claim appends queued values to the batch it returns.

function claimFeed(feeds) {
  return {
    name: 'fuzz-claim-feed',
    apply(ctx) {
      ctx.on('agent/created', ({ agent }) => {
        const inbox = agent.inbox;
        const previous = inbox.claim;
        inbox.claim = function claim(target, turn) {
          const batch = previous.call(this, target, turn);
          const extra = feeds.get(inbox);
          if (extra) {
            feeds.delete(inbox);
            batch.push(...extra);
          }
          return batch;
        };
      });
    },
  };
}

// ---------------------------------------------------------------------------
// Arms

/** The guarded modes, in the order they take their slice of the stream. */
const MODES = ['repair', 'quarantine', 'report'];

/** The mode whose slice a batch falls in (batches are whole: a slice ends at the batch that crosses its end). */
function sliceOf(batch) {
  return MODES[Math.min(MODES.length - 1, Math.floor((batch.start - FROM) / CASES))];
}

const ARMS = {
  // Shows the bug the guard exists for, on the repair slice.
  'control-tc': { mode: null, timeContext: true, slices: ['repair'] },
  // The reference for every guarded slice: what the host does without the guard.
  'control-plain': { mode: null, timeContext: false, slices: MODES },
  repair: { mode: 'repair', timeContext: true, slices: ['repair'] },
  quarantine: { mode: 'quarantine', timeContext: true, slices: ['quarantine'] },
  report: { mode: 'report', timeContext: false, slices: ['report'] },
};

const runs = new Map();
/** Run an arm once per process; tests share the result. */
function arm(name) {
  if (!runs.has(name)) runs.set(name, runArm(name, ARMS[name]));
  return runs.get(name);
}

function repairedSource(kind) {
  return { kind: 'plugin', plugin: 'inbox-input-guard', form: 'notice', summary: `repaired inbox input (${kind})` };
}

/** Messages of one model request that belong to its step (after the last assistant message). */
function stepMessages(request) {
  const lastAssistant = request.messages.findLastIndex((m) => m?.role === 'assistant');
  return request.messages.slice(lastAssistant + 1);
}

const plain = (value) => JSON.parse(JSON.stringify(value));

async function runArm(name, { mode, timeContext, slices }) {
  const started = performance.now();
  const faultsBefore = processFaults.length;
  const rig = await createRig({ timeContext });
  const feeds = new Map();
  await rig.mount(claimFeed(feeds));
  let service;
  if (mode) {
    const guard = await loadGuard();
    await rig.mount(guard, { inspect: { enabled: false }, inbox: { mode, previewChars: PREVIEW_CHARS } });
    service = rig.ctx.get('inboxInputGuard');
    assert.ok(service, 'the guard provides the inboxInputGuard service');
  }

  const result = {
    name,
    mode,
    cases: 0,
    batches: 0,
    byChannel: { api: 0, resume: 0, claim: 0 },
    reals: 0,
    hostRefused: 0,
    failures: [],
    /** Per batch start: what a comparison with another arm needs. */
    summaries: new Map(),
    evidence: { failedTurns: 0, nonMessagesToModel: 0, stranded: 0, delivered: 0, repaired: 0, dropped: 0, recorded: 0 },
    echo: { previews: 0, unsafePreviews: [], unsafeLogLines: [] },
    ms: 0,
  };

  let agent;
  let slice;
  const freshAgent = async () => {
    if (agent) await rig.disposeAgent(agent);
    agent = await rig.createAgent();
  };

  try {
    for (const batch of plan(SEED, FROM, CASES * MODES.length)) {
      if (!slices.includes(sliceOf(batch))) continue;
      const first = slice !== sliceOf(batch);
      slice = sliceOf(batch);
      const where = `seed=${SEED} batch@${batch.start} (${batch.channel})`;
      const fail = (index, message) => {
        if (result.failures.length < MAX_FAILURES) {
          result.failures.push(`[${name}] ${where}${index === null ? '' : ` case=${index}`}: ${message}`);
        }
      };
      if (first || batch.freshAgent) await freshAgent();
      await runBatch({ rig, feeds, service, mode, result, batch, fail, getAgent: () => agent, setAgent: (a) => { agent = a; } });
      result.batches += 1;
      // Yield to the event loop between batches, as a host does: the loop
      // alone runs on microtasks, and until a job ends every object a WeakRef
      // was read for stays alive (long runs would keep every agent).
      await tick();
      if (result.failures.length >= MAX_FAILURES) break;
    }
  } finally {
    await rig.dispose();
  }
  for (const fault of processFaults.slice(faultsBefore)) {
    result.failures.push(`[${name}] ${fault.kind} while the arm ran (${REPRODUCE}): ${errorText(fault.error)}`);
  }
  result.ms = Math.round(performance.now() - started);
  return result;
}

/** Push one value through the real API; returns 'ok' or the host's refusal. */
function push(agent, verb, value, result, fail, index) {
  try {
    agent[verb](value);
    return { outcome: 'ok' };
  } catch (error) {
    result.hostRefused += 1;
    if (fromGuard(error)) fail(index, `a push threw from inside the guard: ${error.stack}`);
    return { outcome: `refused: ${errorText(error)}` };
  }
}

async function runBatch({ rig, feeds, service, mode, result, batch, fail, getAgent, setAgent }) {
  const guarded = mode === 'repair' || mode === 'quarantine';
  let agent = getAgent();
  const pushes = [];
  /** Expected deliveries, in the order the model must receive them. */
  const pre = [];
  const running = { ns: [], nt: [] };
  const seeded = { 'next-step': [], 'next-turn': [] };
  let feedNonUsable = 0;
  let apiBadAccepted = 0;

  /** What the contract makes of `held` (the host's copy) or of a value handed to the guard as is. */
  const expectation = (item, value, { asHeld }) => {
    if (item.real !== undefined) return { type: 'usable', id: value.id, snapshot: value };
    const c = item.case;
    const usable = asHeld ? isUsable(value) : c.expect === 'usable';
    if (usable) return { type: 'usable', index: c.index, id: value.id, snapshot: value };
    if (!mode || mode === 'report') return { type: 'raw', index: c.index };
    const scalar = asHeld ? isRepairable(value) : c.expect === 'scalar';
    if (mode === 'repair' && scalar) return { type: 'repaired', index: c.index, text: String(value), kind: typeof value };
    return { type: 'drop', index: c.index };
  };

  const valueOf = (item) => (item.real !== undefined ? userMessage(item.real) : item.case.make());
  const record = (item, outcome) => {
    if (item.case) pushes.push([item.case.index, outcome]);
  };

  // Resume: a session whose durable log still holds the values.
  if (batch.channel === 'resume') {
    const seedItems = batch.items.filter((it) => it.route.startsWith('seed-'));
    const values = seedItems.map(valueOf);
    const lengths = { 'next-step': 0, 'next-turn': 0 };
    const time = Date.now();
    const log = seedItems.map((it, seq) => {
      const target = it.route === 'seed-ns' ? 'next-step' : 'next-turn';
      return { type: 'agent/inbox/spliced', seq, time, data: { target, start: lengths[target]++, inserted: [values[seq]] } };
    });
    let resumed;
    try {
      resumed = await rig.createAgent({ seed: log });
    } catch (error) {
      if (fromGuard(error)) fail(null, `resuming threw from inside the guard: ${error.stack}`);
      for (const it of seedItems) record(it, `refused at resume: ${errorText(error)}`);
      result.hostRefused += seedItems.length;
    }
    if (resumed) {
      await rig.disposeAgent(agent);
      agent = resumed;
      setAgent(agent);
      const held = { 'next-step': [...agent.inbox.nextStep], 'next-turn': [...agent.inbox.nextTurn] };
      const next = { 'next-step': 0, 'next-turn': 0 };
      for (const it of seedItems) {
        const target = it.route === 'seed-ns' ? 'next-step' : 'next-turn';
        const copy = held[target][next[target]++];
        record(it, 'ok');
        seeded[target].push(expectation(it, copy, { asHeld: true }));
      }
    }
  }

  const eventsMark = agent.session.events.length;
  rig.model.requests.length = 0;
  rig.agentErrors.length = 0;
  rig.logs.length = 0;

  // While idle: inject (next-step, no wake).
  for (const it of batch.items.filter((i) => i.route === 'pre')) {
    const value = valueOf(it);
    const { outcome } = push(agent, 'inject', value, result, fail, it.case?.index);
    record(it, outcome);
    if (outcome !== 'ok') continue;
    const copy = agent.inbox.nextStep.at(-1);
    if (it.case && !isUsable(copy)) apiBadAccepted += 1;
    pre.push(expectation(it, copy, { asHeld: true }));
  }

  // The claim feed: values handed to the guard exactly as made.
  const feedItems = batch.items.filter((i) => i.route === 'feed');
  const feed = [];
  if (feedItems.length > 0) {
    const values = feedItems.map(valueOf);
    feeds.set(agent.inbox, values);
    feedItems.forEach((it, k) => {
      if (it.case && it.case.expect !== 'usable') feedNonUsable += 1;
      feed.push(expectation(it, values[k], { asHeld: false }));
    });
  }

  // The wake: a real user message.
  const wake = userMessage(`wake ${batch.start}`);
  agent[batch.wakeVerb](wake);
  feeds.delete(agent.inbox);
  result.reals += 1;

  // While the turn runs: steer/inject (next-step) and followup (next-turn).
  for (const it of batch.items.filter((i) => i.route === 'ns' || i.route === 'nt')) {
    const value = valueOf(it);
    const verb = it.route === 'nt' ? 'followup' : it.verb;
    const { outcome } = push(agent, verb, value, result, fail, it.case?.index);
    record(it, outcome);
    if (outcome !== 'ok') continue;
    const copy = (it.route === 'nt' ? agent.inbox.nextTurn : agent.inbox.nextStep).at(-1);
    if (it.case && !isUsable(copy)) apiBadAccepted += 1;
    running[it.route].push(expectation(it, copy, { asHeld: true }));
  }

  try {
    await rig.waitIdle(agent, { timeoutMs: 60000 });
  } catch (error) {
    fail(null, `the agent did not become idle: ${errorText(error)}`);
  }

  for (const it of batch.items) {
    if (it.case) result.cases += 1;
    else result.reals += 1;
  }
  result.byChannel[batch.channel] += batch.items.filter((it) => it.case).length;

  // What happened.
  const delivered = [];
  for (const request of rig.requests) for (const m of stepMessages(request)) if (!isClockMessage(m)) delivered.push(m);
  rig.model.requests.length = 0;
  const turnEnds = agent.session.events.slice(eventsMark).filter((e) => e.type === 'turn/end').map((e) => e.data.reason);
  const agentErrors = rig.agentErrors.splice(0);
  const stranded = agent.inbox.nextStep.length + agent.inbox.nextTurn.length;

  // The order the loop hands them to the model. The wake's claim takes the
  // whole next-step list (seeded, then injected) and the first queued turn: a
  // seeded one, else the followed-up wake (a steered wake, in api batches
  // where nothing is seeded, is last in next-step: the same order). Another
  // plugin's claim appends its values to that batch. What is pushed while the
  // turn runs follows: next-step in the turn's next step, then each queued
  // turn in a turn of its own.
  const wakeEntry = { type: 'usable', id: wake.id, snapshot: wake };
  const expected = [...seeded['next-step'], ...pre, ...seeded['next-turn'], wakeEntry, ...feed, ...running.ns, ...running.nt];

  for (const error of agentErrors) {
    if (fromGuard(error.error)) fail(null, `a turn failed inside the guard: ${error.error?.stack}`);
  }

  result.evidence.failedTurns += turnEnds.filter((r) => r?.kind === 'error').length;
  result.evidence.nonMessagesToModel += delivered.filter((m) => !isUsable(m)).length;
  result.evidence.stranded += stranded;
  result.evidence.delivered += delivered.length;

  result.summaries.set(batch.start, {
    pushes,
    // Only the report slice is compared message by message (long runs keep this small).
    delivered: sliceOf(batch) === 'report' ? delivered.map(fingerprint) : undefined,
    turnEnds: sliceOf(batch) === 'report' ? turnEnds.map((r) => r?.kind) : undefined,
  });

  if (guarded) {
    checkGuardedBatch({ mode, result, fail, agent, expected, delivered, turnEnds, agentErrors, stranded, service, apiBadAccepted, rig });
  } else if (mode === 'report') {
    checkReportBatch({ result, fail, agent, service, apiBadAccepted, feedNonUsable, rig });
  }

  // Without the guard (and in report mode) the host's failures strand work: clear it for the next batch.
  if (stranded > 0 && !guarded) {
    try {
      agent.inbox.clear();
    } catch {
      setAgent(undefined);
      await rig.disposeAgent(agent);
      setAgent(await rig.createAgent());
    }
  }
}

function checkGuardedBatch({ mode, result, fail, agent, expected, delivered, turnEnds, agentErrors, stranded, service, apiBadAccepted, rig }) {
  // Every turn completes.
  for (const reason of turnEnds) {
    if (reason?.kind !== 'completed') fail(null, `a turn ended ${JSON.stringify(reason)?.slice(0, 300)}`);
  }
  for (const error of agentErrors) fail(null, `agent/error: ${errorText(error.error)}`);
  if (turnEnds.length === 0) fail(null, 'no turn ran');

  // Nothing queued is lost.
  if (stranded > 0 || agent.status !== 'idle') fail(null, `${stranded} entries still pending, agent ${agent.status}`);

  // The model received exactly the usable and repaired entries, in order.
  const { repaired, dropped } = matchDeliveries(expected, delivered, fail);
  for (const m of delivered) {
    if (!isUsable(m)) fail(null, `a non-message reached the model: ${fingerprint(m)}`);
  }
  result.evidence.repaired += repaired;
  result.evidence.dropped += dropped;

  // Records: counts() is the tally of violations(), and matches what happened.
  checkRecords({ result, fail, agent, service, rig, expect: { repaired, quarantined: dropped, observed: apiBadAccepted } });
}

/** Walk the expected entries against what the model received; returns how many were repaired and dropped. */
function matchDeliveries(expected, delivered, fail) {
  let next = 0;
  let repaired = 0;
  let dropped = 0;
  let broken = false;
  for (const e of expected) {
    if (e.type === 'drop') {
      dropped += 1;
      continue;
    }
    if (e.type === 'repaired') repaired += 1;
    if (broken) continue;
    const m = delivered[next];
    if (m === undefined) {
      fail(e.index ?? null, `the model never received ${e.type === 'usable' ? `message ${e.id}` : `the repaired ${e.kind} ${JSON.stringify(e.text.slice(0, 40))}`}`);
      broken = true;
      continue;
    }
    if (e.type === 'usable') {
      if (m.id !== e.id) {
        fail(e.index ?? null, `out of order or missing: expected message ${e.id}, the model received ${fingerprint(m)}`);
        broken = true;
        continue;
      }
      try {
        assert.deepStrictEqual(plain(m), plain(e.snapshot));
      } catch (error) {
        fail(e.index ?? null, `message ${e.id} was altered on its way to the model: ${error.message.slice(0, 400)}`);
      }
    } else if (e.type === 'repaired') {
      const shaped = m.role === 'user' && typeof m.id === 'string' && m.id.length > 0
        && Array.isArray(m.content) && m.content.length === 1 && m.content[0]?.type === 'text';
      if (!shaped) {
        fail(e.index, `expected the repaired ${e.kind}, the model received ${fingerprint(m)}`);
        broken = true;
        continue;
      }
      if (m.content[0].text !== e.text) {
        fail(e.index, `repaired text is not String(value): ${JSON.stringify(m.content[0].text.slice(0, 60))} vs ${JSON.stringify(e.text.slice(0, 60))}`);
      }
      try {
        assert.deepStrictEqual(plain(m.source), repairedSource(e.kind));
      } catch {
        fail(e.index, `repaired source is ${JSON.stringify(m.source)}`);
      }
    }
    next += 1;
  }
  if (!broken && next < delivered.length) {
    fail(null, `the model received ${delivered.length - next} unexpected message(s), first: ${fingerprint(delivered[next])}`);
  }
  return { repaired, dropped };
}

function checkReportBatch({ result, fail, agent, service, apiBadAccepted, feedNonUsable, rig }) {
  checkRecords({ result, fail, agent, service, rig, expect: { repaired: 0, quarantined: 0 }, apiBadAccepted, feedNonUsable });
}

function checkRecords({ result, fail, agent, service, rig, expect, apiBadAccepted, feedNonUsable }) {
  let violations;
  let counts;
  try {
    violations = service.violations();
    counts = { ...service.counts() };
    service.reset();
  } catch (error) {
    fail(null, `the service threw: ${errorText(error)}`);
    return;
  }
  result.evidence.recorded += violations.length;
  const tally = tallyOf(violations);
  try {
    assert.deepStrictEqual(counts, tally);
  } catch {
    fail(null, `counts() ${JSON.stringify(counts)} disagrees with violations() ${JSON.stringify(tally)}`);
  }
  for (const key of Object.keys(expect)) {
    if (counts[key] !== expect[key]) fail(null, `counts().${key} is ${counts[key]}, expected ${expect[key]} (${JSON.stringify(counts)})`);
  }
  if (apiBadAccepted !== undefined) {
    // Report mode: each non-message written is recorded at its write, each claimed one at least once more.
    const durable = violations.filter((v) => v.origin === 'durable').length;
    if (durable !== apiBadAccepted) fail(null, `${durable} durable records for ${apiBadAccepted} non-messages written`);
    const claimed = violations.filter((v) => v.origin === 'claimed').length;
    if (claimed < feedNonUsable) fail(null, `${claimed} claimed records for ${feedNonUsable} non-messages claimed`);
  }
  for (const v of violations) {
    if (v.sessionId !== agent.id) fail(null, `a violation names session ${v.sessionId}, not ${agent.id}`);
    if (!['durable', 'pending', 'claimed'].includes(v.origin)) fail(null, `violation origin ${v.origin}`);
    if (!['repaired', 'quarantined', 'observed'].includes(v.action)) fail(null, `violation action ${v.action}`);
    if (typeof v.preview !== 'string' || typeof v.valueKind !== 'string') {
      fail(null, `violation without a string preview or valueKind: ${JSON.stringify(v)?.slice(0, 200)}`);
      continue;
    }
    const chars = [...v.preview].length;
    if (chars > PREVIEW_CHARS + 1 || (chars > PREVIEW_CHARS && !v.preview.endsWith('…'))) {
      fail(null, `a preview of ${chars} characters with previewChars ${PREVIEW_CHARS}`);
    }
    result.echo.previews += 1;
    if (ECHO_UNSAFE.test(v.preview) && result.echo.unsafePreviews.length < 5) result.echo.unsafePreviews.push(v.preview);
  }
  for (const line of rig.logs) {
    if (line.name === 'harness-guard' && ECHO_UNSAFE.test(line.text) && result.echo.unsafeLogLines.length < 5) {
      result.echo.unsafeLogLines.push(line.text.slice(0, 200));
    }
  }
  rig.logs.length = 0;
}

/** Compare an arm's per-batch summaries with the control arm's. */
function compareWith(control, run, { pushes = true, delivery = false }) {
  const failures = [];
  const note = (message) => { if (failures.length < MAX_FAILURES) failures.push(message); };
  for (const [start, summary] of run.summaries) {
    const reference = control.summaries.get(start);
    if (!reference) continue;
    if (pushes) {
      const outcomes = new Map(reference.pushes);
      for (const [index, outcome] of summary.pushes) {
        if (outcomes.get(index) !== outcome) {
          note(`[${run.name}] seed=${SEED} batch@${start} case=${index}: pushed with the guard: ${outcome}; without: ${outcomes.get(index)}`);
        }
      }
    }
    if (delivery) {
      if (JSON.stringify(summary.turnEnds) !== JSON.stringify(reference.turnEnds)) {
        note(`[${run.name}] seed=${SEED} batch@${start}: turns ended ${summary.turnEnds} with the guard, ${reference.turnEnds} without`);
      }
      const a = summary.delivered;
      const b = reference.delivered;
      const at = a.findIndex((fp, i) => fp !== b[i]);
      if (a.length !== b.length || at >= 0) {
        note(`[${run.name}] seed=${SEED} batch@${start}: the model received ${a.length} messages with the guard, ${b.length} without; first difference at ${at}: ${a[at]} vs ${b[at]}`);
      }
    }
  }
  return failures;
}

function summary(run) {
  const c = run.byChannel;
  return `${run.name}: ${run.cases} cases in ${run.batches} batches (${c.api} through followup/steer/inject, ${c.resume} resumed, `
    + `${c.claim} claimed) plus ${run.reals} real user messages; host refused ${run.hostRefused} pushes; `
    + `${run.evidence.failedTurns} failed turns, ${run.evidence.nonMessagesToModel} non-messages to the model, `
    + `${run.evidence.stranded} stranded; ${run.evidence.repaired} repaired, ${run.evidence.dropped} dropped, `
    + `${run.evidence.recorded} records; ${run.ms} ms (seed ${SEED}${FROM ? `, from ${FROM}` : ''})`;
}

function assertNoFailures(failures) {
  assert.deepEqual(failures, [], `${failures.length} failure(s); reproduce with ${REPRODUCE}:\n${failures.join('\n')}`);
}

// ---------------------------------------------------------------------------
// Tests

test('control: the generated stream without the guard, with time-context — turns die before their step', async (t) => {
  const run = await arm('control-tc');
  t.diagnostic(summary(run));
  assertNoFailures(run.failures);
  assert.ok(run.cases >= CASES - SLICE_SLACK, `ran ${run.cases} of ${CASES} cases`);
  assert.ok(run.evidence.failedTurns > 0, 'some turns fail');
  assert.ok(run.evidence.stranded > 0, 'queued work is stranded behind a failed turn');
});

test('control: the generated stream without the guard, without time-context — the model receives non-messages', async (t) => {
  const run = await arm('control-plain');
  t.diagnostic(summary(run));
  assertNoFailures(run.failures);
  assert.ok(run.evidence.nonMessagesToModel > 0, 'raw non-messages reach the model');
  assert.ok(run.evidence.failedTurns > 0, 'values the host cannot write fail their turn');
});

for (const mode of ['repair', 'quarantine']) {
  test(`guarded: ${mode} mode — every turn completes, usable messages reach the model untouched and in order, nothing is lost`, async (t) => {
    const run = await arm(mode);
    t.diagnostic(summary(run));
    assertNoFailures(run.failures);
    assert.ok(run.cases >= CASES - SLICE_SLACK, `ran ${run.cases} of ${CASES} cases`);
    assert.equal(run.evidence.failedTurns, 0);
    assert.equal(run.evidence.nonMessagesToModel, 0);
    assert.ok(run.evidence.dropped > 0 && run.evidence.recorded > 0, 'the stream had work for the guard');
    if (mode === 'repair') assert.ok(run.evidence.repaired > 0, 'scalars were repaired');
    else assert.equal(run.evidence.repaired, 0, 'quarantine repairs nothing');
    // The host refuses exactly what it refuses without the guard, nothing more.
    assertNoFailures(compareWith(await arm('control-plain'), run, { pushes: true }));
  });
}

test('guarded: report mode (without time-context) — the host behaves exactly as without the guard, and everything is recorded', async (t) => {
  const run = await arm('report');
  t.diagnostic(summary(run));
  assertNoFailures(run.failures);
  assert.ok(run.cases >= CASES - SLICE_SLACK, `ran ${run.cases} of ${CASES} cases`);
  assert.ok(run.evidence.recorded > 0);
  assert.equal(run.evidence.repaired, 0);
  assertNoFailures(compareWith(await arm('control-plain'), run, { pushes: true, delivery: true }));
});

test('guarded: previews and warn lines show control and bidi characters as escapes', async (t) => {
  const run = await arm('repair');
  t.diagnostic(`${run.echo.previews} previews of the repair slice checked`);
  assert.ok(run.echo.previews > 0, 'previews were checked');
  assert.deepEqual({ previews: run.echo.unsafePreviews, logLines: run.echo.unsafeLogLines }, { previews: [], logLines: [] });
});

// ---------------------------------------------------------------------------
// Message-shaped values the host cannot read as a first read suggests, handed
// to a turn by another plugin's claim (a claim feed that appends to the batch),
// one per turn. The host's own API refuses or snapshots them; a claim feed is
// the way around it. The guard judges such a value by its plain copy (what the
// host would store): a usable copy is handed on in its place, anything else is
// the non-message it is.

const CLAIM_PATH_CASES = 120;

/** The first CLAIM_PATH_CASES cases of the stream that `keep` selects. */
function claimPathCases(keep) {
  const out = [];
  for (let index = 0; out.length < CLAIM_PATH_CASES; index++) {
    const c = generateCase(SEED, index);
    if (keep(c)) out.push(c);
  }
  return out;
}

/** Message-shaped values of the kinds the contract calls hostile: cycles, throwing accessors, trapping Proxies. */
const shapedHostileCases = () => claimPathCases((c) => c.expect === 'shaped' && c.hostile);
/** Values whose reads disagree: accessors or a Proxy answering differently on each read. */
const chameleonCases = () => claimPathCases((c) => c.expect === 'either');

/** Whether a fresh instance of the case has a plain copy that is a usable message (the contract's reading). */
function plainUsable(c) {
  try {
    const text = JSON.stringify(c.make());
    return text !== undefined && isUsable(JSON.parse(text));
  } catch {
    return false;
  }
}

/**
 * One case per turn through a claim feed, without the guard (`mode` undefined) or
 * with it; `feedAbove`: the feed wraps `claim` over the guard's wrapper (mounted
 * after it) instead of under it.
 */
async function runOneByOne(cases, mode, { feedAbove = false } = {}) {
  const rig = await createRig({ timeContext: true });
  const feeds = new Map();
  if (!feedAbove) await rig.mount(claimFeed(feeds));
  let service;
  if (mode) {
    await rig.mount(await loadGuard(), { inspect: { enabled: false }, inbox: { mode, previewChars: PREVIEW_CHARS } });
    service = rig.ctx.get('inboxInputGuard');
  }
  if (feedAbove) await rig.mount(claimFeed(feeds));
  const outcomes = [];
  try {
    let agent;
    for (const [k, c] of cases.entries()) {
      if (k % BATCHES_PER_AGENT === 0) {
        if (agent) await rig.disposeAgent(agent);
        agent = await rig.createAgent();
      }
      const mark = agent.session.events.length;
      rig.model.requests.length = 0;
      feeds.set(agent.inbox, [c.make()]);
      agent.followup(userMessage(`wake ${c.index}`));
      await rig.waitIdle(agent);
      const reason = agent.session.events.slice(mark).find((e) => e.type === 'turn/end')?.data.reason;
      const delivered = rig.requests.flatMap(stepMessages).filter((m) => !isClockMessage(m));
      const counts = service ? { ...service.counts() } : { repaired: 0, quarantined: 0, observed: 0 };
      service?.reset();
      outcomes.push({
        case: c.index,
        variant: c.variant,
        plain: plainUsable(c),
        turn: reason?.kind,
        error: reason?.error?.message,
        delivered: delivered.length,
        nonMessagesToModel: delivered.filter((m) => !isUsable(m)).map(fingerprint),
        quarantined: counts.quarantined,
        observed: counts.observed,
      });
      if (agent.inbox.hasPending) agent.inbox.clear();
    }
  } finally {
    await rig.dispose();
  }
  return outcomes;
}

function tallyBy(list, key) {
  const out = {};
  for (const item of list) out[item[key]] = (out[item[key]] ?? 0) + 1;
  return out;
}

/** Outcomes that break "no value kills the turn or reaches the model as a non-message". */
const harmed = (outcomes) => outcomes.filter((o) => o.turn !== 'completed' || o.nonMessagesToModel.length > 0);

test('control: a message-shaped hostile value from a plugin\'s claim fails the turn at the host\'s durable write', async (t) => {
  const outcomes = await runOneByOne(shapedHostileCases(), undefined);
  t.diagnostic(`${outcomes.length} message-shaped hostile values, one per turn: ${JSON.stringify(tallyBy(outcomes, 'variant'))}`);
  assert.deepEqual(outcomes.filter((o) => o.turn !== 'error'), [], 'each one kills its turn without the guard');
});

for (const mode of ['repair', 'quarantine']) {
  for (const feedAbove of [false, true]) {
    const where = feedAbove ? 'a feed over the guard\'s claim' : 'a feed under the guard\'s claim';
    test(`guarded (${mode}, ${where}): a message-shaped hostile value is dropped, or handed on as its usable plain copy`, async (t) => {
      const outcomes = await runOneByOne(shapedHostileCases(), mode, { feedAbove });
      const bad = harmed(outcomes);
      // Dropped exactly when it has no usable plain copy; otherwise the copy reached the model.
      const misjudged = outcomes.filter((o) => o.quarantined !== (o.plain ? 0 : 1) || (o.plain && o.delivered !== 2));
      t.diagnostic(`${outcomes.length} values: ${outcomes.filter((o) => !o.plain).length} without a usable plain copy, dropped; ${bad.length} harmed a turn`);
      assert.deepEqual(bad.slice(0, 4), [], `${bad.length} of ${outcomes.length} harmed a turn (seed=${SEED}): ${JSON.stringify(tallyBy(bad, 'variant'))}`);
      assert.deepEqual(misjudged.slice(0, 4), [], `${misjudged.length} misjudged (seed=${SEED})`);
      assert.ok(outcomes.some((o) => !o.plain) && outcomes.some((o) => o.plain), 'the cases hold both kinds');
    });
  }
}

test('guarded (report): a message-shaped hostile value is left as it is and recorded — the turn fails as without the guard', async (t) => {
  const outcomes = await runOneByOne(shapedHostileCases(), 'report');
  const control = await runOneByOne(shapedHostileCases(), undefined);
  t.diagnostic(`${outcomes.length} values, ${outcomes.filter((o) => o.observed === 1).length} recorded`);
  assert.deepEqual(outcomes.map((o) => o.turn), control.map((o) => o.turn), 'report mode touches nothing');
  assert.deepEqual(outcomes.filter((o) => o.observed !== (o.plain ? 0 : 1)).slice(0, 4), [], 'each value with no usable plain copy is one observation');
});

test('control: a value whose reads disagree, from a plugin\'s claim, fails turns or reaches the model as a non-message', async (t) => {
  const outcomes = await runOneByOne(chameleonCases(), undefined);
  const bad = harmed(outcomes);
  t.diagnostic(`${outcomes.length} values whose reads disagree, one per turn; ${bad.length} failed a turn or reached the model as non-messages`);
  assert.ok(bad.length > 0);
});

for (const mode of ['repair', 'quarantine']) {
  for (const feedAbove of [false, true]) {
    const where = feedAbove ? 'a feed over the guard\'s claim' : 'a feed under the guard\'s claim';
    test(`guarded (${mode}, ${where}): a value whose reads disagree never fails a turn and never reaches the model as a non-message`, async (t) => {
      const outcomes = await runOneByOne(chameleonCases(), mode, { feedAbove });
      const bad = harmed(outcomes);
      t.diagnostic(`${outcomes.length} values whose reads disagree, ${bad.length} slipped through, ${outcomes.filter((o) => o.quarantined > 0).length} dropped`);
      assert.deepEqual(bad.slice(0, 4), [], `${bad.length} of ${outcomes.length} slipped through (seed=${SEED}): ${JSON.stringify(tallyBy(bad, 'variant'))}`);
    });
  }
}

test('guarded (report): a value whose reads disagree is neither dropped nor replaced', async () => {
  // Its own reads change what it answers, so its turn is not compared with the
  // control's: report mode only promises to touch nothing.
  const outcomes = await runOneByOne(chameleonCases(), 'report');
  assert.equal(outcomes.length, CLAIM_PATH_CASES);
  assert.deepEqual(outcomes.filter((o) => o.quarantined > 0), []);
});
