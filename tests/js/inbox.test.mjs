// The inbox half of harness-guard, against the real agent loop.
//
// Every case has two arms on the same real host (cordis Context, dsh-llm,
// dsh-session, dsh-system-prompt, dsh-tools, dsh-agent, dsh-agent-loop and,
// where named, dsh-time-context): a CONTROL arm without the guard that shows
// the defect, so the GUARDED arm cannot pass vacuously, and the GUARDED arm
// that mounts `cordis-plugin-harness-guard` and checks the contract. Only the
// model is fake (an offline adapter registered through ctx.llm).
//
// The guard package is imported lazily inside the guarded tests, so the
// control arms run on their own:
//   node --test --test-name-pattern='^control' tests/js/inbox.test.mjs
// Needs Node >= 22.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Inbox } from '@deepseek-ai/dsh-agent';
import {
  createRig,
  isClockMessage,
  logWithPendingInbox,
  messageText,
  userMessage,
} from './support/agent-rig.mjs';
import { tallyOf } from './support/records.mjs';

const GUARD_PACKAGE = 'cordis-plugin-harness-guard';
const BARE = 'a bare string from a plugin';
const SCALARS = [BARE, 42, true];

let guardModule;
function loadGuard() {
  guardModule ??= import(GUARD_PACKAGE);
  return guardModule;
}

/** The plugin config: inbox half only (the inspect half has its own suite). */
function guardConfig({ mode, previewChars } = {}) {
  return {
    inspect: { enabled: false },
    inbox: {
      ...(mode === undefined ? {} : { mode }),
      ...(previewChars === undefined ? {} : { previewChars }),
    },
  };
}

/** Mount the guard on a rig; returns `{ fiber, service }`. */
async function mountGuard(rig, options) {
  const guard = await loadGuard();
  const fiber = await rig.mount(guard, guardConfig(options));
  const service = rig.ctx.get('inboxInputGuard');
  assert.ok(service, 'the guard provides the inboxInputGuard service');
  return { fiber, service };
}

/** A rig with the guard already mounted (after time-context unless told otherwise). */
async function guardedRig(t, { timeContext = true, pluginOrder, ...options } = {}) {
  const guard = await loadGuard();
  const rig = await createRig({ timeContext, plugin: guard, pluginConfig: guardConfig(options), pluginOrder });
  t.after(() => rig.dispose());
  return { rig, service: rig.ctx.get('inboxInputGuard') };
}

async function plainRig(t, options = {}) {
  const rig = await createRig(options);
  t.after(() => rig.dispose());
  return rig;
}

/** The `source` the contract gives a repaired scalar. */
function repairedSource(kind) {
  return { kind: 'plugin', plugin: 'inbox-input-guard', form: 'notice', summary: `repaired inbox input (${kind})` };
}

function assertRepaired(message, text, kind) {
  assert.equal(message?.role, 'user', 'a repaired value is a user message');
  assert.equal(typeof message.id, 'string');
  assert.ok(message.id.length > 0, 'a repaired message has an id');
  assert.deepEqual(message.content, [{ type: 'text', text }], 'the producer\'s text reaches the model verbatim');
  assert.deepEqual(message.source, repairedSource(kind));
}

/** Messages of one model request that belong to its step (after the last assistant message). */
function stepMessages(request) {
  const lastAssistant = request.messages.findLastIndex((m) => m?.role === 'assistant');
  return request.messages.slice(lastAssistant + 1);
}

/** Step messages rendered for comparison: text, or 'CLOCK' for time-context's message. */
function rendered(request) {
  return stepMessages(request).map((m) => (isClockMessage(m) ? 'CLOCK' : messageText(m)));
}

function countOf(events, type) {
  return events.filter((e) => e === type).length;
}

/** Seq of the durable splice that inserted `value`. */
function insertionSeq(agent, value) {
  return agent.session.events.find((e) => e.type === 'agent/inbox/spliced'
    && e.data.inserted.some((entry) => Object.is(entry, value)))?.seq;
}

/** counts() must be the tally of violations() by action. */
function assertCountsMatch(service) {
  assert.deepEqual({ ...service.counts() }, tallyOf(service.violations()));
}

function assertViolationShape(v, previewChars = 80) {
  assert.ok(Number.isFinite(typeof v.at === 'number' ? v.at : Date.parse(v.at)), 'at is a time');
  assert.ok(['durable', 'pending', 'claimed'].includes(v.origin), `origin ${v.origin}`);
  assert.ok(['repaired', 'quarantined', 'observed'].includes(v.action), `action ${v.action}`);
  assert.equal(typeof v.sessionId, 'string');
  assert.equal(typeof v.valueKind, 'string');
  assert.equal(typeof v.preview, 'string');
  assert.ok(v.preview.length <= previewChars + 1, `preview of ${v.preview.length} chars exceeds ${previewChars} + '…'`);
  if (v.preview.length > previewChars) assert.ok(v.preview.endsWith('…'), 'a cut preview ends with …');
}

/** The control-arm signature of the reported crash: TypeError at time-context, no step. */
function assertKindCrash(rig, agent, turn) {
  const summary = rig.turn(agent, turn);
  assert.equal(summary.reason?.kind, 'error', `turn ${turn} ends in error`);
  assert.match(summary.reason.error.message, /Cannot read properties of undefined \(reading 'kind'\)/);
  assert.equal(summary.stepStarted, false, 'the turn dies before step/start');
  const error = rig.agentErrors.find((e) => e.agentId === agent.id)?.error;
  assert.ok(error instanceof TypeError);
  assert.match(error.stack, /browserTimeZone/, 'the throw is inside time-context');
}

/** Deliver `value` through `verb` the way a plugin would; returns the turn it lands in. */
async function deliver(rig, agent, verb, value) {
  switch (verb) {
    case 'followup':
      agent.followup(value);
      return 1;
    case 'inject':
      // inject does not wake: it waits for the next step boundary, here a follow-up.
      agent.inject(value);
      agent.followup(userMessage('wake'));
      return 1;
    case 'steer': {
      // mid-turn: the model is answering step 1 when the steering arrives.
      const gate = rig.model.hold();
      agent.followup(userMessage('first'));
      await gate.reached;
      agent.steer(value);
      gate.release();
      return 1;
    }
    default:
      throw new Error(verb);
  }
}

// ---------------------------------------------------------------------------
// followup / steer / inject of a string, a number and a boolean (time-context)
// ---------------------------------------------------------------------------

