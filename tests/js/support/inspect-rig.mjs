// The real Host inspect registry in a real cordis Context, for the inspect half.
//
// Everything here is the production code path: cordis 4 `Context` and the
// published `CordisInspectRegistryService` from dsh-cordis-host-runner,
// mounted with `ctx.plugin`, with a client provider mirrored through
// `syncClientManifest`. No page is connected: a test that wants one answers
// through the registry's own `resolveClientQuery`, as the gateway does.
//
// The guard package is loaded lazily (`loadGuard`), so control arms never
// depend on it.

import { getEventListeners } from 'node:events';
import { setImmediate as nextMacrotask, setTimeout as sleep } from 'node:timers/promises';
import { Context } from '@deepseek-ai/cordis';
import { CordisInspectRegistryService } from '@deepseek-ai/dsh-cordis-host-runner';

export { CordisInspectRegistryService, Context, sleep };

export const GUARD_PACKAGE = 'cordis-plugin-harness-guard';
/** Marker every guard wrapper carries: `{ original, owner }`. */
export const PATCHED = Symbol.for('harness-guard.patched');
/** Where a cordis service proxy keeps the raw instance. */
export const CORDIS_ORIGINAL = Symbol.for('cordis.original');

export const CODES = Object.freeze({
  deadline: 'INSPECT_CLIENT_DEADLINE',
  refused: 'INSPECT_CLIENT_REFUSED',
  disposed: 'INSPECT_CLIENT_GUARD_DISPOSED',
});

/** The mirrored client provider no page serves. */
export const PROVIDER = 'Theme';
export const METHOD = 'listTokens';
export const OUTPUT_SCHEMA = Object.freeze({
  type: 'object',
  properties: { tokens: { type: 'array', items: { type: 'string' } }, count: { type: 'number' } },
  required: ['tokens', 'count'],
});
export const MANIFEST = Object.freeze([{
  id: PROVIDER,
  description: 'Design tokens of the page theme',
  methods: [{
    name: METHOD,
    description: 'List the theme tokens',
    inputSchema: { type: 'object', properties: { prefix: { type: 'string' } } },
    outputSchema: OUTPUT_SCHEMA,
  }],
}]);
/** A page answer that passes output validation. */
export const VALID_DATA = Object.freeze({ tokens: ['--fg', '--bg'], count: 2 });
/** A page answer that fails it (`count` is a string). */
export const INVALID_DATA = Object.freeze({ tokens: ['--fg'], count: 'one' });

/** The requesting agent (the registry reads `agent.id`). */
export const AGENT = Object.freeze({ id: 'agent-under-test' });
/** Rigs made so far: each gets an agent of its own, as each test is its own session. */
let rigs = 0;

/** A host provider for the `platform: "host"` arms. */
export const HOST_PROVIDER = 'Clock';
export const HOST_METHOD = 'now';
export const HOST_MANIFEST = Object.freeze({
  id: HOST_PROVIDER,
  description: 'Host clock',
  methods: [{
    name: HOST_METHOD,
    description: 'Read the clock',
    inputSchema: { type: 'object', properties: { delayMs: { type: 'number' }, mode: { type: 'string' } } },
    outputSchema: { type: 'object', properties: { t: { type: 'number' } }, required: ['t'] },
  }],
});

/** The contract's expiry message, word for word. */
export function deadlineMessage(provider, method, deadlineMs) {
  return `Client inspect query ${provider}.${method} got no answer from any page within ${deadlineMs}ms. `
    + 'Client Inspect Providers only run inside a live browser page, so a session with no page open — '
    + 'a subagent, a teammate, a headless or ACP run — has nobody to answer it. '
    + 'Do not retry platform:"client" queries here: read the source, or use a platform:"host" provider '
    + 'from cordis_inspect_list instead.';
}

/** The raw object under a cordis proxy, read without the guard package. */
export function rawOf(value) {
  return value?.[CORDIS_ORIGINAL] ?? value;
}

