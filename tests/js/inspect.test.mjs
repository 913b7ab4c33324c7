// The inspect half of harness-guard, against the real Host inspect registry.
//
// Every behaviour has a CONTROL arm on the same real host (cordis 4 Context,
// the published CordisInspectRegistryService, a client provider mirrored with
// no page serving it) that shows the defect or the reference behaviour
// without the guard, next to the GUARDED arm that mounts
// `cordis-plugin-harness-guard` (or its `/guard` API) and checks the
// contract's "Inspect half". Nothing mocks the code under test; a "page" is
// this test answering through the registry's own `resolveClientQuery`.
//
// The guard package is imported lazily, so the control arms run on their own:
//   node --test --test-name-pattern='control' inspect.test.mjs
// Runs on Node 20 and Node 24.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cpSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { validateJsonSchemaValue } from '@deepseek-ai/dsh-tools';
import {
  AGENT,
  CODES,
  CORDIS_ORIGINAL,
  CordisInspectRegistryService,
  HOST_METHOD,
  HOST_PROVIDER,
  INVALID_DATA,
  MANIFEST,
  METHOD,
  OUTPUT_SCHEMA,
  PATCHED,
  PROVIDER,
  VALID_DATA,
  abortListeners,
  activeTimeouts,
  capturingWarnings,
  catchingUncaught,
  createRegistry,
  deadlineMessage,
  flush,
  loadGuard,
  outcome,
  ownMethods,
  registryFor,
  settleWithin,
  sleep,
  track,
} from './support/inspect-rig.mjs';

/**
 * Every arm is bounded, so a guard that does not settle a query makes its
 * test fail instead of hanging the run.
 */
const TEST_TIMEOUT = 15000;
function it(name, body) {
  return test(name, { timeout: TEST_TIMEOUT }, body);
}

/** The guard's deadline in most arms, and how long a control arm waits to call a query hung. */
const DEADLINE = 120;
const WAIT = 250;
/** A deadline that must not fire during an arm. */
const LONG = 5000;
/** Timer slack: a Node timer may fire a millisecond or so early. */
const SLACK = 10;

/** The refusal a real page sends for a host-only service (seed 001). */
const SEED_REFUSAL = Object.freeze({
  ok: false,
  reason: 'provider-error',
  message: 'no catalogued Service named "agentPresets"',
});

const PROTO = CordisInspectRegistryService.prototype;
const EMPTY_COUNTS = Object.freeze({ deadline: 0, refused: 0, unboundAgent: 0, disposed: 0 });

function assertGuardError(error, code, label = 'the rejection') {
  assert.ok(error instanceof Error, `${label} is an Error`);
  assert.equal(error.code, code, `${label} carries code ${code}`);
}

function assertReport(report, { kind, requestId, deadlineMs, before, after }) {
  assert.equal(report?.kind, kind);
  assert.equal(report.requestId, requestId);
  assert.equal(report.providerId, PROVIDER);
  assert.equal(report.methodName, METHOD);
  assert.equal(report.deadlineMs, deadlineMs);
  assert.equal(typeof report.at, 'number', 'a report carries its time');
  if (before !== undefined) assert.ok(report.at >= before - SLACK && report.at <= after + SLACK, `report.at ${report.at} within the query's life`);
}

/** Nothing of a settled query stays alive: entry, event count, caller's listener, timer. */
function assertNothingLeft(rig, query, timersBefore) {
  assert.equal(rig.raw.pending.has(query.requestId), false, 'the pending entry is removed');
  assert.equal(rig.raw.pending.size, 0, 'nothing is pending in the registry');
  assert.equal(rig.resolvedCount(query.requestId), 1, 'cordis/inspect-query-resolved emitted exactly once');
  assert.equal(abortListeners(query.signal), 0, "no listener is left on the caller's AbortSignal");
  assert.equal(activeTimeouts(), timersBefore, 'no timer outlives the query');
}

/** The guard's marked wrappers are in place, so an arm that expects unchanged behaviour is not vacuous. */
function assertGuarded(rig) {
  assert.ok(rig.raw.query?.[PATCHED], 'query is guarded');
  assert.ok(rig.raw.resolveClientQuery?.[PATCHED], 'resolveClientQuery is guarded');
}

/** Same settlement, same value or same error (class, name, message, code). */
function assertSameOutcome(guarded, unguarded, label) {
  assert.equal(guarded.mode, unguarded.mode, `${label}: settles the same way (${unguarded.mode})`);
  if (unguarded.mode === 'resolve') {
    assert.deepEqual(guarded.value, unguarded.value, `${label}: same value`);
    return;
  }
  assert.equal(guarded.error?.constructor, unguarded.error?.constructor, `${label}: same error class`);
  assert.equal(guarded.error?.name, unguarded.error?.name, `${label}: same error name`);
  assert.equal(guarded.error?.message, unguarded.error?.message, `${label}: same message`);
  assert.equal(guarded.error?.code, unguarded.error?.code, `${label}: same code`);
}

/** An unguarded and a guarded registry side by side. */
async function sideBySide(t, inspect = { deadlineMs: DEADLINE }, options) {
  const plain = await registryFor(t, options);
  const guarded = await registryFor(t, options);
  const { service } = await guarded.mountGuard({ inspect });
  assertGuarded(guarded);
  return { plain, guarded, service };
}

// ---------------------------------------------------------------------------
describe('deadline', () => {
  it('control: with no page, an unguarded client query is still pending after the wait', async (t) => {
    const rig = await registryFor(t);
    const timers = activeTimeouts();
    const q = rig.query();
    const tracked = track(q.promise);
    assert.ok(q.requestId, 'the registry announced the request synchronously');
    assert.equal(activeTimeouts(), timers, 'the registry arms no timer of its own');
    assert.equal(abortListeners(q.signal), 1, "the registry listens on the caller's signal");
    await sleep(WAIT);
    assert.equal(tracked.status, 'pending', 'nothing ends the wait');
    assert.equal(rig.raw.pending.has(q.requestId), true, 'the entry stays');
    assert.equal(rig.resolvedCount(q.requestId), 0);
    assert.equal(abortListeners(q.signal), 1, "the listener stays on the caller's signal");
  });

  it('guarded: rejects at deadlineMs with the contract message and code; nothing of the query stays alive', async (t) => {
    const rig = await registryFor(t);
    const { service } = await rig.mountGuard({ inspect: { deadlineMs: DEADLINE } });
    const timers = activeTimeouts();
    const before = Date.now();
    const q = rig.query();
    const tracked = track(q.promise);
    assert.ok(q.requestId);
    assert.equal(rig.raw.pending.has(q.requestId), true, 'the query waits in the registry like any other');
    assert.ok(activeTimeouts() > timers, "a ref'd timer keeps the process alive while the query waits");
    await tracked.done;
    const after = Date.now();
    assert.equal(tracked.status, 'rejected');
    assertGuardError(tracked.reason, CODES.deadline);
    assert.equal(tracked.reason.message, deadlineMessage(PROVIDER, METHOD, DEADLINE));
    assert.ok(after - before >= DEADLINE - SLACK, `not before the deadline (${after - before}ms)`);
    assertNothingLeft(rig, q, timers);

    const reports = service.reports();
    assert.equal(reports.length, 1);
    assertReport(reports[0], { kind: 'deadline', requestId: q.requestId, deadlineMs: DEADLINE, before, after });
    assert.deepEqual(service.counts(), { ...EMPTY_COUNTS, deadline: 1 });
    const warned = rig.logs.filter((line) => line.type === 'warn' && line.text.includes(q.requestId));
    assert.equal(warned.length, 1, 'one warn line through the cordis logger names the request');

    // Nothing more happens afterwards: no second event, report or listener,
    // even when the caller's own signal fires late.
    q.controller.abort();
    await sleep(DEADLINE);
    assert.equal(rig.resolvedCount(q.requestId), 1);
    assert.equal(service.reports().length, 1);
    assert.equal(tracked.settlements, 1);
    assert.equal(activeTimeouts(), timers);
  });

  it('guarded: a query aborted by a listener of another\'s ending, in the same run of endings, still gets the deadline it was reported for', async (t) => {
    const rig = await registryFor(t);
    const { service } = await rig.mountGuard({ inspect: { deadlineMs: DEADLINE } });
    const first = rig.query();
    const second = rig.query();
    const tracked = [first, second].map((q) => track(q.promise));
    rig.ctx.on('cordis/inspect-query-resolved', ({ requestId }) => {
      if (requestId === first.requestId) second.controller.abort(new Error('aborted by a listener'));
    });
    // Both past their deadline before the timer runs, so one run of endings ends both.
    for (const until = performance.now() + DEADLINE + 2 * SLACK; performance.now() < until;);
    await Promise.all(tracked.map((x) => x.done));
    for (const x of tracked) assertGuardError(x.reason, CODES.deadline, `query ${tracked.indexOf(x) + 1}`);
    assert.deepEqual(service.reports().map((r) => [r.kind, r.requestId]), [['deadline', first.requestId], ['deadline', second.requestId]]);
    assert.equal(rig.raw.pending.size, 0);
    // Later queries are guarded as ever: the second's ending was not counted twice.
    const later = rig.query();
    const last = track(later.promise);
    await last.done;
    assertGuardError(last.reason, CODES.deadline, 'a later query');
    assert.equal(service.status().inspect.inFlight, 0);
  });

  it('guarded: several queries in flight each expire once; answered ones are untouched', async (t) => {
    const rig = await registryFor(t);
    const { service } = await rig.mountGuard({ inspect: { deadlineMs: DEADLINE } });
    const timers = activeTimeouts();
    const queries = Array.from({ length: 5 }, () => rig.query());
    const tracked = queries.map((q) => track(q.promise));
    assert.ok(activeTimeouts() > timers);
    assert.deepEqual(rig.answer(queries[1].requestId, { ok: true, data: VALID_DATA }), { accepted: true });
    assert.deepEqual(rig.answer(queries[3].requestId, { ok: true, data: VALID_DATA }), { accepted: true });
    await Promise.all(tracked.map((one) => one.done));
    tracked.forEach((one, index) => {
      if (index === 1 || index === 3) {
        assert.equal(one.status, 'fulfilled', `query ${index} answered`);
        assert.deepEqual(one.value, VALID_DATA);
      } else {
        assertGuardError(one.reason, CODES.deadline, `query ${index}`);
      }
      assert.equal(rig.resolvedCount(queries[index].requestId), 1, `query ${index}: resolved once`);
    });
    assert.equal(rig.raw.pending.size, 0);
    assert.equal(activeTimeouts(), timers);
    assert.deepEqual(service.counts(), { ...EMPTY_COUNTS, deadline: 3 });
  });

  const BURST = 300; // more than one expiry chunk (128)

  it(`control: ${BURST} unanswered queries issued together are all still pending after the wait`, async (t) => {
    const rig = await registryFor(t);
    const tracked = Array.from({ length: BURST }, () => track(rig.query().promise));
    await sleep(WAIT);
    assert.ok(tracked.every((one) => one.status === 'pending'), 'nothing ends any of them');
    assert.equal(rig.raw.pending.size, BURST);
  });

  it(`guarded: ${BURST} queries due together all end once, in chunks that let other work run between them`, async (t) => {
    const rig = await registryFor(t);
    const { service } = await rig.mountGuard({ inspect: { deadlineMs: DEADLINE } });
    const timers = activeTimeouts();
    const queries = Array.from({ length: BURST }, () => rig.query());
    const tracked = queries.map((q) => track(q.promise));
    // Hold the loop until every deadline has passed: all of them are due at the first tick.
    const due = performance.now() + DEADLINE + SLACK;
    while (performance.now() < due) { /* busy */ }
    // Work queued by the first rejection handler (a macrotask, as I/O would be).
    const order = [];
    for (const one of tracked) {
      one.done.then(() => {
        if (order.length === 0) setImmediate(() => order.push('other work'));
        order.push(one.reason?.code);
      });
    }
    await Promise.all(tracked.map((one) => one.done));
    await flush();
    const between = order.indexOf('other work');
    assert.ok(between > 0 && between < BURST, `other work ran between the first and the last rejection (at ${between} of ${BURST})`);
    assert.deepEqual(new Set(order.filter((code) => code !== 'other work')), new Set([CODES.deadline]));
    assert.ok(tracked.every((one) => one.settlements === 1), 'each query settles once');
    assert.ok(queries.every((q) => rig.resolvedCount(q.requestId) === 1), 'each request is resolved once in the registry');
    assert.equal(rig.raw.pending.size, 0);
    assert.equal(activeTimeouts(), timers);
    assert.deepEqual(service.counts(), { ...EMPTY_COUNTS, deadline: BURST });
  });
});