for (const verb of ['followup', 'steer', 'inject']) {
  for (const value of SCALARS) {
    const kind = typeof value;
    const text = String(value);

    test(`control: ${verb}(${kind}) with time-context kills the turn before its step`, async (t) => {
      const rig = await plainRig(t);
      const agent = await rig.createAgent();
      await deliver(rig, agent, verb, value);
      await rig.waitIdle(agent);
      const summary = rig.turn(agent, 1);
      assert.equal(summary.reason?.kind, 'error');
      assert.match(summary.reason.error.message, /reading 'kind'/);
      if (verb === 'steer') {
        // step 1 ran; the steering's step never starts.
        assert.equal(countOf(summary.types, 'step/start'), 1);
        assert.equal(rig.requests.length, 1);
      } else {
        assertKindCrash(rig, agent, 1);
        assert.equal(rig.requests.length, 0, 'the model is never called');
      }
      assert.ok(!rig.requests.some((r) => r.messages.some((m) => messageText(m) === text || m === value)),
        'the value never reaches the model');
    });

    test(`guarded: ${verb}(${kind}) with time-context reaches the model verbatim`, async (t) => {
      const { rig, service } = await guardedRig(t);
      const agent = await rig.createAgent();
      await deliver(rig, agent, verb, value);
      await rig.waitIdle(agent);
      const summary = rig.turn(agent, 1);
      assert.deepEqual(summary.reason, { kind: 'completed' });
      assert.equal(rig.agentErrors.length, 0);
      const request = rig.requests.at(-1);
      const step = stepMessages(request);
      if (verb === 'steer') {
        assert.equal(countOf(summary.types, 'step/start'), 2, 'the steering gets its own step');
        assert.equal(rig.requests.length, 2);
        assert.deepEqual(rendered(request), [text, 'CLOCK']);
        assertRepaired(step[0], text, kind);
      } else if (verb === 'inject') {
        assert.equal(rig.requests.length, 1);
        assert.deepEqual(rendered(request), [text, 'wake', 'CLOCK'], 'next-step input first, then the turn, then the clock');
        assertRepaired(step[0], text, kind);
      } else {
        assert.equal(rig.requests.length, 1);
        assert.deepEqual(rendered(request), [text, 'CLOCK']);
        assertRepaired(step[0], text, kind);
      }
      assert.ok(isClockMessage(step.at(-1)), 'time-context still adds its clock message');
      // The durable transcript holds the repaired message, not the raw value.
      const logged = summary.userMessages.find((m) => messageText(m) === text);
      assertRepaired(logged, text, kind);

      const violations = service.violations();
      for (const v of violations) assertViolationShape(v);
      const claimed = violations.filter((v) => v.origin === 'claimed');
      assert.equal(claimed.length, 1);
      assert.equal(claimed[0].action, 'repaired');
      assert.equal(claimed[0].valueKind, kind);
      assert.equal(claimed[0].sessionId, agent.id);
      assert.ok(claimed[0].preview.includes(text));
      const durable = violations.filter((v) => v.origin === 'durable');
      assert.equal(durable.length, 1, 'the durable write is recorded once');
      assert.equal(durable[0].action, 'observed');
      assert.equal(durable[0].seq, insertionSeq(agent, value));
      assert.equal(durable[0].target, verb === 'followup' ? 'next-turn' : 'next-step');
      assert.equal(durable[0].index, 0);
      assert.equal(durable[0].valueKind, kind);
      assert.deepEqual({ ...service.counts() }, { repaired: 1, quarantined: 0, observed: 1 });
      assertCountsMatch(service);
      assert.ok(rig.logs.some((l) => l.type === 'warn' && l.text.includes(agent.id)),
        'each violation is logged at warn level naming the session');
    });
  }
}

test('guarded: listener order cannot matter (guard mounted before time-context)', async (t) => {
  const { rig } = await guardedRig(t, { pluginOrder: 'before-time-context' });
  const agent = await rig.createAgent();
  agent.followup(BARE);
  await rig.waitIdle(agent);
  assert.deepEqual(rig.turn(agent, 1).reason, { kind: 'completed' });
  assert.deepEqual(rendered(rig.requests[0]), [BARE, 'CLOCK']);
});

/** A plugin whose pre-step listener reads `source.kind` before calling next(), outermost. */
const eagerReader = {
  name: 'eager-source-reader',
  apply(ctx) {
    ctx.on('agent/pre-step', async (event, next) => {
      for (const message of event.messages) void message.source.kind;
      return next();
    }, { prepend: true });
  },
};

test('control: an outer pre-step reader of source.kind crashes on a bare string', async (t) => {
  const rig = await plainRig(t, { timeContext: false });
  await rig.mount(eagerReader);
  const agent = await rig.createAgent();
  agent.followup(BARE);
  await rig.waitIdle(agent);
  const summary = rig.turn(agent, 1);
  assert.equal(summary.reason.kind, 'error');
  assert.equal(summary.stepStarted, false);
});

test('guarded: a reader outside the guard already sees messages (claim is wrapped)', async (t) => {
  const { rig } = await guardedRig(t, { timeContext: false });
  await rig.mount(eagerReader); // registered last with prepend: outermost, runs before the guard's listener
  const agent = await rig.createAgent();
  agent.followup(BARE);
  await rig.waitIdle(agent);
  assert.deepEqual(rig.turn(agent, 1).reason, { kind: 'completed' });
  assertRepaired(stepMessages(rig.requests[0])[0], BARE, 'string');
});

// ---------------------------------------------------------------------------
// Without time-context: quieter and worse
// ---------------------------------------------------------------------------

test('control: without time-context the raw value reaches the model and breaks a later resume', async (t) => {
  for (const value of SCALARS) {
    const rig = await plainRig(t, { timeContext: false });
    const agent = await rig.createAgent();
    agent.followup(value);
    await rig.waitIdle(agent);
    assert.deepEqual(rig.turn(agent, 1).reason, { kind: 'completed' }, 'the turn even "completes"');
    assert.deepEqual(stepMessages(rig.requests[0]), [value], 'the model receives the raw value as a message');
    const logged = agent.session.events.find((e) => e.type === 'user/message');
    assert.equal(logged.data, value, 'the transcript records the raw value as user/message');
    assert.ok(rig.logs.some((l) => l.type === 'warn' && /session\/event listener threw: TypeError/.test(l.text)),
      'the loop\'s own session/event observer throws on it (contained, logged)');
    await assert.rejects(rig.resumeFrom(agent.session.events), /user\/message at index \d+ lacks an identified message/);
  }
});

test('guarded: without time-context the model gets the repaired message and the session resumes', async (t) => {
  for (const value of SCALARS) {
    const { rig, service } = await guardedRig(t, { timeContext: false });
    const agent = await rig.createAgent();
    agent.followup(value);
    await rig.waitIdle(agent);
    assert.deepEqual(rig.turn(agent, 1).reason, { kind: 'completed' });
    const [message] = stepMessages(rig.requests[0]);
    assertRepaired(message, String(value), typeof value);
    assert.ok(!rig.logs.some((l) => /session\/event listener threw/.test(l.text)));
    assert.equal(service.counts().repaired, 1);

    const events = agent.session.events;
    await rig.disposeAgent(agent);
    const resumed = await rig.resumeFrom(events);
    resumed.followup(userMessage('after resume'));
    await rig.waitIdle(resumed);
    const summary = rig.turn(resumed, rig.lastTurn(resumed));
    assert.deepEqual(summary.reason, { kind: 'completed' });
    const history = rig.requests.at(-1).messages.map(messageText);
    assert.deepEqual(history, [String(value), 'ok', 'after resume']);
  }
});

// ---------------------------------------------------------------------------
// A session seeded / resumed from a log that still holds a bare string
// ---------------------------------------------------------------------------

test('control: a resumed inbox holding a bare string crashes the first turn and strands the follow-up', async (t) => {
  const rig = await plainRig(t);
  const agent = await rig.resumeFrom(logWithPendingInbox([BARE]));
  assert.deepEqual(agent.inbox.nextTurn, [BARE], 'replayed splices are not validated');
  agent.followup(userMessage('hello'));
  await rig.waitIdle(agent);
  assertKindCrash(rig, agent, 1);
  assert.equal(rig.requests.length, 0);
  assert.deepEqual(agent.inbox.nextTurn.map(messageText), ['hello'], 'the real follow-up waits for another wake');
  assert.equal(agent.status, 'idle');
});

test('control: without time-context a resumed bare string goes to the model raw', async (t) => {
  const rig = await plainRig(t, { timeContext: false });
  const agent = await rig.resumeFrom(logWithPendingInbox([BARE]));
  agent.followup(userMessage('hello'));
  await rig.waitIdle(agent);
  assert.deepEqual(stepMessages(rig.requests[0]), [BARE]);
});