let guardModules;
/** `{ plugin, api }`: the package's plugin module and its `/guard` entry point. */
export function loadGuard() {
  guardModules ??= Promise.all([import(GUARD_PACKAGE), import(`${GUARD_PACKAGE}/guard`)])
    .then(([plugin, api]) => ({ plugin, api }));
  return guardModules;
}

/**
 * A real registry in a fresh Context. Records every `cordis/inspect-query`
 * request, every `cordis/inspect-query-resolved` id, and every log line at
 * warn level or above.
 */
export async function createRegistry({ manifest = MANIFEST, hostProvider = false } = {}) {
  const ctx = new Context();
  const logs = [];
  ctx.logger.exporter({
    levels: { default: 3 },
    export: (message) => logs.push({ type: message.type, name: message.name, text: message.args.map(String).join(' ') }),
  });
  const requests = [];
  const resolved = [];
  ctx.on('cordis/inspect-query', (request) => requests.push(request));
  ctx.on('cordis/inspect-query-resolved', (event) => resolved.push(event.requestId));
  const fiber = ctx.plugin(CordisInspectRegistryService);
  await fiber;
  const svc = ctx.get('cordisInspect');
  svc.syncClientManifest(manifest);
  const controllers = [];
  const guardFibers = [];
  const disposers = [];
  const hostCalls = [];
  if (hostProvider) {
    svc.register({
      manifest: HOST_MANIFEST,
      async query(method, input, { signal }) {
        hostCalls.push({ method, input });
        if (input?.delayMs) await sleep(input.delayMs);
        if (input?.mode === 'throw') throw new Error('host provider failed');
        if (input?.mode === 'invalid') return { t: 'not a number' };
        signal.throwIfAborted();
        return { t: 42 };
      },
    });
  }
  const rig = {
    /** The agent (session) this rig's queries ask for: its own, so no two tests share a session. */
    agent: Object.freeze({ id: `agent-under-test-${++rigs}` }),
    ctx,
    fiber,
    /** A fresh proxy read, as a consumer makes it. */
    get svc() { return ctx.get('cordisInspect'); },
    raw: rawOf(svc),
    requests,
    resolved,
    logs,
    hostCalls,
    /** Id of the most recent client request the registry announced. */
    get lastRequestId() { return requests.at(-1)?.requestId; },
    /** How many `cordis/inspect-query-resolved` events named `requestId`. */
    resolvedCount(requestId) { return resolved.filter((id) => id === requestId).length; },
    /** A caller's AbortController, aborted when the rig is disposed. */
    controller() {
      const controller = new AbortController();
      controllers.push(controller);
      return controller;
    },
    /**
     * Start a query through a consumer's read (`via`, default a fresh
     * `ctx.get('cordisInspect')`). Returns `{ promise, requestId, signal, controller }`;
     * `requestId` is the id the registry announced during the call, if any.
     */
    query({ platform = 'client', provider = PROVIDER, method = METHOD, input = {}, agent = rig.agent, signal, via } = {}) {
      const controller = signal === undefined ? rig.controller() : undefined;
      const used = signal === undefined ? controller.signal : signal;
      const before = requests.length;
      const promise = (via ?? rig.svc).query(platform, provider, method, input, agent, used === null ? undefined : used);
      const requestId = requests.length > before ? requests.at(-1).requestId : undefined;
      return { promise, requestId, signal: used, controller };
    },
    /** A page answer through the registry's own entry point; an explicit `agent` (even `undefined`) is passed as is. */
    answer(requestId, resolution, ...agent) {
      return rig.svc.resolveClientQuery(agent.length === 0 ? rig.agent : agent[0], requestId, resolution);
    },
    /** Mount the guard plugin here; returns `{ fiber, service }`. */
    async mountGuard(config) {
      const { plugin } = await loadGuard();
      const guardFiber = arguments.length === 0 ? ctx.plugin(plugin) : ctx.plugin(plugin, config);
      guardFibers.push(guardFiber);
      await guardFiber;
      return { fiber: guardFiber, service: ctx.get('inspectClientGuard') };
    },
    /** Install through the programmatic API; the disposer also runs at clean-up. */
    async install(options) {
      const { api } = await loadGuard();
      const dispose = api.installInspectClientGuard(rig.svc, options);
      disposers.push(dispose);
      return dispose;
    },
    async dispose() {
      for (const dispose of disposers.splice(0).reverse()) dispose();
      for (const guardFiber of guardFibers.splice(0).reverse()) await guardFiber.dispose();
      for (const controller of controllers.splice(0)) controller.abort();
      await fiber.dispose();
    },
  };
  return rig;
}