// ---------------------------------------------------------------------------
describe('page refusal (ok: false)', () => {
  it('control: an unguarded refusal is swallowed with { accepted: false } and the query keeps waiting', async (t) => {
    const rig = await registryFor(t);
    const q = rig.query();
    const tracked = track(q.promise);
    assert.deepEqual(rig.answer(q.requestId, SEED_REFUSAL), { accepted: false });
    await sleep(WAIT);
    assert.equal(tracked.status, 'pending', 'the refusal never reaches the caller');
    assert.equal(rig.raw.pending.has(q.requestId), true);
    assert.equal(rig.resolvedCount(q.requestId), 0);
  });

  it('guarded: rejects within refusalGraceMs, long before the deadline, with reason and message verbatim', async (t) => {
    const rig = await registryFor(t);
    const { service } = await rig.mountGuard({ inspect: { deadlineMs: LONG, refusalGraceMs: 50 } });
    const timers = activeTimeouts();
    const before = Date.now();
    const q = rig.query();
    const tracked = track(q.promise);
    const refusal = { ok: false, reason: 'provider-error', message: 'no catalogued Service named "agentPresets" — $& $1 %s {0} \\ ünï' };
    const refusedAt = Date.now();
    assert.deepEqual(rig.answer(q.requestId, refusal), { accepted: false }, 'the page gets the same answer as unguarded');
    assert.equal(tracked.status, 'pending', 'another page may still answer during the grace');
    await tracked.done;
    const after = Date.now();
    assertGuardError(tracked.reason, CODES.refused);
    assert.ok(after - refusedAt >= 50 - SLACK, 'not before the grace ends');
    assert.ok(after - refusedAt < LONG, `within the grace, not at the deadline (${after - refusedAt}ms)`);
    const { message } = tracked.reason;
    assert.ok(message.includes(refusal.reason), `the message carries the reason verbatim: ${message}`);
    assert.ok(message.includes(refusal.message), `the message carries the page's message verbatim: ${message}`);
    assert.ok(message.includes(`${PROVIDER}.${METHOD}`), 'the message names the query');
    assert.match(message, /read the source/, 'the message says what to do instead');
    assertNothingLeft(rig, q, timers);
    const reports = service.reports();
    assert.equal(reports.length, 1);
    assertReport(reports[0], { kind: 'refused', requestId: q.requestId, deadlineMs: LONG, before, after });
    assert.deepEqual(service.counts(), { ...EMPTY_COUNTS, refused: 1 });
  });

  it('guarded: queries that begin while refused ones wait, and after they end, are each refused in turn', async (t) => {
    const rig = await registryFor(t);
    const { service } = await rig.mountGuard({ inspect: { deadlineMs: LONG, refusalGraceMs: 50 } });
    const timers = activeTimeouts();
    const refuse = (q) => assert.deepEqual(rig.answer(q.requestId, SEED_REFUSAL), { accepted: false });
    const started = Date.now();
    // The first refusal finds its query while another waits unrefused; a query that
    // begins after it, while both still wait, is found by its own refusal.
    const [first, second] = [rig.query(), rig.query()];
    const tracked = [track(first.promise), track(second.promise)];
    refuse(first);
    const third = rig.query();
    tracked.push(track(third.promise));
    refuse(third);
    refuse(second);
    await Promise.all(tracked.map((q) => q.done));
    // Nothing waits now: a query after all of them is found again.
    const fourth = rig.query();
    const last = track(fourth.promise);
    refuse(fourth);
    await last.done;
    for (const q of [...tracked, last]) assertGuardError(q.reason, CODES.refused);
    assert.ok(Date.now() - started < LONG, 'every one within its grace, none at the deadline');
    for (const q of [first, second, third, fourth]) assertNothingLeft(rig, q, timers);
    assert.deepEqual(service.counts(), { ...EMPTY_COUNTS, refused: 4 });
  });

  it('guarded: when the deadline comes before the grace ends, the remembered (first) refusal is what rejects', async (t) => {
    const rig = await registryFor(t);
    await rig.mountGuard({ inspect: { deadlineMs: DEADLINE, refusalGraceMs: DEADLINE } });
    const timers = activeTimeouts();
    const start = Date.now();
    const q = rig.query();
    const tracked = track(q.promise);
    await sleep(40);
    assert.deepEqual(rig.answer(q.requestId, SEED_REFUSAL), { accepted: false });
    assert.deepEqual(rig.answer(q.requestId, { ok: false, reason: 'method-missing', message: 'second page' }), { accepted: false });
    await tracked.done;
    assertGuardError(tracked.reason, CODES.refused, 'a refused query at its deadline');
    assert.ok(Date.now() - start >= DEADLINE - SLACK);
    assert.ok(tracked.reason.message.includes(SEED_REFUSAL.reason));
    assert.ok(tracked.reason.message.includes(SEED_REFUSAL.message), 'the first refusal is the one remembered');
    assertNothingLeft(rig, q, timers);
  });
});

// ---------------------------------------------------------------------------
describe('output-validation refusal', () => {
  const violations = validateJsonSchemaValue(OUTPUT_SCHEMA, INVALID_DATA, 'output');

  it('control: an answer failing output validation is swallowed and the query keeps waiting', async (t) => {
    const rig = await registryFor(t);
    assert.ok(violations.length > 0, 'the fixture answer really is invalid');
    const q = rig.query();
    const tracked = track(q.promise);
    assert.deepEqual(rig.answer(q.requestId, { ok: true, data: INVALID_DATA }), { accepted: false });
    await sleep(WAIT);
    assert.equal(tracked.status, 'pending');
    assert.equal(rig.raw.pending.has(q.requestId), true);
  });

  it('guarded: an invalid answer is remembered as a refusal and rejects within the grace', async (t) => {
    const rig = await registryFor(t);
    const { service } = await rig.mountGuard({ inspect: { deadlineMs: LONG, refusalGraceMs: 50 } });
    const timers = activeTimeouts();
    const q = rig.query();
    const tracked = track(q.promise);
    const answeredAt = Date.now();
    assert.deepEqual(rig.answer(q.requestId, { ok: true, data: INVALID_DATA }), { accepted: false });
    await tracked.done;
    assertGuardError(tracked.reason, CODES.refused);
    assert.ok(Date.now() - answeredAt < LONG / 2, 'within the grace');
    assert.match(tracked.reason.message, /output/i);
    assert.match(tracked.reason.message, /validat/i, 'the message says the answer failed validation');
    assert.match(tracked.reason.message, /read the source/);
    assertNothingLeft(rig, q, timers);
    assert.deepEqual(service.counts(), { ...EMPTY_COUNTS, refused: 1 });
  });

  it('guarded: the refusal message carries the validation error itself', async (t) => {
    // Contract: the message "contains the page's reason and message verbatim
    // (or the validation error)". The registry's own validator names the
    // offending field; the model needs that, not only that validation failed.
    const rig = await registryFor(t);
    await rig.mountGuard({ inspect: { deadlineMs: LONG, refusalGraceMs: 20 } });
    const q = rig.query();
    const tracked = track(q.promise);
    rig.answer(q.requestId, { ok: true, data: INVALID_DATA });
    await tracked.done;
    assertGuardError(tracked.reason, CODES.refused);
    for (const violation of violations) {
      assert.ok(tracked.reason.message.includes(violation), `the message names the violation ${violation}; got: ${tracked.reason.message}`);
    }
  });
});