for (const when of ['mounted before the resume', 'mounted after the resume']) {
  test(`guarded: a resumed inbox holding a bare string is repaired at the first claim (${when})`, async (t) => {
    const rig = await plainRig(t);
    let service;
    if (when === 'mounted before the resume') ({ service } = await mountGuard(rig));
    const agent = await rig.resumeFrom(logWithPendingInbox([BARE]));
    if (when === 'mounted after the resume') ({ service } = await mountGuard(rig));
    agent.followup(userMessage('hello'));
    await rig.waitIdle(agent);
    assert.deepEqual(rig.turn(agent, 1).reason, { kind: 'completed' });
    assert.deepEqual(rig.turn(agent, 2).reason, { kind: 'completed' }, 'the follow-up runs in the next turn');
    assert.deepEqual(rendered(rig.requests[0]), [BARE, 'CLOCK']);
    assertRepaired(stepMessages(rig.requests[0])[0], BARE, 'string');
    assert.deepEqual(rendered(rig.requests[1]), ['hello', 'CLOCK']);
    assert.equal(agent.inbox.hasPending, false);
    const repaired = service.violations().filter((v) => v.action === 'repaired');
    assert.equal(repaired.length, 1);
    assert.equal(repaired[0].sessionId, agent.id);
    assert.equal(repaired[0].valueKind, 'string');
    assert.ok(repaired[0].preview.includes(BARE));
    assertCountsMatch(service);
  });
}

// ---------------------------------------------------------------------------
// An agent created before the guard was mounted
// ---------------------------------------------------------------------------

test('control: an agent created before any plugin mount crashes on a bare follow-up', async (t) => {
  const rig = await plainRig(t);
  const agent = await rig.createAgent();
  await rig.mount({ name: 'late-noop', apply() {} });
  agent.followup(BARE);
  await rig.waitIdle(agent);
  assertKindCrash(rig, agent, 1);
});

test('guarded: an agent created before the mount is repaired at the pre-step entry, then wrapped', async (t) => {
  const rig = await plainRig(t);
  const agent = await rig.createAgent();
  assert.equal(Object.hasOwn(agent.inbox, 'claim'), false);
  const { service } = await mountGuard(rig);
  agent.followup(BARE);
  await rig.waitIdle(agent);
  assert.deepEqual(rig.turn(agent, 1).reason, { kind: 'completed' });
  assert.deepEqual(rendered(rig.requests[0]), [BARE, 'CLOCK']);
  assertRepaired(stepMessages(rig.requests[0])[0], BARE, 'string');
  const claimed = service.violations().filter((v) => v.origin === 'claimed');
  assert.equal(claimed.length, 1);
  assert.equal(claimed[0].action, 'repaired');
  assert.equal(Object.hasOwn(agent.inbox, 'claim'), true, 'claim is wrapped from the first pre-step on');

  agent.followup(42);
  await rig.waitIdle(agent);
  assert.deepEqual(rig.turn(agent, 2).reason, { kind: 'completed' });
  assertRepaired(stepMessages(rig.requests[1])[0], '42', 'number');
  assertCountsMatch(service);
});

// ---------------------------------------------------------------------------
// Pending entries are swept through inbox.splice
// ---------------------------------------------------------------------------

/** Queue `[userMessage('second'), value]` in next-turn while turn 1 is answering. */
async function queueBehindRunningTurn(rig, agent, ...queued) {
  const gate = rig.model.hold();
  agent.followup(userMessage('first'));
  await gate.reached;
  for (const entry of queued) agent.followup(entry);
  gate.release();
  await rig.waitIdle(agent);
}

test('control: a queued bare string waits raw in next-turn and kills its turn', async (t) => {
  const rig = await plainRig(t);
  const agent = await rig.createAgent();
  let pendingAtTurn2;
  agent.ctx.on('agent/pre-step', async (event, next) => {
    if (event.turn === 2) pendingAtTurn2 = [...agent.inbox.nextTurn];
    return next();
  });
  await queueBehindRunningTurn(rig, agent, userMessage('second'), BARE);
  assert.deepEqual(pendingAtTurn2, [BARE]);
  assert.deepEqual(rig.turn(agent, 2).reason, { kind: 'completed' });
  assertKindCrash(rig, agent, 3);
});

test('guarded: a pending bare string is repaired in place through inbox.splice', async (t) => {
  const { rig, service } = await guardedRig(t);
  const agent = await rig.createAgent();
  await queueBehindRunningTurn(rig, agent, userMessage('second'), BARE);
  for (const turn of [1, 2, 3]) assert.deepEqual(rig.turn(agent, turn).reason, { kind: 'completed' }, `turn ${turn}`);
  assert.deepEqual(rendered(rig.requests[2]), [BARE, 'CLOCK']);
  const pending = service.violations().filter((v) => v.origin === 'pending');
  assert.equal(pending.length, 1, 'swept once while it waited in next-turn');
  assert.equal(pending[0].action, 'repaired');
  assert.equal(pending[0].target, 'next-turn');
  assert.equal(pending[0].index, 0);
  // The sweep went through the public splice: a durable record replaced the entry.
  const replacement = agent.session.events.find((e) => e.type === 'agent/inbox/spliced'
    && e.data.target === 'next-turn' && e.data.removedCount === 1 && e.data.inserted.length === 1);
  assert.ok(replacement, 'a durable splice replaced the pending entry');
  assertRepaired(replacement.data.inserted[0], BARE, 'string');
  assertCountsMatch(service);
});

/** An inbox `splice` that refuses every in-place edit (a replacement or removal of one entry). */
function refusingEdits(inbox) {
  inbox.splice = function splice(target, start, deleteCount, inserted) {
    if (deleteCount === 1) throw new Error('pending edits are refused here');
    return Inbox.prototype.splice.call(this, target, start, deleteCount, inserted);
  };
}

const COULD_NOT_FIX = /could not fix pending inbox entry next-turn\[0\] of session .*: Error: pending edits are refused here/;

test('guarded: a pending entry the inbox will not let the guard fix is said in a warn line, recorded observed, and repaired at its claim', async (t) => {
  const { rig, service } = await guardedRig(t);
  const agent = await rig.createAgent();
  const gate = rig.model.hold();
  agent.followup(userMessage('first'));
  await gate.reached;
  agent.followup(userMessage('second'));
  agent.followup(BARE);
  refusingEdits(agent.inbox);
  gate.release();
  await rig.waitIdle(agent);
  const lines = rig.logs.filter((l) => l.name === 'harness-guard' && COULD_NOT_FIX.test(l.text));
  assert.equal(lines.length, 1, `the warn line: ${JSON.stringify(rig.logs.map((l) => l.text))}`);
  const pending = service.violations().filter((v) => v.origin === 'pending');
  assert.equal(pending.length, 1);
  assert.equal(pending[0].action, 'observed', 'left as it was, and recorded so');
  for (const turn of [1, 2, 3]) assert.deepEqual(rig.turn(agent, turn).reason, { kind: 'completed' }, `turn ${turn}`);
  assert.deepEqual(rendered(rig.requests[2]), [BARE, 'CLOCK'], 'repaired when claimed');
});

test('guarded: where the inbox lets the guard fix a pending entry, no such warn line', async (t) => {
  const { rig, service } = await guardedRig(t);
  const agent = await rig.createAgent();
  await queueBehindRunningTurn(rig, agent, userMessage('second'), BARE);
  assert.deepEqual(service.violations().filter((v) => v.origin === 'pending').map((v) => v.action), ['repaired']);
  assert.deepEqual(rig.logs.filter((l) => /could not fix/.test(l.text)), []);
});

