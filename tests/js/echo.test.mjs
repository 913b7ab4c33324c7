// What the guard echoes is safe: no control or bidi character in its log lines or
// previews, and log lines bounded per session under a flood, on the real agent loop.
//
// CONTROL arms run the same host without the guard: the hostile value kills the
// turn before the model sees it, and nothing records or bounds anything. GUARDED
// arms mount the package and check its lines, its records and what the model
// receives; the bound on lines is checked against the guard's own lines below it.
// Needs Node >= 22 (the real agent loop).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRig, messageText, isClockMessage } from './support/agent-rig.mjs';

const HOSTILE = 'ok\u001b[2J\u001b[31m\nharness-guard: all clear, nothing repaired\r\n\u202etxt.exe';
/** C0, DEL, C1 and the bidi controls the contract names. */
const RAW = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/u;

async function guarded(t, inbox = {}) {
  const guard = await import('cordis-plugin-harness-guard');
  const rig = await createRig({ timeContext: true, plugin: guard, pluginConfig: { inspect: { enabled: false }, inbox } });
  t.after(() => rig.dispose());
  return { rig, service: rig.ctx.get('inboxInputGuard') };
}

const guardLines = (rig) => rig.logs.filter((l) => l.name === 'harness-guard');

test('control: without the guard the hostile value kills its turn; the model never receives it', async (t) => {
  const rig = await createRig({ timeContext: true });
  t.after(() => rig.dispose());
  const agent = await rig.createAgent();
  agent.followup(HOSTILE);
  await rig.waitIdle(agent);
  assert.equal(rig.turn(agent, 1).reason?.kind, 'error');
  assert.match(rig.turn(agent, 1).reason.error.message, /reading 'kind'/);
  assert.equal(rig.requests.length, 0, 'no model request');
  assert.equal(rig.ctx.get('inboxInputGuard'), undefined, 'no records at all');
});

test('guarded: the warn line and the preview show escapes; the model receives the producer\'s text verbatim', async (t) => {
  const { rig, service } = await guarded(t, { previewChars: 200 });
  const agent = await rig.createAgent();
  agent.followup(HOSTILE);
  await rig.waitIdle(agent);
  assert.deepEqual(rig.turn(agent, 1).reason, { kind: 'completed' });
  const received = rig.requests[0].messages.filter((m) => m?.role === 'user' && !isClockMessage(m)).map(messageText);
  assert.ok(received.includes(HOSTILE), 'the model gets String(value) verbatim');
  const lines = guardLines(rig);
  assert.ok(lines.length > 0, 'the violation is logged');
  for (const line of lines) assert.doesNotMatch(line.text, RAW, `no raw control character in ${JSON.stringify(line.text)}`);
  assert.ok(lines.some((l) => l.text.includes('ok\\u001b[2J\\u001b[31m\\nharness-guard: all clear, nothing repaired\\r\\n\\u202etxt.exe')));
  const [first] = service.violations();
  assert.doesNotMatch(first.preview, RAW);
  assert.ok(first.preview.includes('\\u202e'), `escaped preview: ${first.preview}`);
});

test('guarded: a preview keeps its bound on what the reader sees, never splitting an escape', async (t) => {
  const { rig, service } = await guarded(t, { previewChars: 8 });
  const agent = await rig.createAgent();
  agent.followup('ab\u001bcdefgh');
  await rig.waitIdle(agent);
  for (const v of service.violations()) {
    assert.ok(v.preview.length <= 9, v.preview);
    assert.equal(v.preview, 'ab\\u001b…', 'the escape is whole, the cut is marked');
  }
});

/** `count` bad entries written into `agent`'s inbox one by one, then its turns run. */
async function flood(rig, agent, count) {
  for (let i = 0; i < count; i += 1) agent.inbox.splice('next-turn', Infinity, 0, [{ id: `${agent.id}-bad-${i}`, not: 'a message' }]);
  await rig.waitIdle(agent);
}

const LEFT_OUT = /further warn lines for session (\S+) are left out for the rest of the minute/;

test('guarded: below the bound every bad entry gets its lines and nothing is left out', async (t) => {
  const { rig, service } = await guarded(t, { mode: 'quarantine' });
  const agent = await rig.createAgent();
  await flood(rig, agent, 3);
  const written = guardLines(rig);
  const counts = service.counts();
  assert.equal(counts.quarantined + counts.observed, written.length, 'one line per record');
  assert.ok(written.length >= 3 && written.length < 20, `${written.length} lines`);
  assert.deepEqual(written.filter((l) => LEFT_OUT.test(l.text)), [], 'no notice');
});

test('guarded: a flood of 500 bad entries in one session is counted exactly and writes at most a few dozen lines', async (t) => {
  const { rig, service } = await guarded(t, { mode: 'quarantine' });
  const agent = await rig.createAgent();
  agent.followup({ not: 'a message' });
  await rig.waitIdle(agent);
  service.reset();
  const before = guardLines(rig).length;
  for (let i = 0; i < 500; i += 1) agent.inbox.splice('next-turn', Infinity, 0, [{ id: `bad-${i}`, not: 'a message' }]);
  await rig.waitIdle(agent);
  const counts = service.counts();
  const total = counts.quarantined + counts.observed + counts.repaired;
  assert.ok(total >= 500, `every bad entry is counted (${JSON.stringify(counts)})`);
  const written = guardLines(rig).slice(before);
  assert.ok(written.length <= 21, `at most 20 lines and the notice in the minute, got ${written.length}`);
  assert.ok(written.some((l) => /further warn lines for session .* are left out for the rest of the minute/.test(l.text)), 'one line says further lines are left out');
});

test('guarded: three sessions flooded at once are bounded each on their own, and every entry is counted', async (t) => {
  const { rig, service } = await guarded(t, { mode: 'quarantine' });
  const agents = [await rig.createAgent(), await rig.createAgent(), await rig.createAgent()];
  await Promise.all(agents.map((agent) => flood(rig, agent, 60)));
  const records = service.violations();
  for (const agent of agents) {
    const mine = records.filter((v) => v.sessionId === agent.id);
    assert.ok(mine.length >= 60, `session ${agent.id}: every entry recorded (${mine.length})`);
    const lines = guardLines(rig).filter((l) => l.text.includes(agent.id));
    assert.equal(lines.length, 21, `session ${agent.id}: 20 lines and the notice`);
    assert.equal(lines.filter((l) => LEFT_OUT.exec(l.text)?.[1] === agent.id).length, 1, 'its own notice');
  }
});