// ---------------------------------------------------------------------------
describe('a valid answer after a refusal', () => {
  it('control: unguarded, the valid answer after refusals settles the query', async (t) => {
    const rig = await registryFor(t);
    const q = rig.query();
    const tracked = track(q.promise);
    assert.deepEqual(rig.answer(q.requestId, { ok: true, data: INVALID_DATA }), { accepted: false });
    assert.deepEqual(rig.answer(q.requestId, SEED_REFUSAL), { accepted: false });
    assert.deepEqual(rig.answer(q.requestId, { ok: true, data: VALID_DATA }), { accepted: true });
    await tracked.done;
    assert.deepEqual(tracked.value, VALID_DATA);
  });

  it('guarded: a valid answer from another page within the grace still wins, and nothing fires later', async (t) => {
    const rig = await registryFor(t);
    const { service } = await rig.mountGuard({ inspect: { deadlineMs: 400, refusalGraceMs: 150 } });
    assertGuarded(rig);
    const timers = activeTimeouts();
    const q = rig.query();
    const tracked = track(q.promise);
    assert.deepEqual(rig.answer(q.requestId, { ok: true, data: INVALID_DATA }), { accepted: false });
    assert.deepEqual(rig.answer(q.requestId, SEED_REFUSAL), { accepted: false });
    await sleep(30);
    assert.equal(tracked.status, 'pending');
    assert.deepEqual(rig.answer(q.requestId, { ok: true, data: VALID_DATA }), { accepted: true });
    await tracked.done;
    assert.equal(tracked.status, 'fulfilled');
    assert.deepEqual(tracked.value, VALID_DATA);
    assertNothingLeft(rig, q, timers);
    await sleep(200); // past the grace that would have ended at ~150 ms
    assert.equal(tracked.settlements, 1);
    assert.equal(rig.resolvedCount(q.requestId), 1);
    assert.deepEqual(service.counts(), EMPTY_COUNTS, 'a query that was answered is not reported');
    assert.equal(activeTimeouts(), timers);
  });
});

// ---------------------------------------------------------------------------
describe('unbound agent (agent == null)', () => {
  it('control: an answer with a null agent throws TypeError and the entry survives', async (t) => {
    const rig = await registryFor(t);
    const q = rig.query();
    const tracked = track(q.promise);
    assert.throws(() => rig.answer(q.requestId, { ok: true, data: VALID_DATA }, null), (error) => error instanceof TypeError && /reading 'id'/.test(error.message));
    assert.throws(() => rig.answer(q.requestId, { ok: true, data: VALID_DATA }, undefined), TypeError);
    await sleep(50);
    assert.equal(tracked.status, 'pending', 'the answer is lost');
    assert.equal(rig.raw.pending.has(q.requestId), true);
  });

  it('guarded: { accepted: false } and an unbound-agent report; the query still waits for a bound answer', async (t) => {
    const rig = await registryFor(t);
    const { service } = await rig.mountGuard({ inspect: { deadlineMs: 400 } });
    const timers = activeTimeouts();
    const q = rig.query();
    const tracked = track(q.promise);
    assert.deepEqual(rig.answer(q.requestId, { ok: true, data: VALID_DATA }, null), { accepted: false });
    assert.deepEqual(rig.answer(q.requestId, { ok: true, data: VALID_DATA }, undefined), { accepted: false });
    const reports = service.reports();
    assert.equal(reports.length, 2);
    for (const report of reports) assertReport(report, { kind: 'unbound-agent', requestId: q.requestId, deadlineMs: 400 });
    assert.deepEqual(service.counts(), { ...EMPTY_COUNTS, unboundAgent: 2 });
    assert.ok(rig.logs.some((line) => line.type === 'warn' && line.text.includes(q.requestId)), 'logged at warn level');
    await flush();
    assert.equal(tracked.status, 'pending', 'an unbound answer is not a refusal and does not settle the query');
    assert.equal(rig.raw.pending.has(q.requestId), true);
    assert.deepEqual(rig.answer(q.requestId, { ok: true, data: VALID_DATA }), { accepted: true });
    await tracked.done;
    assert.deepEqual(tracked.value, VALID_DATA);
    assertNothingLeft(rig, q, timers);
    assert.deepEqual(rig.answer('inspect-unknown', { ok: true, data: VALID_DATA }, null), { accepted: false }, 'an unknown id with a null agent too');
  });
});

// ---------------------------------------------------------------------------
describe('late answers', () => {
  it('control: unguarded, an answer arriving as late still lands (nothing ever expired)', async (t) => {
    const rig = await registryFor(t);
    const q = rig.query();
    const tracked = track(q.promise);
    await sleep(DEADLINE + 50);
    assert.deepEqual(rig.answer(q.requestId, { ok: true, data: VALID_DATA }), { accepted: true });
    await tracked.done;
    assert.equal(tracked.status, 'fulfilled');
  });

  it('guarded: every answer after expiry gets { accepted: false } and nothing settles twice', async (t) => {
    const rig = await registryFor(t);
    const { service } = await rig.mountGuard({ inspect: { deadlineMs: DEADLINE } });
    const timers = activeTimeouts();
    const q = rig.query();
    const tracked = track(q.promise);
    await tracked.done;
    const first = tracked.reason;
    assertGuardError(first, CODES.deadline);
    assert.deepEqual(rig.answer(q.requestId, { ok: true, data: VALID_DATA }), { accepted: false });
    assert.deepEqual(rig.answer(q.requestId, SEED_REFUSAL), { accepted: false });
    assert.deepEqual(rig.answer(q.requestId, { ok: true, data: INVALID_DATA }), { accepted: false });
    assert.deepEqual(rig.answer(q.requestId, { ok: true, data: VALID_DATA }, null), { accepted: false }, 'a late unbound answer does not throw');
    await sleep(100);
    assert.equal(tracked.settlements, 1);
    assert.equal(tracked.reason, first);
    assert.equal(rig.resolvedCount(q.requestId), 1);
    assert.equal(service.counts().deadline, 1);
    assert.equal(service.counts().refused, 0, 'a late refusal is not a second outcome');
    assertNothingLeft(rig, q, timers);
  });

  it('guarded: an answer given from inside the resolved event of the expiry is refused; the call still rejects with the deadline', async (t) => {
    const rig = await registryFor(t);
    await rig.mountGuard({ inspect: { deadlineMs: DEADLINE } });
    const answers = [];
    rig.ctx.on('cordis/inspect-query-resolved', ({ requestId }) => {
      answers.push(rig.answer(requestId, { ok: true, data: VALID_DATA }));
    });
    const timers = activeTimeouts();
    const q = rig.query();
    const tracked = track(q.promise);
    await tracked.done;
    assertGuardError(tracked.reason, CODES.deadline);
    assert.deepEqual(answers, [{ accepted: false }]);
    assertNothingLeft(rig, q, timers);
  });
});