test('guarded: the latest 1,000 violations are kept, oldest first, while counts() counts every one', async (t) => {
  const { rig, service } = await guardedRig(t, { mode: 'report' });
  const agent = await rig.createAgent();
  const bad = Array.from({ length: 1005 }, (_, i) => ({ id: `bad-${i}`, not: 'a message' }));
  agent.inbox.splice('next-turn', Infinity, 0, bad);
  assert.deepEqual({ ...service.counts() }, { repaired: 0, quarantined: 0, observed: 1005 }, 'every value is counted');
  const kept = service.violations();
  assert.equal(kept.length, 1000);
  assert.deepEqual(kept.map((v) => JSON.parse(v.preview).id), bad.slice(5).map((v) => v.id), 'the five oldest made way');
  assert.deepEqual(kept.map((v) => v.index), bad.slice(5).map((_, i) => i + 5), 'each at its own place');
});

test('control: inbox.enabled = true wraps claim at agent/created', async (t) => {
  const { rig } = await guardedRig(t);
  const agent = await rig.createAgent();
  assert.equal(Object.hasOwn(agent.inbox, 'claim'), true);
});

test('guarded: inbox.enabled = false installs nothing of the inbox half: nothing wrapped, recorded or repaired', async (t) => {
  const guard = await loadGuard();
  const rig = await createRig({ timeContext: true, plugin: guard, pluginConfig: { inspect: { enabled: false }, inbox: { enabled: false } } });
  t.after(() => rig.dispose());
  const crashed = await rig.createAgent();
  const agent = await rig.createAgent();
  assert.equal(Object.hasOwn(agent.inbox, 'claim'), false, 'no claim wrapper at agent/created');
  crashed.followup(BARE);
  await rig.waitIdle(crashed);
  assertKindCrash(rig, crashed, 1);
  assert.equal(Object.hasOwn(crashed.inbox, 'claim'), false, 'no claim wrapper at the pre-step either');
  agent.inbox.splice('next-turn', Infinity, 0, [{ id: 'bad-0', not: 'a message' }]);
  const service = rig.ctx.get('inboxInputGuard');
  assert.deepEqual({ ...service.counts() }, { repaired: 0, quarantined: 0, observed: 0 }, 'no observer of durable writes');
  assert.deepEqual(service.violations(), []);
  assert.equal(service.status().inbox.installed, false);
});

// ---------------------------------------------------------------------------
// An object with an id but no role/content/source
// ---------------------------------------------------------------------------

const HALF_SHAPED = Object.freeze({ id: 'half-shaped-1', note: 'never-content' });

test('control: an id-only object passes the inbox, crashes with time-context, breaks resume without', async (t) => {
  const rig = await plainRig(t);
  const agent = await rig.createAgent();
  agent.inject(HALF_SHAPED);
  agent.inject({ id: 'half-shaped-2' });
  assert.equal(agent.inbox.nextStep.length, 2, 'several can pile up');
  agent.followup(userMessage('wake'));
  await rig.waitIdle(agent);
  assertKindCrash(rig, agent, 1);

  const quiet = await plainRig(t, { timeContext: false });
  const other = await quiet.createAgent();
  other.inject(HALF_SHAPED);
  other.followup(userMessage('wake'));
  await quiet.waitIdle(other);
  assert.deepEqual(stepMessages(quiet.requests[0])[0], { ...HALF_SHAPED }, 'the model receives a message with role undefined');
  await assert.rejects(quiet.resumeFrom(other.session.events), /must have role "user"/);
});

test('guarded: an id-only object is dropped in repair mode, never turned into content', async (t) => {
  const { rig, service } = await guardedRig(t);
  const agent = await rig.createAgent();
  agent.inject(HALF_SHAPED);
  agent.followup(userMessage('wake'));
  await rig.waitIdle(agent);
  assert.deepEqual(rig.turn(agent, 1).reason, { kind: 'completed' });
  assert.deepEqual(rendered(rig.requests[0]), ['wake', 'CLOCK']);
  const everything = JSON.stringify(rig.requests.map((r) => r.messages));
  assert.ok(!everything.includes('half-shaped-1') && !everything.includes('never-content'));
  assert.ok(!agent.session.events.some((e) => e.type === 'user/message' && e.data.id === 'half-shaped-1'));
  const claimed = service.violations().filter((v) => v.origin === 'claimed');
  assert.equal(claimed.length, 1);
  assert.equal(claimed[0].action, 'quarantined');
  assert.equal(claimed[0].valueKind, 'object');
  assert.deepEqual({ ...service.counts() }, { repaired: 0, quarantined: 1, observed: 1 });
});

// ---------------------------------------------------------------------------
// Modes: quarantine and report; reset()
// ---------------------------------------------------------------------------

test('guarded: quarantine mode drops a bare string', async (t) => {
  const { rig, service } = await guardedRig(t, { mode: 'quarantine' });
  const agent = await rig.createAgent();
  agent.inject(BARE);
  agent.followup(userMessage('wake'));
  await rig.waitIdle(agent);
  assert.deepEqual(rig.turn(agent, 1).reason, { kind: 'completed' });
  assert.deepEqual(rendered(rig.requests[0]), ['wake', 'CLOCK']);
  assert.ok(!JSON.stringify(rig.requests.map((r) => r.messages)).includes(BARE));
  const claimed = service.violations().filter((v) => v.origin === 'claimed');
  assert.equal(claimed.length, 1);
  assert.equal(claimed[0].action, 'quarantined');
  assert.equal(claimed[0].valueKind, 'string');
  assert.deepEqual({ ...service.counts() }, { repaired: 0, quarantined: 1, observed: 1 });
});

test('guarded: report mode touches nothing — the turn fails exactly as without the guard', async (t) => {
  const { rig, service } = await guardedRig(t, { mode: 'report' });
  const agent = await rig.createAgent();
  agent.followup(BARE);
  await rig.waitIdle(agent);
  assertKindCrash(rig, agent, 1);
  const violations = service.violations();
  assert.ok(violations.some((v) => v.origin === 'claimed'), 'the claimed value is recorded');
  assert.ok(violations.some((v) => v.origin === 'durable'), 'the durable write is recorded');
  assert.ok(violations.every((v) => v.action === 'observed'));
  assert.equal(new Set(violations.map((v) => v.valueId)).size, 1, 'every record is marked as the one value');
  assert.ok(violations.length >= 2, 'each place it was seen is a record');
  // One value seen at its write, at the claim and at the pre-step entry: one observation.
  assert.deepEqual({ ...service.counts() }, { repaired: 0, quarantined: 0, observed: 1 });
  assertCountsMatch(service);
});

test('guarded: a durable record places the non-message where the write put it', async (t) => {
  const { rig, service } = await guardedRig(t, { mode: 'report', timeContext: false });
  const agent = await rig.createAgent();
  // Two messages wait in next-turn; one write then inserts a message and a bare
  // string after them, so the string lands at index 3.
  agent.inbox.splice('next-turn', Infinity, 0, [userMessage('one'), userMessage('two')]);
  agent.inbox.splice('next-turn', Infinity, 0, [userMessage('three'), BARE]);
  const write = agent.session.events.findLast((e) => e.type === 'agent/inbox/spliced');
  assert.equal(write.data.start, 2, 'the write inserted after the two waiting messages');
  const durable = service.violations().filter((v) => v.origin === 'durable');
  assert.equal(durable.length, 1, 'one non-message written');
  assert.equal(durable[0].index, 3, "the write's start plus the entry's place in what it inserted");
  assert.equal(durable[0].seq, write.seq);
  assert.equal(durable[0].target, 'next-turn');
  assert.equal(durable[0].sessionId, agent.id);
  assert.equal(durable[0].valueKind, 'string');
});

