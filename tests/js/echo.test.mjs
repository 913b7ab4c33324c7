// What the guard echoes is safe: no control or bidi character in its log lines or
// previews, and log lines bounded per session under a flood, on the real agent loop.
//
// CONTROL arms run the plain-JS guard of the same behaviour the benchmark compares
// against, which echoes as the guard did before: the raw value in its preview and
// log line, one line per bad entry. GUARDED arms mount the package and check its
// lines, its records and what the model receives.
// Needs Node >= 22 (the real agent loop).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRig, createUserMessage, messageText, isClockMessage } from './support/agent-rig.mjs';
import { installPlainInboxGuard } from './bench/plain-js-guard.mjs';

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

test('control: a guard of the same behaviour without the escaping echoes the raw value into its preview and log line', async (t) => {
  // The plain-JS guard the benchmark compares against: the same repair, previews as they were.
  const rig = await createRig({ timeContext: true });
  t.after(() => rig.dispose());
  const lines = [];
  const records = [];
  const dispose = installPlainInboxGuard(rig.ctx, {
    previewChars: 200, createUserMessage, warn: (text, violation) => { lines.push(text); records.push(violation); },
  });
  t.after(dispose);
  const agent = await rig.createAgent();
  agent.followup(HOSTILE);
  await rig.waitIdle(agent);
  assert.ok(lines.length > 0, 'the violation is logged');
  assert.ok(lines.some((line) => line.includes('\u202e')), 'the right-to-left override reaches the log line raw');
  assert.ok(records.some((v) => RAW.test(v.preview)), 'raw control characters in the preview');
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

test('control: without the bound, a guard of the same behaviour writes a line for every one of 500 bad entries', async (t) => {
  const rig = await createRig({ timeContext: false });
  t.after(() => rig.dispose());
  const lines = [];
  const dispose = installPlainInboxGuard(rig.ctx, { mode: 'quarantine', createUserMessage, warn: (text) => lines.push(text) });
  t.after(dispose);
  const agent = await rig.createAgent();
  for (let i = 0; i < 500; i += 1) agent.inbox.splice('next-turn', Infinity, 0, [{ id: `bad-${i}`, not: 'a message' }]);
  await rig.waitIdle(agent);
  assert.ok(lines.length >= 500, `one line or more per bad entry: ${lines.length}`);
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