// ---------------------------------------------------------------------------
describe('untouched paths: same values and same errors as unguarded', () => {
  it('control/guarded: a healthy answer gives the same value, no report, no timer left', async (t) => {
    const { plain, guarded, service } = await sideBySide(t);
    const results = [];
    for (const rig of [plain, guarded]) {
      const timers = activeTimeouts();
      const q = rig.query({ input: { prefix: '--' } });
      const tracked = track(q.promise);
      await sleep(20);
      const accepted = rig.answer(q.requestId, { ok: true, data: VALID_DATA });
      await tracked.done;
      results.push({ accepted, status: tracked.status, value: tracked.value });
      assertNothingLeft(rig, q, timers);
    }
    assert.deepEqual(results[1], results[0]);
    assert.deepEqual(results[0].value, VALID_DATA);
    await sleep(DEADLINE + 30);
    assert.deepEqual(service.counts(), EMPTY_COUNTS);
  });

  it('control/guarded: a page answering synchronously inside cordis/inspect-query gives the same value', async (t) => {
    const { plain, guarded, service } = await sideBySide(t);
    const results = [];
    for (const rig of [plain, guarded]) {
      // Registered after the guard mounted (the guard's own listener runs first) …
      const off = rig.ctx.on('cordis/inspect-query', ({ requestId }) => rig.answer(requestId, { ok: true, data: VALID_DATA }));
      const timers = activeTimeouts();
      const q = rig.query();
      results.push(await outcome(() => q.promise));
      off();
      assertNothingLeft(rig, q, timers);
    }
    assertSameOutcome(results[1], results[0], 'synchronous answer');
    // … and before it (the registry answers before the guard hears of the request).
    const early = await registryFor(t);
    early.ctx.on('cordis/inspect-query', ({ requestId }) => early.answer(requestId, { ok: true, data: VALID_DATA }));
    const { service: earlyService } = await early.mountGuard({ inspect: { deadlineMs: DEADLINE } });
    const timers = activeTimeouts();
    const q = early.query();
    assertSameOutcome(await outcome(() => q.promise), results[0], 'synchronous answer before the guard heard');
    assertNothingLeft(early, q, timers);
    await sleep(DEADLINE + 30);
    assert.deepEqual(earlyService.counts(), EMPTY_COUNTS, 'no deadline fires for a query answered before the guard heard of it');
    assert.deepEqual(service.counts(), EMPTY_COUNTS);
    assert.equal(activeTimeouts(), timers);
  });

  it('control/guarded: cancellation through the caller\'s signal gives the same error and the same clean-up', async (t) => {
    const { plain, guarded, service } = await sideBySide(t);
    for (const reason of [undefined, new Error('caller gave up')]) {
      const results = [];
      for (const rig of [plain, guarded]) {
        const timers = activeTimeouts();
        const q = rig.query();
        const tracked = track(q.promise);
        await sleep(20);
        q.controller.abort(reason);
        results.push(await outcome(() => q.promise));
        assert.equal(tracked.status, 'rejected');
        assertNothingLeft(rig, q, timers);
      }
      assertSameOutcome(results[1], results[0], `abort(${reason ? 'reason' : ''})`);
      assert.match(results[0].error.message, /was cancelled/);
    }
    assert.deepEqual(service.counts(), EMPTY_COUNTS, 'a cancelled query is not reported');
  });

  it('control/guarded: cancellation while a refusal is remembered is still the caller\'s cancellation', async (t) => {
    const { plain, guarded, service } = await sideBySide(t, { deadlineMs: LONG, refusalGraceMs: 1000 });
    const results = [];
    for (const rig of [plain, guarded]) {
      const timers = activeTimeouts();
      const q = rig.query();
      rig.answer(q.requestId, SEED_REFUSAL);
      await sleep(20);
      q.controller.abort();
      results.push(await outcome(() => q.promise));
      assertNothingLeft(rig, q, timers);
    }
    assertSameOutcome(results[1], results[0], 'abort after a refusal');
    assert.deepEqual(service.counts(), EMPTY_COUNTS);
  });

  it('control/guarded: an already-aborted signal rejects with the signal\'s own reason, no entry and no event', async (t) => {
    const { plain, guarded, service } = await sideBySide(t);
    for (const reason of [undefined, new Error('aborted before the call')]) {
      const results = [];
      for (const rig of [plain, guarded]) {
        const controller = new AbortController();
        controller.abort(reason);
        const timers = activeTimeouts();
        const requests = rig.requests.length;
        const resolved = rig.resolved.length;
        const result = await outcome(() => rig.query({ signal: controller.signal }).promise);
        results.push(result);
        assert.equal(result.error, controller.signal.reason, 'the very reason object');
        assert.equal(rig.requests.length, requests, 'no cordis/inspect-query');
        assert.equal(rig.resolved.length, resolved, 'no cordis/inspect-query-resolved');
        assert.equal(rig.raw.pending.size, 0);
        assert.equal(abortListeners(controller.signal), 0);
        assert.equal(activeTimeouts(), timers);
      }
      assertSameOutcome(results[1], results[0], 'already aborted');
    }
    assert.deepEqual(service.counts(), EMPTY_COUNTS);
  });

  it('control/guarded: client queries that fail before waiting fail the same way', async (t) => {
    const { plain, guarded, service } = await sideBySide(t);
    const cases = {
      'unknown provider': { provider: 'Nope' },
      'unknown method': { method: 'nope' },
      'invalid input': { input: { prefix: 5 } },
      'no signal': { signal: null },
    };
    for (const [label, args] of Object.entries(cases)) {
      const timers = activeTimeouts();
      const unguarded = await outcome(() => plain.query(args).promise);
      const withGuard = await outcome(() => guarded.query(args).promise);
      assert.notEqual(unguarded.mode, 'resolve', `${label}: the registry refuses it`);
      assertSameOutcome(withGuard, unguarded, label);
      assert.equal(guarded.raw.pending.size, 0);
      assert.equal(activeTimeouts(), timers, `${label}: no timer left`);
    }
    assert.deepEqual(service.counts(), EMPTY_COUNTS);
  });

  it('control/guarded: platform "host" queries give the same values and errors, and are never cut by the deadline', async (t) => {
    const { plain, guarded, service } = await sideBySide(t, { deadlineMs: 60 }, { hostProvider: true });
    const aborted = new AbortController();
    aborted.abort();
    const cases = {
      'a value': {},
      'a slow provider (3× the deadline)': { input: { delayMs: 180 } },
      'a provider that throws': { input: { mode: 'throw' } },
      'invalid output': { input: { mode: 'invalid' } },
      'invalid input': { input: { delayMs: 'soon' } },
      'unknown host provider': { provider: 'Nope' },
      'unknown method': { method: 'nope' },
      'an aborted signal': { signal: aborted.signal },
    };
    for (const [label, args] of Object.entries(cases)) {
      const timers = activeTimeouts();
      const query = { platform: 'host', provider: HOST_PROVIDER, method: HOST_METHOD, ...args };
      const unguarded = await outcome(() => plain.query(query).promise);
      const withGuard = await outcome(() => guarded.query(query).promise);
      assertSameOutcome(withGuard, unguarded, label);
      if (label === 'an aborted signal') assert.equal(withGuard.error, aborted.signal.reason);
      assert.equal(activeTimeouts(), timers, `${label}: no timer left`);
    }
    assert.equal(guarded.requests.length, 0, 'host queries never reach a page');
    assert.deepEqual(service.counts(), EMPTY_COUNTS);
  });
});

// ---------------------------------------------------------------------------
describe('this forwarding and consumer handles', () => {
  /** A foreign patch on the raw instance that records its `this` and arguments. */
  function recordQueryCalls(raw) {
    const calls = [];
    raw.query = function recordingQuery(...args) {
      calls.push({ self: this, args });
      return PROTO.query.apply(this, args);
    };
    return calls;
  }

  it('control: a patch on the raw instance reaches every consumer read, with a cordis proxy as this', async (t) => {
    const rig = await registryFor(t);
    const early = rig.svc;
    let injected;
    await rig.ctx.plugin({ name: 'consumer', inject: ['cordisInspect'], apply(ctx) { injected = ctx.cordisInspect; } });
    const calls = recordQueryCalls(rig.raw);
    for (const via of [rig.svc, early, injected]) track(rig.query({ via }).promise);
    assert.equal(calls.length, 3);
    for (const { self } of calls) {
      assert.notEqual(self, rig.raw, 'this is a proxy, not the raw instance');
      assert.equal(self?.[CORDIS_ORIGINAL], rig.raw, "the proxy's original is the registry");
    }
  });

  it('guarded: reads made after and before the mount, and an injected handle, all reach the wrapper', async (t) => {
    const rig = await registryFor(t);
    const early = rig.svc;
    let injected;
    await rig.ctx.plugin({ name: 'consumer', inject: ['cordisInspect'], apply(ctx) { injected = ctx.cordisInspect; } });
    const { service } = await rig.mountGuard({ inspect: { deadlineMs: DEADLINE } });
    const queries = [rig.query(), rig.query({ via: early }), rig.query({ via: injected })];
    const tracked = queries.map((q) => track(q.promise));
    await Promise.all(tracked.map((one) => one.done));
    tracked.forEach((one, index) => assertGuardError(one.reason, CODES.deadline, `read ${index}`));
    assert.equal(service.counts().deadline, 3);
  });

  it('guarded: the previous query gets the caller\'s this and the caller\'s arguments', async (t) => {
    const rig = await registryFor(t, { hostProvider: true });
    const calls = recordQueryCalls(rig.raw);
    const resolveCalls = [];
    rig.raw.resolveClientQuery = function recordingResolve(...args) {
      resolveCalls.push({ self: this, args });
      return PROTO.resolveClientQuery.apply(this, args);
    };
    await rig.mountGuard({ inspect: { deadlineMs: DEADLINE } });
    assertGuarded(rig);
    assert.equal(rig.raw.query[PATCHED].original.name, 'recordingQuery', 'the guard wraps the previous own method');
    const input = { prefix: '--' };
    const q = rig.query({ input });
    const tracked = track(q.promise);
    assert.equal(calls.length, 1, 'the previous method runs once');
    const [{ self, args }] = calls;
    assert.notEqual(self, rig.raw, "this is the caller's proxy …");
    assert.equal(self?.[CORDIS_ORIGINAL], rig.raw, '… whose original is the registry');
    assert.deepEqual(args.slice(0, 3), ['client', PROVIDER, METHOD]);
    assert.equal(args[3], input, 'the same input object');
    assert.equal(args[4], rig.agent, 'the same agent object');
    assert.ok(args[5] instanceof AbortSignal, 'a signal the registry can listen on');
    assert.deepEqual(rig.answer(q.requestId, { ok: true, data: VALID_DATA }), { accepted: true });
    await tracked.done;
    assert.deepEqual(tracked.value, VALID_DATA);
    assert.equal(resolveCalls.length, 1);
    assert.equal(resolveCalls[0].self?.[CORDIS_ORIGINAL], rig.raw);
    assert.notEqual(resolveCalls[0].self, rig.raw);
    assert.equal(resolveCalls[0].args[0], rig.agent);

    const hostSignal = rig.controller().signal;
    await rig.query({ platform: 'host', provider: HOST_PROVIDER, method: HOST_METHOD, signal: hostSignal }).promise;
    assert.equal(calls[1].args[5], hostSignal, 'a host query keeps the caller\'s own signal');
  });
});