test('guarded: report mode without time-context lets the raw value through', async (t) => {
  const { rig, service } = await guardedRig(t, { mode: 'report', timeContext: false });
  const agent = await rig.createAgent();
  agent.followup(BARE);
  await rig.waitIdle(agent);
  assert.deepEqual(stepMessages(rig.requests[0]), [BARE]);
  assert.ok(service.counts().observed >= 1);
});

test('guarded: reset() drops the records, the hooks stay', async (t) => {
  const { rig, service } = await guardedRig(t);
  const agent = await rig.createAgent();
  agent.followup(BARE);
  await rig.waitIdle(agent);
  const before = service.violations();
  assert.ok(before.length > 0);
  before.length = 0; // a copy: mutating it changes nothing
  assert.ok(service.violations().length > 0);
  service.reset();
  assert.deepEqual(service.violations(), []);
  assert.deepEqual({ ...service.counts() }, { repaired: 0, quarantined: 0, observed: 0 });
  agent.followup(true);
  await rig.waitIdle(agent);
  assert.deepEqual(rig.turn(agent, 2).reason, { kind: 'completed' });
  assertRepaired(stepMessages(rig.requests[1])[0], 'true', 'boolean');
  assert.equal(service.counts().repaired, 1);
});

// ---------------------------------------------------------------------------
// Disposal restores every claim exactly
// ---------------------------------------------------------------------------

/** A plugin that gives every new agent an own, transparent `claim` (mount it before the guard). */
function ownClaimPlugin(record) {
  return {
    name: 'own-claim',
    apply(ctx) {
      ctx.on('agent/created', ({ agent }) => {
        const previous = agent.inbox.claim;
        const own = function claim(target, turn) {
          record.calls.push({ thisIsInbox: this === agent.inbox, target, turn });
          return previous.call(this, target, turn);
        };
        agent.inbox.claim = own;
        record.own.set(agent, own);
      });
    },
  };
}

test('control: an own-property claim on the inbox is what the loop calls', async (t) => {
  const rig = await plainRig(t);
  const record = { calls: [], own: new Map() };
  await rig.mount(ownClaimPlugin(record));
  const agent = await rig.createAgent();
  agent.followup(BARE);
  await rig.waitIdle(agent);
  assert.deepEqual(record.calls, [{ thisIsInbox: true, target: 'next-turn', turn: 1 }]);
  assertKindCrash(rig, agent, 1);
});

test('guarded: unmount restores an inherited claim (no own property left)', async (t) => {
  const rig = await plainRig(t);
  const { fiber } = await mountGuard(rig);
  const agent = await rig.createAgent();
  assert.equal(Object.hasOwn(agent.inbox, 'claim'), true, 'wrapped at agent/created');
  agent.followup(BARE);
  await rig.waitIdle(agent);
  assert.deepEqual(rig.turn(agent, 1).reason, { kind: 'completed' });

  await rig.unmount(fiber);
  assert.equal(Object.hasOwn(agent.inbox, 'claim'), false);
  assert.equal(agent.inbox.claim, Inbox.prototype.claim);
  assert.equal(rig.ctx.get('inboxInputGuard'), undefined);
  agent.followup(BARE);
  await rig.waitIdle(agent);
  assertKindCrash(rig, agent, 2); // every listener is gone too
});

test('guarded: unmount restores an own claim exactly', async (t) => {
  const rig = await plainRig(t);
  const record = { calls: [], own: new Map() };
  await rig.mount(ownClaimPlugin(record));
  const { fiber } = await mountGuard(rig);
  const agent = await rig.createAgent();
  const own = record.own.get(agent);
  assert.notEqual(agent.inbox.claim, own, 'the guard wraps the own claim');
  agent.followup(BARE);
  await rig.waitIdle(agent);
  assert.deepEqual(rig.turn(agent, 1).reason, { kind: 'completed' });
  assert.equal(record.calls.length, 1, 'the wrapped own claim still runs');
  assert.equal(record.calls[0].thisIsInbox, true, 'with the inbox as this');
  assert.equal(Object.getOwnPropertyDescriptor(agent.inbox, 'claim').enumerable, true, 'the wrapper keeps the own claim\'s enumerability');

  await rig.unmount(fiber);
  assert.equal(Object.hasOwn(agent.inbox, 'claim'), true);
  assert.equal(agent.inbox.claim, own);
  assert.deepEqual(Object.getOwnPropertyDescriptor(agent.inbox, 'claim'), { value: own, writable: true, enumerable: true, configurable: true });
});

test('guarded: unmount restores the claim of an agent wrapped at its first pre-step', async (t) => {
  const rig = await plainRig(t);
  const agent = await rig.createAgent();
  const { fiber } = await mountGuard(rig);
  agent.followup(BARE);
  await rig.waitIdle(agent);
  assert.equal(Object.hasOwn(agent.inbox, 'claim'), true);
  await rig.unmount(fiber);
  assert.equal(Object.hasOwn(agent.inbox, 'claim'), false);
  assert.equal(agent.inbox.claim, Inbox.prototype.claim);
});

// ---------------------------------------------------------------------------
// Hostile values never make the guard throw
// ---------------------------------------------------------------------------

const BIG_INT = 12345678901234567890n;

/** Values that cannot pass `inbox.splice` (its JSON snapshot rejects them) but can reach a reader. */
function hostileValues() {
  const { proxy: revoked, revoke } = Proxy.revocable({}, {});
  revoke();
  const traps = ['get', 'has', 'ownKeys', 'getOwnPropertyDescriptor', 'getPrototypeOf', 'set',
    'defineProperty', 'deleteProperty', 'isExtensible', 'preventExtensions', 'setPrototypeOf'];
  const trapping = new Proxy({}, Object.fromEntries(traps.map((trap) => [trap, () => { throw new Error(`trap ${trap}`); }])));
  const cyclic = { id: 'cyclic-1', role: 'user' };
  cyclic.self = cyclic;
  cyclic.content = [cyclic];
  const getters = {
    get id() { throw new Error('id getter'); },
    get role() { throw new Error('role getter'); },
    get content() { throw new Error('content getter'); },
    get source() { throw new Error('source getter'); },
    toString() { throw new Error('toString'); },
    [Symbol.toPrimitive]() { throw new Error('toPrimitive'); },
  };
  const sourceTrap = { id: 'source-trap', role: 'user', content: [], source: new Proxy({}, { get() { throw new Error('kind'); } }) };
  return [getters, revoked, trapping, cyclic, sourceTrap, NaN, Infinity, Symbol('sym'), null, undefined, () => 'fn', BIG_INT];
}

/** A plugin giving every new agent an own claim that hands over `edit(batch)` for each non-empty batch. */
function claimEditingPlugin(name, edit) {
  return {
    name,
    apply(ctx) {
      ctx.on('agent/created', ({ agent }) => {
        const previous = agent.inbox.claim;
        agent.inbox.claim = function claim(target, turn) {
          const batch = previous.call(this, target, turn);
          return batch.length > 0 ? edit(batch) : batch;
        };
      });
    },
  };
}

/** Appends hostile values to every non-empty claimed batch through an own claim. */
const hostileClaimPlugin = claimEditingPlugin('hostile-claim', (batch) => {
  batch.push(...hostileValues());
  return batch;
});

/** Pushes hostile values into the pre-step batch before anyone else sees it. */
const hostilePreStepPlugin = {
  name: 'hostile-pre-step',
  apply(ctx) {
    ctx.on('agent/pre-step', async (event, next) => {
      if (event.messages.length > 0) event.messages.push(...hostileValues());
      return next();
    }, { prepend: true });
  },
};

test('control: hostile values in a claimed batch kill the turn', async (t) => {
  const rig = await plainRig(t);
  await rig.mount(hostileClaimPlugin);
  const agent = await rig.createAgent();
  agent.followup(userMessage('wake'));
  await rig.waitIdle(agent);
  const summary = rig.turn(agent, 1);
  assert.equal(summary.reason.kind, 'error');
  assert.equal(summary.stepStarted, false);
});

