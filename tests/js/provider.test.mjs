// The `HarnessGuard` host inspect provider, on the real CordisInspectRegistryService.
//
// CONTROL arms show what a model gets without the guard (no such provider);
// GUARDED arms ask it through the registry's own `query('host', …)`, which
// validates the input and the answer against the provider's manifest, exactly
// as `cordis_inspect_query` does for a model.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CODES, registryFor, sleep, track } from './support/inspect-rig.mjs';

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

  test('guarded: a limit outside 1..=1000 is refused naming the field; the schema refuses other keys', async (t) => {
    const rig = await registryFor(t);
    await rig.mountGuard({ inspect: { deadlineMs: DEADLINE } });
    await assert.rejects(ask(rig, 'reports', { limit: 0 }), /limit is 0, expected an integer in 1\.\.=1000/);
    await assert.rejects(ask(rig, 'reports', { limit: 1001 }), /limit is 1001/);
    await assert.rejects(ask(rig, 'reports', { limit: 'all' }), /rejected input/);
    await assert.rejects(ask(rig, 'status', { extra: 1 }), /rejected input/);
  });
});