// ---------------------------------------------------------------------------
describe('install and restore by marker', () => {
  it('control: service method reads are not identity-stable, and the registry has no own methods', async (t) => {
    const rig = await registryFor(t);
    assert.notEqual(rig.svc.query, rig.svc.query, 'two reads of svc.query differ');
    assert.deepEqual(ownMethods(rig.raw), []);
    assert.equal(rig.raw.query, PROTO.query);
  });

  it('guarded: both methods are wrapped once and carry the marker { original, owner }', async (t) => {
    const rig = await registryFor(t);
    await rig.mountGuard({ inspect: { deadlineMs: DEADLINE } });
    assert.deepEqual(ownMethods(rig.raw).sort(), ['query', 'resolveClientQuery']);
    for (const key of ['query', 'resolveClientQuery']) {
      const marker = rig.raw[key][PATCHED];
      assert.ok(marker, `${key} is marked`);
      assert.equal(marker.original, PROTO[key], `${key}: the original is the registry's own method`);
      assert.equal(typeof marker.owner, 'string');
      assert.match(marker.owner, /harness-guard/);
    }
  });

  it('guarded: a double install (plugin, then the API twice) wraps once, reports once, and only the first owner restores', async (t) => {
    const rig = await registryFor(t);
    const { fiber, service } = await rig.mountGuard({ inspect: { deadlineMs: DEADLINE } });
    const wrapper = rig.raw.query;
    const resolveWrapper = rig.raw.resolveClientQuery;
    const secondReports = [];
    const { api } = await loadGuard();
    const disposeSecond = api.installInspectClientGuard(rig.svc, { deadlineMs: 50, onReport: (report) => secondReports.push(report) });
    const disposeThird = api.installInspectClientGuard(rig.raw, { deadlineMs: 50 });
    assert.equal(rig.raw.query, wrapper, 'query is not wrapped again');
    assert.equal(rig.raw.resolveClientQuery, resolveWrapper, 'resolveClientQuery is not wrapped again');
    assert.equal(rig.raw.query[PATCHED].original, PROTO.query);

    const timers = activeTimeouts();
    const q = rig.query();
    const tracked = track(q.promise);
    await tracked.done;
    assertGuardError(tracked.reason, CODES.deadline);
    assert.equal(tracked.reason.message, deadlineMessage(PROVIDER, METHOD, DEADLINE), 'the installed guard\'s deadline, not the ignored one');
    assertNothingLeft(rig, q, timers);
    assert.equal(service.counts().deadline, 1);
    assert.deepEqual(secondReports, []);

    disposeSecond();
    disposeThird();
    assert.equal(rig.raw.query, wrapper, 'the no-op installs restore nothing');
    await fiber.dispose();
    assert.deepEqual(ownMethods(rig.raw), [], 'the owner restores');
  });

  it('guarded: a second copy of the package (its own module graph and wasm instance) wraps nothing over the first', async (t) => {
    const rig = await registryFor(t);
    const { fiber, service } = await rig.mountGuard({ inspect: { deadlineMs: DEADLINE } });
    const wrapper = rig.raw.query;
    // The installed package copied under another directory of node_modules: the same
    // files, loaded a second time, as two installs of it in one process would be.
    const installed = dirname(fileURLToPath(import.meta.resolve('cordis-plugin-harness-guard')));
    const copy = join(dirname(installed), `.harness-guard-copy-${process.pid}`);
    cpSync(installed, copy, { recursive: true });
    t.after(() => rmSync(copy, { recursive: true, force: true }));
    const other = await import(pathToFileURL(join(copy, 'guard.js')).href);
    const { api } = await loadGuard();
    assert.notEqual(other.installInspectClientGuard, api.installInspectClientGuard, 'a second copy, not the first one again');
    const otherReports = [];
    const disposeOther = other.installInspectClientGuard(rig.svc, { deadlineMs: 50, onReport: (report) => otherReports.push(report) });
    assert.equal(rig.raw.query, wrapper, 'query is not wrapped again');
    assert.equal(rig.raw.query[PATCHED].original, PROTO.query, 'one wrapper, over the registry\'s own method');

    const q = rig.query();
    const tracked = track(q.promise);
    await tracked.done;
    assert.equal(tracked.reason.message, deadlineMessage(PROVIDER, METHOD, DEADLINE), 'the first copy\'s deadline');
    assert.equal(service.counts().deadline, 1);
    assert.deepEqual(otherReports, [], 'the second copy reports nothing');
    assert.equal(rig.logs.filter((line) => line.type === 'warn' && line.text.includes(q.requestId)).length, 1, 'one warn line');
    disposeOther();
    assert.equal(rig.raw.query, wrapper, 'the second copy restores nothing');
    await fiber.dispose();
    assert.deepEqual(ownMethods(rig.raw), []);
  });

  it('guarded: dispose deletes the own property when there was none before', async (t) => {
    const rig = await registryFor(t);
    const dispose = await rig.install({ deadlineMs: DEADLINE });
    assert.ok(Object.hasOwn(rig.raw, 'query'));
    dispose();
    assert.deepEqual(ownMethods(rig.raw), []);
    assert.equal(rig.raw.query, PROTO.query);
    assert.equal(rig.raw.resolveClientQuery, PROTO.resolveClientQuery);
    dispose(); // idempotent
    assert.deepEqual(ownMethods(rig.raw), []);
  });

  it('guarded: dispose puts back a previous own property exactly', async (t) => {
    const rig = await registryFor(t);
    const previousQuery = function previousQuery(...args) { return PROTO.query.apply(this, args); };
    const previousResolve = function previousResolve(...args) { return PROTO.resolveClientQuery.apply(this, args); };
    rig.raw.query = previousQuery;
    rig.raw.resolveClientQuery = previousResolve;
    const { fiber } = await rig.mountGuard({ inspect: { deadlineMs: DEADLINE } });
    assert.equal(rig.raw.query[PATCHED].original, previousQuery);
    assert.equal(rig.raw.resolveClientQuery[PATCHED].original, previousResolve);
    await fiber.dispose();
    assert.equal(rig.raw.query, previousQuery);
    assert.equal(rig.raw.resolveClientQuery, previousResolve);
  });

  it('guarded: a later foreign patch over ours is not clobbered by dispose', async (t) => {
    const rig = await registryFor(t);
    const { fiber } = await rig.mountGuard({ inspect: { deadlineMs: DEADLINE } });
    assertGuarded(rig);
    const ours = rig.raw.query;
    const later = function laterPatch(...args) { return ours.apply(this, args); };
    rig.raw.query = later;
    await fiber.dispose();
    assert.equal(rig.raw.query, later, 'the later patch stays');
    assert.equal(Object.hasOwn(rig.raw, 'resolveClientQuery'), false, 'the method still ours is restored');
    // A call through the later patch still reaches the registry and gets its answer.
    const q = rig.query();
    const tracked = track(q.promise);
    assert.ok(q.requestId);
    assert.deepEqual(rig.answer(q.requestId, { ok: true, data: VALID_DATA }), { accepted: true });
    await tracked.done;
    assert.deepEqual(tracked.value, VALID_DATA);
  });

  it('guarded: mounting again after a dispose guards again', async (t) => {
    const rig = await registryFor(t);
    for (let round = 0; round < 2; round += 1) {
      const { fiber } = await rig.mountGuard({ inspect: { deadlineMs: DEADLINE } });
      const q = rig.query();
      const result = await outcome(() => q.promise);
      assertGuardError(result.error, CODES.deadline, `round ${round}`);
      await fiber.dispose();
      assert.deepEqual(ownMethods(rig.raw), [], `round ${round}: restored`);
    }
  });
});

// ---------------------------------------------------------------------------
describe('disposal with queries in flight', () => {
  it('control: disposing the registry\'s fiber leaves an unguarded query pending', async (t) => {
    const rig = await createRegistry();
    const q = rig.query();
    const tracked = track(q.promise);
    await rig.fiber.dispose();
    await sleep(WAIT);
    assert.equal(tracked.status, 'pending');
    assert.equal(rig.raw.pending.has(q.requestId), true);
    q.controller.abort();
    await tracked.done;
  });

  it('guarded (plugin): disposing the guard rejects every guarded query at once, cleans up and restores', async (t) => {
    const rig = await registryFor(t);
    const { fiber } = await rig.mountGuard({ inspect: { deadlineMs: LONG, refusalGraceMs: 4000 } });
    const timers = activeTimeouts();
    const start = Date.now();
    const plainQuery = rig.query();
    const refusedQuery = rig.query();
    rig.answer(refusedQuery.requestId, SEED_REFUSAL);
    const tracked = [plainQuery, refusedQuery].map((q) => track(q.promise));
    await sleep(20);
    assert.ok(tracked.every((one) => one.status === 'pending'));
    await fiber.dispose();
    await flush();
    assert.ok(Date.now() - start < LONG / 2, 'at once, not at the deadline');
    for (const [index, q] of [plainQuery, refusedQuery].entries()) {
      assert.equal(tracked[index].status, 'rejected', `query ${index} rejected by the time dispose finished`);
      assertGuardError(tracked[index].reason, CODES.disposed, `query ${index}`);
      assertNothingLeft(rig, q, timers);
    }
    assert.deepEqual(ownMethods(rig.raw), [], 'methods restored');
  });

  it('guarded (API): dispose() rejects in flight with INSPECT_CLIENT_GUARD_DISPOSED and reports each', async (t) => {
    const rig = await registryFor(t);
    const reports = [];
    const dispose = await rig.install({ deadlineMs: LONG, onReport: (report) => reports.push(report) });
    const timers = activeTimeouts();
    const queries = [rig.query(), rig.query()];
    const tracked = queries.map((q) => track(q.promise));
    dispose();
    await flush();
    for (const [index, q] of queries.entries()) {
      assertGuardError(tracked[index].reason, CODES.disposed, `query ${index}`);
      assertNothingLeft(rig, q, timers);
    }
    assert.deepEqual(reports.map((report) => [report.kind, report.requestId]).sort(), queries.map((q) => ['disposed', q.requestId]).sort(), 'one disposed report per query');
    for (const report of reports) assertReport(report, { kind: 'disposed', requestId: report.requestId, deadlineMs: LONG });
    assert.deepEqual(ownMethods(rig.raw), []);
  });

  it('guarded: cordisInspect going away (the host runner row stops) rejects guarded queries with DISPOSED', async (t) => {
    const rig = await registryFor(t);
    await rig.mountGuard({ inspect: { deadlineMs: LONG } });
    const timers = activeTimeouts();
    const q = rig.query();
    const tracked = track(q.promise);
    await rig.fiber.dispose();
    await flush();
    assert.equal(tracked.status, 'rejected', 'the guarded query did not outlive the service');
    assertGuardError(tracked.reason, CODES.disposed);
    assertNothingLeft(rig, q, timers);
    assert.deepEqual(ownMethods(rig.raw), []);
  });

  it('guarded: disposing one registry\'s guard leaves another registry\'s deadline running', async (t) => {
    const first = await registryFor(t);
    const second = await registryFor(t);
    const disposeFirst = await first.install({ deadlineMs: LONG });
    await second.install({ deadlineMs: DEADLINE });
    const firstQuery = track(first.query().promise);
    const secondQuery = track(second.query().promise);
    disposeFirst();
    await flush();
    assertGuardError(firstQuery.reason, CODES.disposed);
    assert.equal(secondQuery.status, 'pending');
    assert.equal(await settleWithin(secondQuery, DEADLINE * 10), 'settled', 'the other query still expires');
    assertGuardError(secondQuery.reason, CODES.deadline);
  });
});