for (const [label, producer, mountFirst] of [
  ['an own claim under the guard', hostileClaimPlugin, true],
  ['an outer pre-step listener', hostilePreStepPlugin, false],
]) {
  test(`guarded: hostile values from ${label} are dropped without the guard throwing`, async (t) => {
    const rig = await plainRig(t);
    let service;
    let agent;
    if (mountFirst) {
      await rig.mount(producer);
      ({ service } = await mountGuard(rig, { previewChars: 24 }));
      agent = await rig.createAgent();
    } else {
      // An agent that predates the guard: its first batch meets the guard at its pre-step entry.
      agent = await rig.createAgent();
      ({ service } = await mountGuard(rig, { previewChars: 24 }));
      await rig.mount(producer); // mounted last with prepend: outermost
    }
    agent.followup(userMessage('wake'));
    await rig.waitIdle(agent);
    const summary = rig.turn(agent, 1);
    assert.deepEqual(summary.reason, { kind: 'completed' });
    assert.equal(rig.agentErrors.length, 0);
    assert.deepEqual(rendered(rig.requests[0]), ['wake', String(BIG_INT), 'CLOCK'],
      'only the message and the repaired bigint enter the step');
    assertRepaired(stepMessages(rig.requests[0])[1], String(BIG_INT), 'bigint');

    const violations = service.violations();
    assert.doesNotThrow(() => JSON.stringify(violations), 'records are plain data');
    for (const v of violations) assertViolationShape(v, 24);
    const claimed = violations.filter((v) => v.origin === 'claimed');
    assert.equal(claimed.filter((v) => v.action === 'repaired').length, 1, 'the bigint');
    assert.equal(claimed.filter((v) => v.action === 'quarantined').length, hostileValues().length - 1);
    assertCountsMatch(service);
  });
}

// `inbox.nextStep` is the inbox's live list, so a plugin can push onto it and
// bypass the durable log: the host's own claim then hands the entry over as it
// is. None of these is plain JSON data with the four fields right: an array
// carrying a message's fields, a message whose `source` is an array, and
// message-shaped entries holding a bigint or a cycle, which only a deep check
// tells from a message.
const LIVE_PUSHED = [
  ['a message-shaped entry holding a bigint', 'object', () => ({
    id: 'bigint-inside', role: 'user', content: [{ type: 'text', text: 'a bigint inside' }], source: { kind: 'plugin', n: 1n },
  })],
  ['a message-shaped entry holding a cycle', 'object', () => {
    const source = { kind: 'plugin' };
    source.self = source;
    return { id: 'cycle-inside', role: 'user', content: [{ type: 'text', text: 'a cycle inside' }], source };
  }],
  ['an array carrying a message\'s fields', 'array', () => Object.assign([], {
    id: 'array-entry', role: 'user', content: [{ type: 'text', text: 'from an array' }], source: { kind: 'plugin' },
  })],
  ['a message whose source is an array', 'object', () => ({
    id: 'array-source', role: 'user', content: [{ type: 'text', text: 'an array source' }], source: Object.assign([], { kind: 'plugin' }),
  })],
];

for (const [label, valueKind, make] of LIVE_PUSHED) {
  test(`control: ${label}, pushed onto the live inbox, kills the turn before the model is called`, async (t) => {
    const rig = await plainRig(t);
    const agent = await rig.createAgent();
    const value = make();
    agent.inbox.nextStep.push(value);
    assert.deepEqual(agent.inbox.claim('next-step', 1), [value], 'a claim hands it over as it is');
    agent.inbox.nextStep.push(make());
    agent.followup(userMessage('wake'));
    await rig.waitIdle(agent);
    const { reason } = rig.turn(agent, 1);
    assert.equal(reason.kind, 'error');
    assert.match(reason.error.message, /non-JSON-serializable/);
    assert.equal(rig.requests.length, 0);
  });

  test(`guarded: ${label}, pushed onto the live inbox, is dropped by the guard's claim of it`, async (t) => {
    const { rig, service } = await guardedRig(t);
    const agent = await rig.createAgent();
    agent.inbox.nextStep.push(make());
    // What the guard's claim returns, before any pre-step listener (the guard's own included) runs.
    assert.deepEqual(agent.inbox.claim('next-step', 1), [], 'the claim hands over no such entry');
    agent.inbox.nextStep.push(make());
    agent.followup(userMessage('wake'));
    await rig.waitIdle(agent);
    assert.deepEqual(rig.turn(agent, 1).reason, { kind: 'completed' });
    assert.deepEqual(rendered(rig.requests[0]), ['wake', 'CLOCK']);
    const claimed = ['claimed', valueKind, 'quarantined', 'next-step'];
    assert.deepEqual(service.violations().map((v) => [v.origin, v.valueKind, v.action, v.target]), [claimed, claimed]);
  });
}

// The claim's fast path finds the log's own entries by identity alone: the log
// deep-freezes them, so one noted at its write is still a message when it is
// claimed. An event of that type a plugin emits itself is no write: an entry it
// carries is noted only when it cannot change either (it and its `source`
// frozen), so one that changed after the event is judged at its claim.
const EMITTED = [
  ['not frozen, its source taken away after the event', (value) => value, (value) => { value.source = undefined; }],
  ['frozen, its source not, and its kind taken away after the event', (value) => Object.freeze(value), (value) => { delete value.source.kind; }],
];

/** `value` in an `agent/inbox/spliced` event emitted on the rig's context, as a plugin can, then pushed onto the live list and changed. */
function emitPushChange(rig, agent, value, change) {
  rig.ctx.emit('session/event', agent.session, {
    type: 'agent/inbox/spliced', seq: 1000, time: Date.now(), data: { target: 'next-step', start: 0, inserted: [value] },
  });
  agent.inbox.nextStep.push(value);
  change(value);
}

const emittedEntry = () => ({ id: 'emitted', role: 'user', content: [{ type: 'text', text: 'an emitted entry' }], source: { kind: 'plugin' } });

for (const [label, prepare, change] of EMITTED) {
  test(`control: an entry of an emitted spliced event, ${label}, reaches the turn as it is`, async (t) => {
    const rig = await plainRig(t);
    const agent = await rig.createAgent();
    emitPushChange(rig, agent, prepare(emittedEntry()), change);
    agent.followup(userMessage('wake'));
    await rig.waitIdle(agent);
    if (label.startsWith('not frozen')) assertKindCrash(rig, agent, 1);
    else assert.deepEqual(rendered(rig.requests[0]), ['an emitted entry', 'wake', 'CLOCK'], 'the model gets it');
  });

  test(`guarded: an entry of an emitted spliced event, ${label}, is judged at its claim`, async (t) => {
    const { rig, service } = await guardedRig(t);
    const agent = await rig.createAgent();
    emitPushChange(rig, agent, prepare(emittedEntry()), change);
    agent.followup(userMessage('wake'));
    await rig.waitIdle(agent);
    assert.deepEqual(rig.turn(agent, 1).reason, { kind: 'completed' });
    assert.deepEqual(rendered(rig.requests[0]), ['wake', 'CLOCK']);
    assert.deepEqual(service.violations().map((v) => [v.origin, v.valueKind, v.action, v.target]), [['claimed', 'object', 'quarantined', 'next-step']]);
  });
}