/** A registry disposed after the test. */
export async function registryFor(t, options) {
  const rig = await createRegistry(options);
  t.after(() => rig.dispose());
  return rig;
}

/**
 * Follow a promise without awaiting it: `{ status, value, reason, settlements, done }`.
 * Attaching handlers also keeps a later rejection from being unhandled.
 */
export function track(promise) {
  const tracked = { status: 'pending', value: undefined, reason: undefined, settlements: 0 };
  tracked.done = Promise.resolve(promise).then(
    (value) => { tracked.settlements += 1; tracked.status = 'fulfilled'; tracked.value = value; return tracked; },
    (reason) => { tracked.settlements += 1; tracked.status = 'rejected'; tracked.reason = reason; return tracked; },
  );
  return tracked;
}

/**
 * Wait for a tracked promise at most `ms`; returns `'settled'` or `'hung'`.
 * The bounding timer is cleared, so it never shows up in a timer count.
 */
export async function settleWithin(tracked, ms) {
  let timer;
  const bound = new Promise((resolve) => { timer = setTimeout(resolve, ms, 'hung'); });
  try {
    return await Promise.race([tracked.done.then(() => 'settled'), bound]);
  } finally {
    clearTimeout(timer);
  }
}

/** How a call ends: `{ mode: 'throw' | 'resolve' | 'reject', value?, error? }`. */
export async function outcome(call) {
  let promise;
  try {
    promise = call();
  } catch (error) {
    return { mode: 'throw', error };
  }
  try {
    return { mode: 'resolve', value: await promise };
  } catch (error) {
    return { mode: 'reject', error };
  }
}

/** Let queued callbacks, microtasks and due immediates run. */
export async function flush() {
  await nextMacrotask();
  await nextMacrotask();
}

/** Listeners on a caller's AbortSignal. */
export function abortListeners(signal) {
  return getEventListeners(signal, 'abort').length;
}

/** Ref'd timers keeping this process alive. */
export function activeTimeouts() {
  return process.getActiveResourcesInfo().filter((name) => name === 'Timeout').length;
}

/** Every own property of the registry instance that holds a function. */
export function ownMethods(raw) {
  return Object.getOwnPropertyNames(raw).filter((key) => typeof raw[key] === 'function');
}

/**
 * Run `body` while this test, not node:test, handles `uncaughtException`:
 * returns the errors Node reported. node:test's own handlers are put back after.
 */
export async function catchingUncaught(body) {
  const saved = process.rawListeners('uncaughtException');
  const caught = [];
  const handler = (error) => caught.push(error);
  process.removeAllListeners('uncaughtException');
  process.on('uncaughtException', handler);
  try {
    await body(caught);
    await flush();
  } finally {
    process.removeListener('uncaughtException', handler);
    for (const listener of saved) process.on('uncaughtException', listener);
  }
  return caught;
}

/** Capture `process.emitWarning` output while `body` runs. */
export async function capturingWarnings(body) {
  const warnings = [];
  const handler = (warning) => warnings.push(warning);
  const saved = process.rawListeners('warning');
  process.removeAllListeners('warning');
  process.on('warning', handler);
  try {
    await body(warnings);
    await flush();
  } finally {
    process.removeListener('warning', handler);
    for (const listener of saved) process.on('warning', listener);
  }
  return warnings;
}