// ---------------------------------------------------------------------------
describe('a registry without the expected shape', () => {
  /** Provide a stand-in `cordisInspect` through its own plugin. */
  async function provideRegistry(ctx, value) {
    const fiber = ctx.plugin({ name: 'partial-registry', apply(inner) { inner.provide('cordisInspect', value); } });
    await fiber;
    return fiber;
  }

  it('control: a complete registry is patched by the same install', async (t) => {
    const rig = await registryFor(t);
    await rig.install({ deadlineMs: DEADLINE });
    assert.deepEqual(ownMethods(rig.raw).sort(), ['query', 'resolveClientQuery']);
  });

  it('guarded (plugin): a registry missing resolveClientQuery is left untouched with a warning; the plugin still mounts', async (t) => {
    const rig = await registryFor(t);
    await rig.fiber.dispose();
    const query = async () => 'from the partial registry';
    const partial = { query };
    await provideRegistry(rig.ctx, partial);
    await rig.mountGuard({ inspect: { deadlineMs: DEADLINE } });
    await flush();
    assert.deepEqual(Object.keys(partial), ['query'], 'nothing added');
    assert.equal(partial.query, query, 'query not wrapped');
    assert.ok(rig.ctx.get('inboxInputGuard'), 'the inbox half still runs');
    assert.ok(rig.ctx.get('inspectClientGuard'));
    const warnings = rig.logs.filter((line) => line.type === 'warn' && /resolveClientQuery/.test(line.text));
    assert.equal(warnings.length, 1, `one warning names what is missing: ${JSON.stringify(rig.logs)}`);
    assert.equal(await rig.ctx.get('cordisInspect').query('client', PROVIDER, METHOD, {}, AGENT, new AbortController().signal), 'from the partial registry');
  });

  it('guarded (API): missing resolveClientQuery or query leaves the object untouched and warns', async () => {
    const { api } = await loadGuard();
    for (const [missing, partial] of [['resolveClientQuery', { query: async () => 1 }], ['query', { resolveClientQuery: () => ({ accepted: false }) }]]) {
      const before = { ...partial };
      let dispose;
      const warnings = await capturingWarnings(() => { dispose = api.installInspectClientGuard(partial, { deadlineMs: DEADLINE }); });
      assert.equal(typeof dispose, 'function');
      assert.deepEqual(partial, before, `missing ${missing}: untouched`);
      for (const key of Object.keys(before)) assert.equal(partial[key], before[key]);
      assert.ok(warnings.some((warning) => warning.message.includes(missing)), `missing ${missing}: the warning names it`);
      dispose();
      assert.deepEqual(partial, before);
    }
  });
});

// ---------------------------------------------------------------------------
describe('faults', () => {
  it('control: a previous query throwing synchronously throws out of the consumer\'s call', async (t) => {
    const rig = await registryFor(t);
    const boom = new Error('previous query failed synchronously');
    rig.raw.query = function throwingQuery() { throw boom; };
    const result = await outcome(() => rig.query().promise);
    assert.equal(result.mode, 'throw');
    assert.equal(result.error, boom);
  });

  it('guarded: the same synchronous error passes through unchanged; nothing is left; the guard keeps working', async (t) => {
    const rig = await registryFor(t);
    const boom = new Error('previous query failed synchronously');
    let armed = true;
    rig.raw.query = function throwOnceQuery(...args) {
      if (armed) { armed = false; throw boom; }
      return PROTO.query.apply(this, args);
    };
    const { service } = await rig.mountGuard({ inspect: { deadlineMs: DEADLINE } });
    const timers = activeTimeouts();
    const result = await outcome(() => rig.query().promise);
    assert.equal(result.mode, 'throw', 'thrown synchronously, as unguarded');
    assert.equal(result.error, boom, 'the very error object');
    assert.equal(activeTimeouts(), timers, 'no timer armed for a call that never started');
    assert.equal(rig.raw.pending.size, 0);
    assert.deepEqual(service.counts(), EMPTY_COUNTS);
    const next = await outcome(() => rig.query().promise);
    assertGuardError(next.error, CODES.deadline, 'the next query');
    assert.equal(activeTimeouts(), timers);
  });

  it('control/guarded: a previous query rejecting asynchronously passes the same error through', async (t) => {
    const boom = new Error('previous query rejected');
    const plain = await registryFor(t);
    const guarded = await registryFor(t);
    for (const rig of [plain, guarded]) rig.raw.query = async function rejectingQuery() { throw boom; };
    const { service } = await guarded.mountGuard({ inspect: { deadlineMs: DEADLINE } });
    assertGuarded(guarded);
    const timers = activeTimeouts();
    const unguarded = await outcome(() => plain.query().promise);
    const withGuard = await outcome(() => guarded.query().promise);
    assert.equal(unguarded.mode, 'reject');
    assert.equal(unguarded.error, boom);
    assert.equal(withGuard.mode, 'reject');
    assert.equal(withGuard.error, boom, 'the very error object');
    assert.equal(activeTimeouts(), timers);
    assert.deepEqual(service.counts(), EMPTY_COUNTS);
  });

  it('control: with a throwing cordis/inspect-query-resolved listener an unguarded query still hangs; a cancel reports the listener error', async (t) => {
    const rig = await registryFor(t);
    const listenerError = new Error('resolved listener failed');
    const off = rig.ctx.on('cordis/inspect-query-resolved', () => { throw listenerError; }, { prepend: true });
    t.after(off);
    const caught = await catchingUncaught(async () => {
      const q = rig.query();
      const tracked = track(q.promise);
      await sleep(WAIT);
      assert.equal(tracked.status, 'pending');
      q.controller.abort();
      await tracked.done;
      assert.match(tracked.reason.message, /was cancelled/);
    });
    off();
    assert.deepEqual(caught, [listenerError], 'Node reports the listener error as uncaught');
  });

  it('guarded: a throwing cordis/inspect-query-resolved listener does not stop the deadline rejection or the clean-up', async (t) => {
    const rig = await registryFor(t);
    const listenerError = new Error('resolved listener failed');
    const off = rig.ctx.on('cordis/inspect-query-resolved', () => { throw listenerError; }, { prepend: true });
    const { service } = await rig.mountGuard({ inspect: { deadlineMs: DEADLINE } });
    const timers = activeTimeouts();
    let q;
    let tracked;
    const caught = await catchingUncaught(async () => {
      q = rig.query();
      tracked = track(q.promise);
      assert.equal(await settleWithin(tracked, DEADLINE * 10), 'settled');
    });
    assert.deepEqual(caught, [listenerError], "what Node reports is the listener's error, once");
    assertGuardError(tracked.reason, CODES.deadline);
    assert.equal(tracked.reason.message, deadlineMessage(PROVIDER, METHOD, DEADLINE));
    assert.equal(rig.raw.pending.size, 0, 'nothing is left pending');
    assert.equal(abortListeners(q.signal), 0);
    assert.equal(activeTimeouts(), timers);
    assert.deepEqual(service.counts(), { ...EMPTY_COUNTS, deadline: 1 });
    // The guard is still usable (and the listener still throws, once per query).
    let next;
    const caughtAgain = await catchingUncaught(async () => { next = await outcome(() => rig.query().promise); });
    assertGuardError(next.error, CODES.deadline, 'the next query');
    assert.deepEqual(caughtAgain, [listenerError]);
    assert.equal(rig.raw.pending.size, 0);
    off();
  });

  it('guarded: queries started re-entrantly from the resolved event and from onReport are guarded too', async (t) => {
    const rig = await registryFor(t);
    const inner = [];
    let fromReport;
    await rig.install({
      deadlineMs: DEADLINE,
      onReport: (report) => {
        if (report.kind === 'deadline' && fromReport === undefined) fromReport = track(rig.query().promise);
      },
    });
    const off = rig.ctx.on('cordis/inspect-query-resolved', () => {
      if (inner.length === 0) inner.push(track(rig.query().promise));
    });
    const outer = track(rig.query().promise);
    await outer.done;
    off();
    assertGuardError(outer.reason, CODES.deadline, 'the outer query');
    assert.equal(inner.length, 1);
    assert.ok(fromReport);
    await Promise.all([inner[0].done, fromReport.done]);
    assertGuardError(inner[0].reason, CODES.deadline, 'the query started from the resolved event');
    assertGuardError(fromReport.reason, CODES.deadline, 'the query started from onReport');
    assert.equal(rig.raw.pending.size, 0);
  });

  it('guarded: a shorter deadline armed after a longer one still fires first', async (t) => {
    const slow = await registryFor(t);
    const fast = await registryFor(t);
    await slow.install({ deadlineMs: 400 });
    await fast.install({ deadlineMs: 60 });
    const order = [];
    const slowQuery = slow.query().promise.catch((error) => { order.push(['slow', error.code]); });
    const start = Date.now();
    const fastQuery = fast.query().promise.catch((error) => { order.push(['fast', error.code, Date.now() - start]); });
    await Promise.all([slowQuery, fastQuery]);
    // The order alone shows the 60 ms deadline did not wait for the 400 ms one.
    assert.deepEqual(order.map(([which, code]) => [which, code]), [['fast', CODES.deadline], ['slow', CODES.deadline]]);
    assert.ok(order[0][2] >= 60 - SLACK, `not before its own deadline (${order[0][2]} ms)`);
  });
});