test('guarded: beside a bad entry the log wrote, a message-shaped entry it did not write is still judged by its plain copy', async (t) => {
  const { rig, service } = await guardedRig(t);
  const agent = await rig.createAgent();
  agent.inject(BARE);
  agent.inbox.nextStep.push(LIVE_PUSHED[0][2]());
  const batch = agent.inbox.claim('next-step', 1);
  assert.equal(batch.length, 1, 'the bigint-holding entry is dropped');
  assertRepaired(batch[0], BARE, 'string');
  assert.deepEqual(service.violations().filter((v) => v.origin === 'claimed').map((v) => [v.valueKind, v.action]),
    [['string', 'repaired'], ['object', 'quarantined']]);
});

test('control: the host\'s own claim, called with a third argument, receives it', async (t) => {
  const seen = spyOnHostClaim(t);
  const rig = await plainRig(t);
  const agent = await rig.createAgent();
  agent.inbox.claim('next-step', 1, 'third');
  assert.deepEqual(seen, [3]);
});

test('guarded: a claim with more than the loop\'s two arguments passes them all on', async (t) => {
  const seen = spyOnHostClaim(t);
  const { rig } = await guardedRig(t);
  const agent = await rig.createAgent();
  assert.equal(Object.hasOwn(agent.inbox, 'claim'), true, 'wrapped at agent/created');
  agent.inbox.claim('next-step', 1, 'third');
  agent.inbox.claim('next-step', 1);
  assert.deepEqual(seen, [3, 2]);
});

// ---------------------------------------------------------------------------
// The batch as the guard hands it on
// ---------------------------------------------------------------------------

/** Records, at every pre-step, the entries a listener after the guard's sees. */
function stepRecorder(seen) {
  return {
    name: 'step-recorder',
    apply(ctx) {
      ctx.on('agent/pre-step', async (event, next) => {
        seen.push([...event.messages]);
        return next();
      });
    },
  };
}

/** Whether every entry of `batch` that is not time-context's is one the durable log wrote (the very object). */
function allFromTheLog(agent, batch) {
  return batch.filter((m) => !isClockMessage(m)).every((m) => insertionSeq(agent, m) !== undefined);
}

for (const guarded of [false, true]) {
  test(`${guarded ? 'guarded' : 'control'}: a later pre-step listener sees the log's own entries, not copies`, async (t) => {
    const rig = guarded ? (await guardedRig(t)).rig : await plainRig(t);
    const seen = [];
    await rig.mount(stepRecorder(seen));
    const agent = await rig.createAgent();
    agent.inject(userMessage('first'));
    agent.followup(userMessage('second'));
    await rig.waitIdle(agent);
    assert.deepEqual(rig.turn(agent, 1).reason, { kind: 'completed' });
    assert.deepEqual(seen[0].filter((m) => !isClockMessage(m)).map(messageText), ['first', 'second']);
    assert.equal(allFromTheLog(agent, seen[0]), true, 'each entry is the log\'s own object');
    // A claim outside the loop hands over the log's entry too.
    agent.inject(userMessage('third'));
    const [claimed] = agent.inbox.claim('next-step', 1);
    assert.equal(messageText(claimed), 'third');
    assert.notEqual(insertionSeq(agent, claimed), undefined, 'the claim returns the log\'s own entry');
    assert.equal(Object.isFrozen(claimed), true);
  });
}

test('guarded: beside a repaired entry, the usable ones still reach a later listener as the log\'s own', async (t) => {
  const { rig, service } = await guardedRig(t);
  const seen = [];
  await rig.mount(stepRecorder(seen));
  const agent = await rig.createAgent();
  agent.inject(userMessage('first'));
  agent.inject(BARE);
  agent.followup(userMessage('second'));
  await rig.waitIdle(agent);
  assert.deepEqual(rig.turn(agent, 1).reason, { kind: 'completed' });
  const step = seen[0].filter((m) => !isClockMessage(m));
  assert.deepEqual(step.map(messageText), ['first', BARE, 'second']);
  assert.equal(allFromTheLog(agent, [step[0], step[2]]), true, 'the usable entries are the log\'s own objects');
  assertRepaired(step[1], BARE, 'string');
  assert.deepEqual(service.violations().filter((v) => v.origin === 'claimed').map((v) => [v.action, v.target]), [['repaired', 'next-step']]);
});

test('guarded: the claim wrapped over the inherited method is no enumerable key of the inbox', async (t) => {
  const rig = await plainRig(t);
  const plain = await rig.createAgent();
  const before = Object.keys(plain.inbox);
  await mountGuard(rig);
  const agent = await rig.createAgent();
  assert.equal(Object.hasOwn(agent.inbox, 'claim'), true, 'wrapped at agent/created');
  assert.equal(Object.getOwnPropertyDescriptor(agent.inbox, 'claim').enumerable, false);
  assert.deepEqual(Object.keys(agent.inbox), before, 'no key appears on the inbox');
});

/** A plugin whose own claim hands over each non-empty batch with a bare string appended, as `wrap` makes it (frozen, a Proxy…). */
const wrappingClaimPlugin = (wrap) => claimEditingPlugin('wrapping-claim', (batch) => wrap([...batch, BARE]));

const UNCHANGEABLE = [
  ['frozen', (batch) => Object.freeze(batch)],
  ['a Proxy that ignores writes', (batch) => new Proxy(batch, { set: () => true, deleteProperty: () => true, defineProperty: () => true })],
];

for (const [label, wrap] of UNCHANGEABLE) {
  test(`control: a bare string in a batch another plugin's claim hands over ${label} kills the turn`, async (t) => {
    const rig = await plainRig(t);
    await rig.mount(wrappingClaimPlugin(wrap));
    const agent = await rig.createAgent();
    agent.followup(userMessage('wake'));
    await rig.waitIdle(agent);
    assertKindCrash(rig, agent, 1);
  });

  for (const mode of ['repair', 'quarantine']) {
    test(`guarded (${mode}): a batch another plugin's claim hands over ${label} goes on as it is, its bad entry recorded observed`, async (t) => {
      const rig = await plainRig(t);
      await rig.mount(wrappingClaimPlugin(wrap));
      const { service } = await mountGuard(rig, { mode });
      const agent = await rig.createAgent();
      agent.followup(userMessage('wake'));
      await rig.waitIdle(agent);
      assertKindCrash(rig, agent, 1); // the guard cannot change such a batch: the host meets the value as without it
      // Seen at the claim and again at the guard's pre-step entry: one value, each sighting recorded as seen.
      const violations = service.violations();
      assert.deepEqual(violations.map((v) => [v.origin, v.valueKind, v.action, v.valueId]), violations.map(() => ['claimed', 'string', 'observed', violations[0].valueId]),
        'recorded as seen, not as repaired or dropped');
      assert.equal(violations[0].target, 'next-turn');
      assert.deepEqual({ ...service.counts() }, { repaired: 0, quarantined: 0, observed: 1 });
    });
  }
}

test('guarded: an entry of another plugin\'s batch whose read throws is recorded as an unreadable object, and, as the batch will not let it go, observed', async (t) => {
  const rig = await plainRig(t);
  // A Proxy over the batch whose element 1 (the appended entry) throws when read.
  const throwing = (batch) => new Proxy(batch, {
    get(target, key, receiver) {
      if (key === '1') throw new Error('unreadable entry');
      return Reflect.get(target, key, receiver);
    },
  });
  await rig.mount(wrappingClaimPlugin(throwing));
  const { service } = await mountGuard(rig);
  const agent = await rig.createAgent();
  agent.followup(userMessage('wake'));
  await rig.waitIdle(agent);
  const claimed = service.violations().filter((v) => v.origin === 'claimed');
  assert.ok(claimed.length > 0, 'the entry is recorded');
  assert.deepEqual([...new Set(claimed.map((v) => [v.valueKind, v.index].join(' ')))], ['object 1'], 'an unreadable object at position 1, not the undefined its read gave');
  assert.deepEqual([...new Set(claimed.map((v) => v.action))], ['observed']);
  // The host reads the entry as the guard did, and its turn ends there, as it would without the guard.
  const { reason } = rig.turn(agent, 1);
  assert.equal(reason.kind, 'error');
  assert.equal(reason.error.message, 'unreadable entry');
});

