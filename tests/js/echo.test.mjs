// What the guard echoes is safe: no control or bidi character in its log lines or
// previews, and log lines bounded per session under a flood, on the real agent loop.
//
// CONTROL arms show what reaches a log without the guard's escaping and bound (the
// raw value, one line per bad entry, as a naive echo writes it); GUARDED arms mount
// the package and check its lines, its records and what the model receives.
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

test('control: echoing the value as it is puts raw control characters and a forged line into the log', () => {
  const naive = `warn claimed non-message inbox entry: string “${HOSTILE}” repaired into a user message`;
  assert.match(naive, RAW);
  assert.equal(naive.split('\n').length, 3, 'the value forges lines of its own');
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

test('control: the flood is real: without the guard, 500 bad entries are 500 durable writes a per-entry log would echo', async (t) => {
  const rig = await createRig({ timeContext: false });
  t.after(() => rig.dispose());
  const agent = await rig.createAgent();
  const mark = agent.session.events.length;
  for (let i = 0; i < 500; i += 1) agent.inbox.splice('next-turn', Infinity, 0, [{ id: `bad-${i}`, not: 'a message' }]);
  const writes = agent.session.events.slice(mark).filter((e) => e.type === 'agent/inbox/spliced' && e.data.inserted.length > 0);
  assert.equal(writes.length, 500);
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