// ---------------------------------------------------------------------------
describe('config', () => {
  const MAX = 2147483647;
  const INVALID = [
    ['inspect.deadlineMs', 0, { inspect: { deadlineMs: 0 } }, String(MAX)],
    ['inspect.deadlineMs', -1, { inspect: { deadlineMs: -1 } }, String(MAX)],
    ['inspect.deadlineMs', 1.5, { inspect: { deadlineMs: 1.5 } }, String(MAX)],
    ['inspect.deadlineMs', NaN, { inspect: { deadlineMs: NaN } }, String(MAX)],
    ['inspect.deadlineMs', '100', { inspect: { deadlineMs: '100' } }, String(MAX)],
    ['inspect.deadlineMs', MAX + 1, { inspect: { deadlineMs: MAX + 1 } }, String(MAX)],
    ['inspect.refusalGraceMs', -1, { inspect: { refusalGraceMs: -1 } }, '15000'],
    ['inspect.refusalGraceMs', 1.5, { inspect: { deadlineMs: 300, refusalGraceMs: 1.5 } }, '300'],
    ['inspect.refusalGraceMs', 301, { inspect: { deadlineMs: 300, refusalGraceMs: 301 } }, '300'],
    ['inspect.bogus', 1, { inspect: { deadlineMs: 300, bogus: 1 } }, 'deadlineMs'],
    ['bogus', true, { bogus: true }, 'inspect'],
  ];

  it('control: a valid config mounts and installs', async (t) => {
    const rig = await registryFor(t);
    await rig.mountGuard({ inspect: { deadlineMs: 300, refusalGraceMs: 300 } });
    assert.deepEqual(ownMethods(rig.raw).sort(), ['query', 'resolveClientQuery']);
    assert.ok(rig.ctx.get('inspectClientGuard'));
  });

  for (const [field, value, config, range] of INVALID) {
    it(`guarded: ${field} = ${typeof value === 'string' ? JSON.stringify(value) : String(value)} fails the mount naming field, value and range; nothing is installed`, async (t) => {
      const rig = await registryFor(t);
      const { plugin } = await loadGuard();
      let failure;
      try {
        const fiber = rig.ctx.plugin(plugin, config);
        t.after(() => fiber.dispose());
        await fiber;
      } catch (error) {
        failure = error;
      }
      assert.ok(failure instanceof Error, 'the mount fails');
      assert.ok(failure.message.includes(field), `names the field ${field}: ${failure.message}`);
      assert.ok(failure.message.includes(String(value)), `names the value ${String(value)}: ${failure.message}`);
      assert.ok(failure.message.includes(range), `names the allowed range (${range}): ${failure.message}`);
      assert.deepEqual(ownMethods(rig.raw), [], 'no method patched');
      assert.equal(rig.ctx.get('inspectClientGuard'), undefined, 'no inspect service');
      assert.equal(rig.ctx.get('inboxInputGuard'), undefined, 'no inbox service');
      const q = rig.query();
      const tracked = track(q.promise);
      await sleep(30);
      assert.equal(tracked.status, 'pending', 'queries are not guarded');
    });
  }

  it('guarded (API): invalid options throw naming the option, and nothing is installed', async (t) => {
    const rig = await registryFor(t);
    const { api } = await loadGuard();
    for (const [field, options] of [
      ['deadlineMs', { deadlineMs: 0 }],
      ['deadlineMs', { deadlineMs: NaN }],
      ['deadlineMs', { deadlineMs: '100' }],
      ['deadlineMs', { deadlineMs: MAX + 1 }],
      ['refusalGraceMs', { deadlineMs: 100, refusalGraceMs: 101 }],
      ['bogus', { bogus: 1 }],
    ]) {
      assert.throws(() => api.installInspectClientGuard(rig.svc, options), (error) => error instanceof Error && error.message.includes(field), `${JSON.stringify(options)} is refused`);
      assert.deepEqual(ownMethods(rig.raw), [], `${JSON.stringify(options)}: nothing installed`);
    }
  });

  it('guarded: the boundaries mount: deadlineMs 2147483647 does not fire early, refusalGraceMs 0 rejects right after a refusal', async (t) => {
    const rig = await registryFor(t);
    const { fiber } = await rig.mountGuard({ inspect: { deadlineMs: MAX, refusalGraceMs: 0 } });
    const timers = activeTimeouts();
    const q = rig.query();
    const tracked = track(q.promise);
    await sleep(60);
    assert.equal(tracked.status, 'pending', 'a maximal deadline is not clamped to 1 ms');
    rig.answer(q.requestId, SEED_REFUSAL);
    // A grace of 1000 ms would lose this race however busy the machine: timers
    // fire in the order they fall due.
    assert.equal(await settleWithin(tracked, 1000), 'settled', 'no grace');
    assertGuardError(tracked.reason, CODES.refused);
    assertNothingLeft(rig, q, timers);
    await fiber.dispose();
  });

  it('guarded: config omitted → defaults (deadlineMs 15000, refusalGraceMs 1000)', async (t) => {
    const { plugin } = await loadGuard();
    const defaults = plugin.Config({});
    assert.equal(defaults.inspect.enabled, true);
    assert.equal(defaults.inspect.deadlineMs, 15000);
    const rig = await registryFor(t);
    const { service } = await rig.mountGuard();
    assert.deepEqual(ownMethods(rig.raw).sort(), ['query', 'resolveClientQuery'], 'installed with no config at all');
    const timers = activeTimeouts();
    const q = rig.query();
    const tracked = track(q.promise);
    const refusedAt = Date.now();
    rig.answer(q.requestId, SEED_REFUSAL);
    await tracked.done;
    const waited = Date.now() - refusedAt;
    assertGuardError(tracked.reason, CODES.refused);
    assert.ok(waited >= 1000 - SLACK && waited < 10000, `the default grace is 1000 ms (waited ${waited} ms)`);
    assertNothingLeft(rig, q, timers);
    assert.equal(service.reports()[0].deadlineMs, 15000, 'the default deadline');
  });

  it('guarded: refusalGraceMs omitted with deadlineMs under 1000 → min(1000, deadlineMs); the mount does not fail', async (t) => {
    const rig = await registryFor(t);
    await rig.mountGuard({ inspect: { deadlineMs: 200 } });
    assertGuarded(rig);
    const q = rig.query();
    const tracked = track(q.promise);
    rig.answer(q.requestId, SEED_REFUSAL);
    assert.equal(await settleWithin(tracked, 10000), 'settled', 'the refused query ends (at the 200 ms deadline at the latest: only that it ends is bounded here)');
    assertGuardError(tracked.reason, CODES.refused);
  });

  it('guarded: inspect.enabled = false installs nothing', async (t) => {
    const rig = await registryFor(t);
    await rig.mountGuard({ inspect: { enabled: false } });
    assert.deepEqual(ownMethods(rig.raw), []);
  });
});

// ---------------------------------------------------------------------------
describe('the inspectClientGuard service', () => {
  it('control: without the guard there is no service', async (t) => {
    const rig = await registryFor(t);
    assert.equal(rig.ctx.get('inspectClientGuard'), undefined);
  });

  it('guarded: reports() are copies, counts() add up, reset() forgets and the guard stays', async (t) => {
    const rig = await registryFor(t);
    const { service } = await rig.mountGuard({ inspect: { deadlineMs: DEADLINE, refusalGraceMs: 20 } });
    const expired = rig.query();
    const refused = rig.query();
    const settled = Promise.all([outcome(() => expired.promise), outcome(() => refused.promise)]);
    rig.answer(refused.requestId, SEED_REFUSAL);
    rig.answer(expired.requestId, { ok: true, data: VALID_DATA }, null);
    await settled;
    assert.deepEqual(service.counts(), { deadline: 1, refused: 1, unboundAgent: 1, disposed: 0 });
    const reports = service.reports();
    assert.deepEqual(reports.map((report) => report.kind).sort(), ['deadline', 'refused', 'unbound-agent']);
    reports[0].kind = 'tampered';
    reports.length = 0;
    assert.equal(service.reports().length, 3, 'reports() hands out copies');
    assert.notEqual(service.reports()[0].kind, 'tampered');
    service.reset();
    assert.deepEqual(service.counts(), EMPTY_COUNTS);
    assert.deepEqual(service.reports(), []);
    const next = await outcome(() => rig.query().promise);
    assertGuardError(next.error, CODES.deadline, 'still guarded after reset()');
    assert.equal(service.counts().deadline, 1);
  });
});