test('guarded: a bare bigint pushed onto the live inbox is repaired, its preview written as a bigint', async (t) => {
  const { rig, service } = await guardedRig(t);
  const agent = await rig.createAgent();
  agent.inbox.nextStep.push(12n);
  const [message] = agent.inbox.claim('next-step', 1);
  assertRepaired(message, '12', 'bigint');
  assert.deepEqual(service.violations().map((v) => [v.origin, v.valueKind, v.preview, v.action, v.target]),
    [['claimed', 'bigint', '12n', 'repaired', 'next-step']]);
});

/** How many arguments each call of the host's own claim received (the prototype's method, put back after `t`). */
function spyOnHostClaim(t) {
  const seen = [];
  const original = Inbox.prototype.claim;
  Inbox.prototype.claim = function claim(...args) {
    seen.push(args.length);
    return original.apply(this, args);
  };
  t.after(() => {
    Inbox.prototype.claim = original;
  });
  return seen;
}

test('guarded: a multi-megabyte string reaches the model whole, its previews stay bounded', async (t) => {
  const huge = 'x'.repeat(3 * 1024 * 1024) + 'END';
  const { rig, service } = await guardedRig(t, { previewChars: 16 });
  const agent = await rig.createAgent();
  agent.followup(huge);
  await rig.waitIdle(agent);
  assert.deepEqual(rig.turn(agent, 1).reason, { kind: 'completed' });
  const [message] = stepMessages(rig.requests[0]);
  assert.equal(messageText(message), huge);
  const violations = service.violations();
  assert.ok(violations.length >= 2);
  for (const v of violations) {
    assertViolationShape(v, 16);
    assert.ok(v.preview.endsWith('…'));
  }
});

// ---------------------------------------------------------------------------
// A batch that becomes empty once bad entries are dropped
// ---------------------------------------------------------------------------

const isDropMe = (m) => messageText(m) === 'drop-me';

/** Stands in for "a batch emptied by dropping": an own claim that drops 'drop-me' batches. */
const droppingClaimPlugin = {
  name: 'dropping-claim',
  apply(ctx) {
    ctx.on('agent/created', ({ agent }) => {
      const previous = agent.inbox.claim;
      agent.inbox.claim = function claim(target, turn) {
        const batch = previous.call(this, target, turn);
        return batch.some(isDropMe) ? [] : batch;
      };
    });
  },
};

test('control: an emptied batch with time-context — the model is called with only the clock', async (t) => {
  const rig = await plainRig(t);
  await rig.mount(droppingClaimPlugin);
  const agent = await rig.createAgent();
  await queueBehindRunningTurn(rig, agent, userMessage('drop-me'), userMessage('queued-after'));
  const turn2 = rig.turn(agent, 2);
  assert.deepEqual(turn2.reason, { kind: 'completed' });
  assert.equal(turn2.stepStarted, true);
  assert.deepEqual(rendered(rig.requests[1]), ['CLOCK'], 'a model call holding only the clock message');
  assert.deepEqual(rendered(rig.requests[2]), ['queued-after', 'CLOCK'], 'the queued follow-up still runs');
  assert.equal(agent.inbox.hasPending, false);
});

test('control: an emptied batch without time-context ends the turn and strands queued follow-ups', async (t) => {
  const rig = await plainRig(t, { timeContext: false });
  await rig.mount(droppingClaimPlugin);
  const agent = await rig.createAgent();
  await queueBehindRunningTurn(rig, agent, userMessage('drop-me'), userMessage('queued-after'));
  const turn2 = rig.turn(agent, 2);
  assert.deepEqual(turn2.reason, { kind: 'completed' });
  assert.equal(turn2.stepStarted, false, 'no step, no model call');
  assert.equal(rig.requests.length, 1);
  assert.equal(agent.status, 'idle');
  assert.deepEqual(agent.inbox.nextTurn.map(messageText), ['queued-after'], 'stranded until the next wake');
  agent.followup(userMessage('poke'));
  await rig.waitIdle(agent);
  assert.deepEqual(rendered(rig.requests[1]), ['queued-after']);
});

test('control: an outer pre-step listener entering [] without next() skips time-context and strands', async (t) => {
  const rig = await plainRig(t);
  await rig.mount({
    name: 'outer-empty',
    apply(ctx) {
      ctx.on('agent/pre-step', async (event, next) => (event.messages.some(isDropMe) ? { kind: 'enter', messages: [] } : next()),
        { prepend: true });
    },
  });
  const agent = await rig.createAgent();
  await queueBehindRunningTurn(rig, agent, userMessage('drop-me'), userMessage('queued-after'));
  const turn2 = rig.turn(agent, 2);
  assert.deepEqual(turn2.reason, { kind: 'completed' });
  assert.equal(turn2.stepStarted, false, 'no clock message, no step');
  assert.deepEqual(agent.inbox.nextTurn.map(messageText), ['queued-after']);
});

test('control: in-place emptying before next() reaches the loop default (it closes over the claimed array)', async (t) => {
  const rig = await plainRig(t, { timeContext: false });
  await rig.mount({
    name: 'in-place-empty',
    apply(ctx) {
      ctx.on('agent/pre-step', async (event, next) => {
        if (event.messages.some(isDropMe)) event.messages.length = 0;
        return next();
      });
    },
  });
  const agent = await rig.createAgent();
  await queueBehindRunningTurn(rig, agent, userMessage('drop-me'), userMessage('queued-after'));
  assert.equal(rig.turn(agent, 2).stepStarted, false);
  assert.deepEqual(agent.inbox.nextTurn.map(messageText), ['queued-after']);
});

for (const timeContext of [true, false]) {
  test(`guarded: a batch emptied by the guard strands nothing (${timeContext ? 'with' : 'without'} time-context)`, async (t) => {
    const { rig, service } = await guardedRig(t, { timeContext });
    const agent = await rig.createAgent();
    await queueBehindRunningTurn(rig, agent, { id: 'dropped-1' }, userMessage('queued-after'));
    assert.equal(agent.status, 'idle');
    assert.equal(agent.inbox.hasPending, false, 'the queued follow-up did not wait for another wake');
    assert.ok(rig.requests.some((r) => rendered(r).includes('queued-after')), 'the queued follow-up reached the model');
    assert.ok(!JSON.stringify(rig.requests.map((r) => r.messages)).includes('dropped-1'));
    for (let turn = 1; turn <= rig.lastTurn(agent); turn++) {
      const kind = rig.turn(agent, turn).reason?.kind;
      assert.ok(kind !== 'error' && kind !== 'blocked', `turn ${turn} ended ${kind}`);
    }
    assert.equal(service.violations().filter((v) => v.action === 'quarantined').length, 1);
  });
}

test('guarded: a lone bad entry dropped in quarantine mode leaves the agent idle and healthy', async (t) => {
  const { rig } = await guardedRig(t, { mode: 'quarantine' });
  const agent = await rig.createAgent();
  agent.followup(BARE);
  await rig.waitIdle(agent);
  const kind = rig.turn(agent, 1).reason?.kind;
  assert.ok(kind !== 'error' && kind !== 'blocked', `turn 1 ended ${kind}`);
  assert.ok(!JSON.stringify(rig.requests.map((r) => r.messages)).includes(BARE));
  agent.followup(userMessage('next'));
  await rig.waitIdle(agent);
  assert.ok(rendered(rig.requests.at(-1)).includes('next'));
});
