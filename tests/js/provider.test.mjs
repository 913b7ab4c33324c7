// The `HarnessGuard` host inspect provider, on the real CordisInspectRegistryService.
//
// CONTROL arms show what a model gets without the guard (no such provider);
// GUARDED arms ask it through the registry's own `query('host', …)`, which
// validates the input and the answer against the provider's manifest, exactly
// as `cordis_inspect_query` does for a model.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CODES, registryFor, sleep, track } from './support/inspect-rig.mjs';

/** Text an answer may carry (ids, names, reasons, previews together), in characters. */
const MAX_ANSWER_CHARS = 48000;

const ID = 'HarnessGuard';
const DEADLINE = 60;

/** Ask the provider through the registry, as `agent`. */
function ask(rig, method, input, agent = rig.agent) {
  return rig.svc.query('host', ID, method, input, agent, rig.controller().signal);
}

/** Run one client query of `agent` to its deadline. */
async function expire(rig, agent) {
  const q = track(rig.query({ agent }).promise);
  await sleep(DEADLINE * 3);
  await q.done;
  assert.equal(q.reason?.code, CODES.deadline);
}

describe('the HarnessGuard provider', () => {
  test('control: without the guard the registry lists no HarnessGuard, and asking it fails', async (t) => {
    const rig = await registryFor(t);
    assert.equal(rig.svc.list().some((p) => p.id === ID), false);
    await assert.rejects(ask(rig, 'status', {}));
  });

  test('guarded: listed as a host provider with a description, and removed with the plugin', async (t) => {
    const rig = await registryFor(t);
    const { fiber } = await rig.mountGuard({ inspect: { deadlineMs: DEADLINE } });
    const listed = rig.svc.list().find((p) => p.id === ID);
    assert.equal(listed?.platform, 'host');
    assert.ok(listed.description.length > 40);
    assert.deepEqual(listed.methods.map((m) => m.name), ['status', 'reports', 'violations']);
    await fiber.dispose();
    assert.equal(rig.svc.list().some((p) => p.id === ID), false, 'unregistered on dispose');
  });

  test('guarded: status answers through the host\'s validation with settings and counts', async (t) => {
    const rig = await registryFor(t);
    await rig.mountGuard({ inspect: { deadlineMs: DEADLINE, refusalGraceMs: 10 }, inbox: { mode: 'quarantine' } });
    await expire(rig, rig.agent);
    const status = await ask(rig, 'status', {});
    assert.equal(typeof status.version, 'string');
    assert.equal(status.failed, undefined);
    assert.deepEqual(status.inspect, {
      installed: true, deadlineMs: DEADLINE, refusalGraceMs: 10, inFlight: 0,
      counts: { deadline: 1, refused: 0, unboundAgent: 0, disposed: 0 },
    });
    assert.deepEqual(status.inbox, { installed: true, mode: 'quarantine', counts: { repaired: 0, quarantined: 0, observed: 0 } });
  });

  test('guarded: a session reads its own reports only; another session sees none of them', async (t) => {
    const rig = await registryFor(t);
    await rig.mountGuard({ inspect: { deadlineMs: DEADLINE } });
    const other = Object.freeze({ id: `${rig.agent.id}-other` });
    await expire(rig, rig.agent);
    await expire(rig, rig.agent);
    await expire(rig, other);
    const mine = await ask(rig, 'reports', {});
    assert.equal(mine.reports.length, 2);
    for (const r of mine.reports) {
      assert.equal(r.sessionId, rig.agent.id);
      assert.equal(r.kind, 'deadline');
      assert.equal(r.deadlineMs, DEADLINE);
    }
    const theirs = await ask(rig, 'reports', {}, other);
    assert.equal(theirs.reports.length, 1);
    assert.equal(theirs.reports[0].sessionId, other.id);
    assert.ok(!JSON.stringify(theirs).includes(mine.reports[0].requestId), 'no id of another session');
    const latest = await ask(rig, 'reports', { limit: 1 });
    assert.deepEqual(latest.reports, mine.reports.slice(-1), 'the latest `limit`, oldest first');
    assert.deepEqual(await ask(rig, 'violations', {}), { violations: [] });
  });

  test('guarded: without a limit, reports answers the latest 20, oldest first; a limit of 25 gets 25', async (t) => {
    const rig = await registryFor(t);
    await rig.mountGuard({ inspect: { deadlineMs: DEADLINE } });
    const queries = Array.from({ length: 25 }, () => track(rig.query().promise));
    await Promise.all(queries.map((q) => q.done));
    const all = (await ask(rig, 'reports', { limit: 25 })).reports;
    assert.equal(all.length, 25, 'the session has 25 reports');
    const { reports } = await ask(rig, 'reports', {});
    assert.equal(reports.length, 20, 'the default limit is 20');
    assert.deepEqual(reports.map((r) => r.requestId), all.slice(-20).map((r) => r.requestId), 'the latest 20, oldest first');
  });

  test('guarded: an answer carries at most 48,000 characters of text, the newest records that fit', async (t) => {
    const rig = await registryFor(t);
    const { service } = await rig.mountGuard({ inspect: { deadlineMs: 60000, refusalGraceMs: 0 } });
    const REFUSED = 15;
    for (let i = 0; i < REFUSED; i += 1) {
      const q = rig.query();
      const tracked = track(q.promise);
      // A reason of 4,096 characters (the most a refusal carries), told apart by its head.
      rig.answer(q.requestId, { ok: false, reason: `${i}:${'r'.repeat(4095 - String(i).length)}`, message: 'no' });
      await tracked.done;
      assert.equal(tracked.reason?.code, CODES.refused);
    }
    const textOf = (r) => r.requestId.length + (r.sessionId ?? '').length + r.providerId.length + r.methodName.length + (r.reason ?? '').length;
    const kept = service.reports();
    assert.equal(kept.length, REFUSED, 'the guard keeps all of them');
    assert.ok(kept.reduce((n, r) => n + textOf(r), 0) > MAX_ANSWER_CHARS, 'together they hold more than an answer may carry');
    const { reports } = await ask(rig, 'reports', { limit: 1000 });
    const text = reports.reduce((n, r) => n + textOf(r), 0);
    assert.ok(text <= MAX_ANSWER_CHARS, `${text} characters of text`);
    assert.ok(reports.length >= 10 && reports.length < REFUSED, `as many as fit: ${reports.length}`);
    assert.deepEqual(reports.map((r) => r.requestId), kept.slice(-reports.length).map((r) => r.requestId), 'the newest, oldest first');
    assert.ok(reports.every((r) => r.reason.length === 4096), 'each record whole, none cut to fit');
  });

  test('guarded: a limit outside 1..=1000 is refused naming the field; the schema refuses other keys', async (t) => {
    const rig = await registryFor(t);
    await rig.mountGuard({ inspect: { deadlineMs: DEADLINE } });
    await assert.rejects(ask(rig, 'reports', { limit: 0 }), /limit is 0, expected an integer in 1\.\.=1000/);
    await assert.rejects(ask(rig, 'reports', { limit: 1001 }), /limit is 1001/);
    await assert.rejects(ask(rig, 'reports', { limit: 'all' }), /rejected input/);
    await assert.rejects(ask(rig, 'status', { extra: 1 }), /rejected input/);
  });
});