// ---------------------------------------------------------------------------
describe('what the guard keeps and carries', () => {
  /** `n` queries of this rig's session run to their deadline together; their request ids, in order. */
  async function expireAll(rig, n) {
    const queries = Array.from({ length: n }, () => rig.query());
    const outcomes = await Promise.all(queries.map((q) => outcome(() => q.promise)));
    for (const o of outcomes) assertGuardError(o.error, CODES.deadline);
    return queries.map((q) => q.requestId);
  }

  it('guarded: the latest 1,000 reports are kept, oldest first, while counts() counts every one', async (t) => {
    const rig = await registryFor(t);
    const { service } = await rig.mountGuard({ inspect: { deadlineMs: DEADLINE } });
    const ids = await expireAll(rig, 1005);
    assert.deepEqual(service.counts(), { ...EMPTY_COUNTS, deadline: 1005 }, 'every report is counted');
    const kept = service.reports().map((report) => report.requestId);
    assert.equal(kept.length, 1000);
    assert.deepEqual(kept, ids.slice(5), 'the five oldest made way');
  });

  it('guarded: names, ids and sessions reach the reports and the messages of a chunk of endings as they were', async (t) => {
    // Names holding the characters the endings' packing is made of (digits, ':',
    // '~', '-'), an accented and an astral character (two UTF-16 units), and a
    // lone surrogate (which reaches the guard's text as U+FFFD), due together.
    const odd = [['7:x~-😀', '3:a~'], ['Théme-2', '0'], ['Lone\ud800', 'read']];
    const manifest = [...MANIFEST, ...odd.map(([id, name]) => ({ id, description: 'odd', methods: [{ name, description: 'odd', inputSchema: { type: 'object' }, outputSchema: OUTPUT_SCHEMA }] }))];
    const rig = await registryFor(t, { manifest });
    const { service } = await rig.mountGuard({ inspect: { deadlineMs: DEADLINE } });
    const asked = [[PROVIDER, METHOD], ...odd, [PROVIDER, METHOD]];
    const queries = asked.map(([provider, method]) => rig.query({ provider, method }));
    const outcomes = await Promise.all(queries.map((q) => outcome(() => q.promise)));
    const seen = (text) => text.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');
    asked.forEach(([provider, method], i) => {
      assertGuardError(outcomes[i].error, CODES.deadline, `query ${i}`);
      assert.equal(outcomes[i].error.message, deadlineMessage(seen(provider), seen(method), DEADLINE), `query ${i}: its own names in its message`);
    });
    const reports = service.reports();
    assert.deepEqual(reports.map((r) => [r.providerId, r.methodName, r.requestId, r.sessionId]),
      asked.map(([provider, method], i) => [seen(provider), seen(method), queries[i].requestId, rig.agent.id]));
  });

  it('guarded: queries of two registries due together each end in their own registry', async (t) => {
    const first = await registryFor(t);
    const second = await registryFor(t);
    await first.mountGuard({ inspect: { deadlineMs: DEADLINE } });
    await second.mountGuard({ inspect: { deadlineMs: DEADLINE } });
    // Interleaved, so one run of endings goes from one registry to the other and back.
    const queries = Array.from({ length: 6 }, (_, i) => [i % 2 ? second : first, (i % 2 ? second : first).query()]);
    const outcomes = await Promise.all(queries.map(([, q]) => outcome(() => q.promise)));
    for (const o of outcomes) assertGuardError(o.error, CODES.deadline);
    // Each registry numbers its own requests: each heard exactly its own three, once.
    for (const rig of [first, second]) {
      const own = queries.filter(([r]) => r === rig).map(([, q]) => q.requestId);
      assert.deepEqual([...rig.resolved].sort(), [...own].sort(), 'resolved in its own registry, once each');
      assert.equal(rig.raw.pending.size, 0);
    }
  });

  it('guarded: below the bound every report is kept', async (t) => {
    const rig = await registryFor(t);
    const { service } = await rig.mountGuard({ inspect: { deadlineMs: DEADLINE } });
    const ids = await expireAll(rig, 999);
    assert.deepEqual(service.reports().map((report) => report.requestId), ids);
  });

  it("guarded: a page's reason and message reach the caller whole up to 4,096 characters each, cut after", async (t) => {
    const rig = await registryFor(t);
    await rig.mountGuard({ inspect: { deadlineMs: LONG, refusalGraceMs: 0 } });
    const ask = async (reason, message) => {
      const q = rig.query();
      const tracked = track(q.promise);
      rig.answer(q.requestId, { ok: false, reason, message });
      await tracked.done;
      assertGuardError(tracked.reason, CODES.refused);
      return tracked.reason.message;
    };
    // The character at 4,096 differs from those before it, so a cut one too early or too late shows.
    const reason = `${'r'.repeat(4095)}R${'s'.repeat(904)}`;
    const message = `${'m'.repeat(4095)}M${'n'.repeat(904)}`;
    const long = await ask(reason, message);
    assert.ok(long.includes(`${reason.slice(0, 4096)}…: ${message.slice(0, 4096)}…`), 'the first 4,096 characters of each, whole, the cut marked');
    assert.ok(!long.includes(reason.slice(0, 4097)), 'not one character of the reason more');
    assert.ok(!long.includes(message.slice(0, 4097)), 'not one character of the message more');
    const exact = await ask(reason.slice(0, 4096), message.slice(0, 4096));
    assert.ok(exact.includes(`${reason.slice(0, 4096)}: ${message.slice(0, 4096)}.`), 'exactly 4,096 arrive whole, uncut');
  });

  /**
   * A registry that goes on waiting without announcing its requests, as a host
   * release that dropped `cordis/inspect-query` would: its context's `emit`
   * leaves that one event out until the test ends. (The pinned host always announces.)
   */
  function silence(t, rig) {
    const context = rig.raw.ctx;
    const quiet = new Proxy(context, {
      get(target, key) {
        if (key !== 'emit') return Reflect.get(target, key);
        return (name, ...args) => (name === 'cordis/inspect-query' ? undefined : target.emit(name, ...args));
      },
    });
    Object.defineProperty(rig.raw, 'ctx', { value: quiet, configurable: true, writable: true });
    t.after(() => Object.defineProperty(rig.raw, 'ctx', { value: context, configurable: true, writable: true }));
  }
  const UNANNOUNCED = /the registry did not emit cordis\/inspect-query while a client query went on waiting/;

  it('control: an announced query that waits writes no announcement warning', async (t) => {
    const rig = await registryFor(t);
    await rig.mountGuard({ inspect: { deadlineMs: DEADLINE } });
    const q = rig.query();
    assert.ok(q.requestId, 'the registry announced the request');
    assertGuardError((await outcome(() => q.promise)).error, CODES.deadline);
    assert.deepEqual(rig.logs.filter((l) => UNANNOUNCED.test(l.text)), []);
  });

  it('guarded: a query that goes on waiting unannounced is still guarded, and the warning is written once', async (t) => {
    const rig = await registryFor(t);
    silence(t, rig);
    await rig.mountGuard({ inspect: { deadlineMs: DEADLINE } });
    // Through the raw instance: a call through a cordis read sees a shadow of its context.
    const first = rig.query({ via: rig.raw });
    const second = rig.query({ via: rig.raw });
    assert.equal(first.requestId, undefined, 'nothing announced');
    assert.equal(rig.raw.pending.size, 2, 'both wait in the registry');
    const [a, b] = await Promise.all([outcome(() => first.promise), outcome(() => second.promise)]);
    assertGuardError(a.error, CODES.deadline);
    assertGuardError(b.error, CODES.deadline);
    assert.equal(rig.raw.pending.size, 0, 'nothing left pending');
    const warned = rig.logs.filter((l) => l.name === 'harness-guard' && UNANNOUNCED.test(l.text));
    assert.equal(warned.length, 1, `once per guard: ${JSON.stringify(warned)}`);
  });
});

// ---------------------------------------------------------------------------
describe('a process whose only pending work is one client query', () => {
  const fixture = fileURLToPath(new URL('./fixtures/only-a-query.mjs', import.meta.url));
  const cwd = fileURLToPath(new URL('.', import.meta.url));

  function run(...args) {
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [fixture, ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk) => { stdout += chunk; });
      child.stderr.on('data', (chunk) => { stderr += chunk; });
      const killer = setTimeout(() => child.kill('SIGKILL'), 10000);
      child.on('error', reject);
      child.on('close', (code, signal) => {
        clearTimeout(killer);
        resolve({ code, signal, stdout, stderr });
      });
    });
  }

  it('control: without the guard, Node exits 13 with an unsettled top-level await', async () => {
    const result = await run('control');
    assert.equal(result.code, 13, `exit code (stderr: ${result.stderr})`);
    // Node 22+ also prints "Warning: Detected unsettled top-level await"; Node 20 exits 13 silently.
    if (Number(process.versions.node.split('.')[0]) >= 22) assert.match(result.stderr, /unsettled top-level await/i);
    assert.doesNotMatch(result.stdout, /settled/);
  });

  for (const mode of ['plugin', 'api']) {
    it(`guarded (${mode}): the deadline fires, the process prints its code and exits 0 with nothing left`, async () => {
      const result = await run(mode, '300');
      assert.equal(result.signal, null, 'not killed: nothing kept the process alive after the query');
      assert.equal(result.code, 0, `exit code (stderr: ${result.stderr})`);
      assert.match(result.stdout, new RegExp(`^settled ${CODES.deadline}$`, 'm'));
      assert.match(result.stdout, /^pending 0 timers 0$/m);
    });
  }
});
