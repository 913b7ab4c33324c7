// Seeded generation of inbox entries for the fuzz suite.
//
// `generateCase(seed, index)` describes one generated value: its family, how
// the public contract classifies it, and `make()`, which builds a fresh
// instance (Proxies, read counters and cycles are never shared between arms).
// Everything is derived from `(seed, index)` alone, so one failing case is
// rebuilt from the two numbers a failure message prints.

import { createUserMessage } from '@deepseek-ai/dsh-llm';

/** mulberry32: a small, fast 32-bit PRNG; returns floats in [0, 1). */
export function mulberry32(seed) {
  let a = seed >>> 0;
  return function next() {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A 32-bit hash of a seed and a few integers (murmur3's finaliser per step). */
export function mix(seed, ...parts) {
  let h = (seed ^ 0x9e3779b9) >>> 0;
  for (const part of parts) {
    h = Math.imul(h ^ (part >>> 0), 0x85ebca6b) >>> 0;
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35) >>> 0;
    h ^= h >>> 16;
  }
  return h >>> 0;
}

/** A seeded source of choices. */
export class Rng {
  constructor(seed) { this.next = mulberry32(seed); }
  /** Integer in [0, n). */
  int(n) { return Math.floor(this.next() * n); }
  /** Integer in [lo, hi]. */
  range(lo, hi) { return lo + this.int(hi - lo + 1); }
  chance(p) { return this.next() < p; }
  pick(list) { return list[this.int(list.length)]; }
  /** Pick a key of `{ key: weight }`. */
  weighted(table) {
    const entries = Object.entries(table);
    let roll = this.next() * entries.reduce((sum, [, w]) => sum + w, 0);
    for (const [key, weight] of entries) {
      roll -= weight;
      if (roll < 0) return key;
    }
    return entries.at(-1)[0];
  }
}

// ---------------------------------------------------------------------------
// Strings

const C0 = Array.from({ length: 32 }, (_, i) => String.fromCharCode(i));
const C1 = Array.from({ length: 32 }, (_, i) => String.fromCharCode(0x80 + i));
const BIDI = ['\u200e', '\u200f', '\u202a', '\u202b', '\u202c', '\u202d', '\u202e', '\u2066', '\u2067', '\u2068', '\u2069'];
const ASTRAL = ['\u{1F600}', '\u{1F4A9}', '\u{10000}', '\u{10FFFF}', '\u{1D11E}', '\u{20000}', '\u{E0001}'];
const LONE = ['\uD800', '\uDBFF', '\uDC00', '\uDFFF'];
const OTHER = ['é', 'ß', '中', '文', '\u0301', '\u00a0', '\u2028', '\u2029', '\ufeff', '\ufffd', '"', '\\', '{', '}', '…'];
const ASCII = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,:;-_/';

/** Control characters and bidi controls the contract says echoes must escape. */
export const ECHO_UNSAFE = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/u;

/** A short string drawn from pools that stress escaping and UTF-16 handling. */
export function randomString(rng, maxLength = 120) {
  const shape = rng.int(10);
  if (shape === 0) return '';
  if (shape === 1) return rng.pick(['{"id":"x","role":"user"}', '[object Object]', 'undefined', 'null', 'NaN', '0', '-0', 'true', ' ', '\n', '\u0000']);
  const length = rng.range(1, maxLength);
  let out = '';
  for (let i = 0; i < length; i++) {
    const pool = rng.int(12);
    if (pool < 5) out += ASCII[rng.int(ASCII.length)];
    else if (pool === 5) out += rng.pick(C0);
    else if (pool === 6) out += rng.pick(C1);
    else if (pool === 7) out += rng.chance(0.5) ? '\u007f' : rng.pick(BIDI);
    else if (pool === 8) out += rng.pick(ASTRAL);
    else if (pool === 9) out += rng.pick(LONE);
    else out += rng.pick(OTHER);
  }
  return out;
}

/** A multi-megabyte string with a few unsafe characters at both ends. */
function hugeString(rng) {
  const megabytes = rng.range(2, 3);
  return `\u0000\u202e${'x'.repeat(megabytes * 1024 * 1024)}${rng.pick(LONE)}END`;
}

// ---------------------------------------------------------------------------
// Messages

/** A well-formed text message as a careful producer writes it. */
function plainMessage(id, text, kind = 'user') {
  return { id, role: 'user', content: [{ type: 'text', text }], source: { kind } };
}

function randomJson(rng, depth) {
  const roll = rng.int(depth <= 0 ? 5 : 8);
  switch (roll) {
    case 0: return randomString(rng, 20);
    case 1: return rng.range(-1000, 1000) / (rng.chance(0.5) ? 1 : 7);
    case 2: return rng.chance(0.5);
    case 3: return null;
    case 4: return rng.pick(['user', 'assistant', 'text', '']);
    case 5: case 6: {
      const out = {};
      const keys = rng.range(0, 4);
      for (let i = 0; i < keys; i++) out[rng.pick(['role', 'content', 'source', 'kind', 'text', 'type', 'data', randomString(rng, 6)])] = randomJson(rng, depth - 1);
      return out;
    }
    default: return Array.from({ length: rng.range(0, 4) }, () => randomJson(rng, depth - 1));
  }
}

/** A nested object that is never a usable message (no valid role/content/source together). */
function nestedObject(rng, id) {
  const out = randomJson(rng, 3);
  const base = out !== null && typeof out === 'object' && !Array.isArray(out) ? out : { data: out };
  base.role = rng.pick(['assistant', 'system', undefined, 7]);
  if (base.role === undefined) delete base.role;
  if (id !== undefined) base.id = id;
  return base;
}

/** A Proxy whose every trap throws. */
function trappingProxy(target = {}) {
  const traps = ['get', 'has', 'ownKeys', 'getOwnPropertyDescriptor', 'getPrototypeOf', 'set', 'defineProperty',
    'deleteProperty', 'isExtensible', 'preventExtensions', 'setPrototypeOf', 'apply', 'construct'];
  return new Proxy(target, Object.fromEntries(traps.map((trap) => [trap, () => { throw new Error(`fuzz trap ${trap}`); }])));
}

function revokedProxy() {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
}

/** `{ a: { a: … } }` nested `depth` deep (built iteratively). */
function deepObject(depth, leaf) {
  let out = leaf;
  for (let i = 0; i < depth; i++) out = { a: out };
  return out;
}

function deepArray(depth) {
  let out = [];
  for (let i = 0; i < depth; i++) out = [out];
  return out;
}

/** An accessor that answers `values[0]`, `values[1]`, … in turn, then starts over. */
function alternating(target, key, values) {
  let reads = 0;
  Object.defineProperty(target, key, {
    enumerable: true,
    configurable: true,
    get() { const value = values[reads % values.length]; reads += 1; return value; },
  });
  return target;
}

// ---------------------------------------------------------------------------
// Cases

/**
 * `expect`, how the contract classifies the value as made:
 * - 'usable': a usable message; reaches the model untouched.
 * - 'scalar': string, finite number, boolean or bigint; repaired (repair) or dropped (quarantine).
 * - 'drop': any other non-message; dropped in repair and quarantine.
 * - 'either': reads of it disagree (a getter or trap answering differently each
 *   time); it may pass as a message or be dropped, but never reach the model as a non-message.
 * - 'shaped': shaped like a usable message but hostile or not JSON (a cycle, a
 *   throwing accessor, a trapping Proxy, a class instance, a bigint or undefined
 *   field). The host refuses it at every public entry; the fuzz arms push it
 *   through the API only (see the message-shaped test for the claim path).
 *
 * `collision`: the key the host's pending-identity check sees when the value
 * is pushed (`String(value.id)` class): 'unique', 'throws', or a shared key
 * ('undefined', '', 'null') of which one batch may hold one.
 * `json`: whether the host's lossless JSON snapshot accepts it (seedable).
 */
const FAMILIES = {
  string: 13,
  number: 8,
  boolean: 3,
  bigint: 3,
  nullish: 2,
  symbol: 1,
  function: 1,
  nested: 7,
  array: 5,
  near: 18,
  usable: 18,
  hostile: 9,
  chameleon: 5,
  shaped: 4,
};

/** Indices with a multi-megabyte string (a few per 10,000: they are slow to copy). */
export function isHugeIndex(index) {
  return index % 2500 === 1249;
}

/** The id a generated usable message carries. */
export function caseId(seed, index, suffix = '') {
  return `fz-${seed}-${index}${suffix}`;
}

/** Describe case `index` of stream `seed`. */
export function generateCase(seed, index) {
  const family = isHugeIndex(index) ? 'huge' : new Rng(mix(seed, index, 1)).weighted(FAMILIES);
  const variantRng = new Rng(mix(seed, index, 2));
  const spec = describe(family, variantRng, seed, index);
  return {
    index,
    family,
    variant: spec.variant,
    expect: spec.expect,
    collision: spec.collision ?? 'unique',
    json: spec.json ?? false,
    hostile: spec.hostile ?? false,
    /** A fresh instance; deterministic. */
    make: () => spec.make(new Rng(mix(seed, index, 3))),
  };
}

function describe(family, rng, seed, index) {
  const id = caseId(seed, index);
  switch (family) {
    case 'huge': {
      const inMessage = rng.chance(0.5);
      return inMessage
        ? { variant: 'huge-text-message', expect: 'usable', json: true, make: (r) => plainMessage(id, hugeString(r)) }
        : { variant: 'huge-string', expect: 'scalar', collision: 'undefined', json: true, make: (r) => hugeString(r) };
    }
    case 'string':
      return { variant: 'string', expect: 'scalar', collision: 'undefined', json: true, make: (r) => randomString(r) };
    case 'number': {
      const variant = rng.pick(['int', 'int', 'float', 'negative', 'large', 'tiny', 'max', '-0', 'NaN', 'Infinity', '-Infinity']);
      const finite = !['NaN', 'Infinity', '-Infinity'].includes(variant);
      return {
        variant: `number:${variant}`,
        expect: finite ? 'scalar' : 'drop',
        collision: 'undefined',
        json: finite && variant !== '-0',
        make: (r) => ({
          int: () => r.range(-1e6, 1e6),
          float: () => r.next() * 1000 - 500,
          negative: () => -r.range(1, 1e9) / 3,
          large: () => r.pick([1e21, 2 ** 53 + 2, 1.7976931348623157e308, -1e300]),
          tiny: () => r.pick([5e-324, 1e-7, -2.2250738585072014e-308]),
          max: () => r.pick([Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER, 0]),
          '-0': () => -0,
          NaN: () => NaN,
          Infinity: () => Infinity,
          '-Infinity': () => -Infinity,
        })[variant](),
      };
    }
    case 'boolean':
      return { variant: 'boolean', expect: 'scalar', collision: 'undefined', json: true, make: (r) => r.chance(0.5) };
    case 'bigint':
      return {
        variant: 'bigint', expect: 'scalar', collision: 'undefined', json: false,
        make: (r) => r.pick([0n, -1n, 2n ** 64n, -(10n ** 30n), 2n ** 200n, BigInt(r.range(-1e9, 1e9))]),
      };
    case 'nullish': {
      const isNull = rng.chance(0.5);
      return { variant: isNull ? 'null' : 'undefined', expect: 'drop', collision: 'throws', json: isNull, make: () => (isNull ? null : undefined) };
    }
    case 'symbol':
      return { variant: 'symbol', expect: 'drop', collision: 'undefined', make: (r) => Symbol(randomString(r, 10)) };
    case 'function':
      return { variant: 'function', expect: 'drop', collision: 'undefined', make: () => function producer() { return 'fn'; } };
    case 'nested': {
      const withId = rng.chance(0.5);
      return { variant: withId ? 'nested-with-id' : 'nested', expect: 'drop', collision: withId ? 'unique' : 'undefined', json: true, make: (r) => nestedObject(r, withId ? id : undefined) };
    }
    case 'array': {
      const variant = rng.pick(['plain', 'frozen', 'frozen-of-messages', 'empty-frozen']);
      return {
        variant: `array:${variant}`, expect: 'drop', collision: 'undefined', json: true,
        make: (r) => ({
          plain: () => Array.from({ length: r.range(0, 5) }, () => randomJson(r, 2)),
          frozen: () => Object.freeze(Array.from({ length: r.range(1, 5) }, () => randomJson(r, 2))),
          'frozen-of-messages': () => Object.freeze([plainMessage(`${id}-inner`, randomString(r, 20))]),
          'empty-frozen': () => Object.freeze([]),
        })[variant](),
      };
    }
    case 'near':
      return nearMessage(rng, id, index);
    case 'usable':
      return usableMessage(rng, id);
    case 'hostile':
      return hostileValue(rng, id);
    case 'chameleon':
      return chameleon(rng, id, index);
    case 'shaped':
      return shapedHostile(rng, id);
    default:
      throw new Error(`unknown family ${family}`);
  }
}

/** A usable message with exactly one field wrong. */
function nearMessage(rng, id, index) {
  const field = rng.pick(['id', 'role', 'content', 'source']);
  const wrongs = {
    id: [['empty', ''], ['missing', undefined], ['number', 1e6 + index], ['null', null], ['object', { id }]],
    role: [['assistant', 'assistant'], ['system', 'system'], ['USER', 'USER'], ['empty', ''], ['missing', undefined], ['number', 1], ['null', null]],
    content: [['string', 'text'], ['object', { type: 'text', text: 'x' }], ['null', null], ['missing', undefined], ['number', 3], ['array-like', { 0: { type: 'text', text: 'x' }, length: 1 }]],
    source: [['missing', undefined], ['null', null], ['string', 'user'], ['no-kind', {}], ['kind-number', { kind: 1 }], ['kind-null', { kind: null }], ['kind-array', { kind: ['user'] }], ['array', []]],
  }[field];
  const [label, wrong] = rng.pick(wrongs);
  const collision = field !== 'id' ? 'unique' : ({ empty: '', missing: 'undefined', null: 'null' })[label] ?? 'unique';
  return {
    variant: `near:${field}:${label}`,
    expect: 'drop',
    collision,
    json: true,
    make: (r) => {
      const message = plainMessage(id, randomString(r, 40));
      const value = wrong !== null && typeof wrong === 'object' ? structuredClone(wrong) : wrong;
      if (label === 'missing') delete message[field];
      else message[field] = value;
      return message;
    },
  };
}

/** A usable message, in the forms producers really send. */
function usableMessage(rng, id) {
  const variant = rng.pick(['plain', 'plain', 'created', 'frozen-content', 'extra-fields', 'multi-block', 'empty-content',
    'odd-kind', 'null-prototype', 'odd-id']);
  return {
    variant: `usable:${variant}`,
    expect: 'usable',
    json: true,
    make: (r) => {
      const text = randomString(r);
      switch (variant) {
        case 'created': {
          // createUserMessage gives a random id; keep ours so arms can be compared.
          const made = createUserMessage({ content: [{ type: 'text', text }], source: { kind: 'user' } });
          return Object.freeze({ ...made, id });
        }
        case 'frozen-content':
          return { ...plainMessage(id, text), content: Object.freeze([Object.freeze({ type: 'text', text })]) };
        case 'extra-fields':
          return { ...plainMessage(id, text), meta: { note: randomString(r, 10), n: r.range(0, 9) }, source: { kind: 'client', rpcId: 'r1', clientTimeZone: 'UTC' } };
        case 'multi-block':
          return { ...plainMessage(id, text), content: [{ type: 'text', text }, { type: 'text', text: randomString(r, 30) }] };
        case 'empty-content':
          return { ...plainMessage(id, text), content: [] };
        case 'odd-kind':
          return plainMessage(id, text, r.pick(['', 'plugin', 'client', randomString(r, 12)]));
        case 'null-prototype':
          return Object.assign(Object.create(null), plainMessage(id, text));
        case 'odd-id':
          return plainMessage(`${id}${r.pick(['\u0000', ' ', '\u{1F600}', '\uD800', '\u202e', '"'])}`, text);
        default:
          return plainMessage(id, text);
      }
    },
  };
}

/** Hostile non-messages (never shaped like a usable message). */
function hostileValue(rng, id) {
  const variant = rng.pick(['trapping-proxy', 'revoked-proxy', 'cycle', 'cyclic-array', 'throwing-getters', 'throwing-conversions',
    'trapping-near-message', 'source-trap', 'deep-object', 'deep-array', 'many-keys']);
  const collision = {
    'trapping-proxy': 'throws', 'revoked-proxy': 'throws', 'cyclic-array': 'undefined', 'throwing-getters': 'throws',
    'trapping-near-message': 'throws', 'deep-object': 'undefined', 'deep-array': 'undefined', 'many-keys': 'undefined',
  }[variant] ?? 'unique';
  return {
    variant: `hostile:${variant}`,
    expect: 'drop',
    collision,
    json: ['deep-object', 'deep-array', 'many-keys'].includes(variant),
    hostile: true,
    make: (r) => {
      switch (variant) {
        case 'trapping-proxy': return trappingProxy();
        case 'revoked-proxy': return revokedProxy();
        case 'cycle': {
          const value = { id, role: 'user', note: 'no content' };
          value.self = value;
          value.source = { kind: 'user', back: value };
          return value;
        }
        case 'cyclic-array': {
          const list = [1, 'two'];
          list.push(list);
          return list;
        }
        case 'throwing-getters':
          return {
            get id() { throw new Error('fuzz id getter'); },
            get role() { throw new Error('fuzz role getter'); },
            get content() { throw new Error('fuzz content getter'); },
            get source() { throw new Error('fuzz source getter'); },
          };
        case 'throwing-conversions':
          return {
            id, role: 'system', content: [],
            toString() { throw new Error('fuzz toString'); },
            valueOf() { throw new Error('fuzz valueOf'); },
            [Symbol.toPrimitive]() { throw new Error('fuzz toPrimitive'); },
            toJSON() { throw new Error('fuzz toJSON'); },
          };
        case 'trapping-near-message':
          return trappingProxy({ id, role: 'user', content: [], source: { kind: 'user' } });
        case 'source-trap':
          return { id, role: 'user', content: [{ type: 'text', text: 'x' }], source: new Proxy({}, { get() { throw new Error('fuzz kind'); } }) };
        case 'deep-object':
          return deepObject(r.range(2000, 20000), { role: 'user' });
        case 'deep-array':
          return deepArray(r.range(2000, 20000));
        default: {
          const out = {};
          for (let i = 0; i < 2000; i++) out[`k${i}`] = i;
          return out;
        }
      }
    },
  };
}

/** Values whose reads disagree: an accessor or a Proxy answering differently each time. */
function chameleon(rng, id, index) {
  const variant = rng.pick(['id', 'role', 'content', 'source', 'kind', 'proxy']);
  return {
    variant: `chameleon:${variant}`,
    expect: 'either',
    collision: 'unique',
    json: true,
    make: (r) => {
      const start = r.int(2);
      const message = plainMessage(id, randomString(r, 20));
      const rotate = (values) => (start ? [...values.slice(1), values[0]] : values);
      switch (variant) {
        case 'id': return alternating(message, 'id', rotate([`${id}-a`, `${id}-b`, 2e9 + index]));
        case 'role': return alternating(message, 'role', rotate(['user', 'assistant']));
        case 'content': return alternating(message, 'content', rotate([[{ type: 'text', text: 'c' }], 'not an array']));
        case 'source': return alternating(message, 'source', rotate([{ kind: 'user' }, undefined]));
        case 'kind': return { ...message, source: alternating({}, 'kind', rotate(['user', 42])) };
        default: {
          let reads = start;
          return new Proxy(message, {
            get(target, key, receiver) {
              reads += 1;
              if (key === 'source' && reads % 3 === 0) return undefined;
              return Reflect.get(target, key, receiver);
            },
          });
        }
      }
    },
  };
}

/**
 * Shaped like a usable message (good id, role, content and source) but hostile
 * or not JSON. `hostile` marks the kinds the contract names (cycles, throwing
 * accessors, trapping Proxies).
 */
function shapedHostile(rng, id) {
  const variant = rng.pick(['cycle-field', 'cycle-in-content', 'throwing-extra-getter', 'proxy-ownkeys-throws',
    'proxy-prototype-throws', 'source-proxy-ownkeys-throws', 'class-instance', 'bigint-field', 'nan-in-content',
    'undefined-field', 'symbol-key', 'function-field']);
  const hostile = ['cycle-field', 'cycle-in-content', 'throwing-extra-getter', 'proxy-ownkeys-throws',
    'proxy-prototype-throws', 'source-proxy-ownkeys-throws'].includes(variant);
  return {
    variant: `shaped:${variant}`,
    expect: 'shaped',
    collision: 'unique',
    json: false,
    hostile,
    make: (r) => {
      const message = plainMessage(id, randomString(r, 20));
      switch (variant) {
        case 'cycle-field': message.self = message; return message;
        case 'cycle-in-content': message.content.push({ type: 'text', text: 'loop', loop: message }); return message;
        case 'throwing-extra-getter':
          return Object.defineProperty(message, 'extra', { enumerable: true, get() { throw new Error('fuzz extra getter'); } });
        case 'proxy-ownkeys-throws': return new Proxy(message, { ownKeys() { throw new Error('fuzz ownKeys'); } });
        case 'proxy-prototype-throws': return new Proxy(message, { getPrototypeOf() { throw new Error('fuzz prototype'); } });
        case 'source-proxy-ownkeys-throws':
          return { ...message, source: new Proxy({ kind: 'user' }, { ownKeys() { throw new Error('fuzz source keys'); } }) };
        case 'class-instance': return Object.assign(new (class InboxNote {})(), message);
        case 'bigint-field': return { ...message, n: 10n };
        case 'nan-in-content': return { ...message, content: [{ type: 'text', text: 'x', score: NaN }] };
        case 'undefined-field': return { ...message, extra: undefined };
        case 'symbol-key': return { ...message, [Symbol('fuzz')]: 1 };
        default: return { ...message, render() { return 'x'; } };
      }
    },
  };
}

// ---------------------------------------------------------------------------
// The contract's own definitions, for the checks

/**
 * Whether `value` is a usable message by the contract (reads that throw make it
 * a non-message). Meant for plain values (what the model received).
 */
export function isUsable(value) {
  try {
    return value !== null && typeof value === 'object'
      && typeof value.id === 'string' && value.id.length > 0
      && value.role === 'user'
      && Array.isArray(value.content)
      && value.source !== null && typeof value.source === 'object'
      && typeof value.source.kind === 'string';
  } catch {
    return false;
  }
}

/** Whether the contract repairs `value` in repair mode. */
export function isRepairable(value) {
  return typeof value === 'string' || typeof value === 'boolean' || typeof value === 'bigint'
    || (typeof value === 'number' && Number.isFinite(value));
}

/** A short, deterministic fingerprint of anything (ids of generated messages kept, others masked). */
export function fingerprint(value) {
  const short = (s) => `${s.length}:${s.slice(0, 24)}|${s.slice(-8)}`;
  try {
    if (typeof value === 'string') return `string:${short(value)}`;
    if (value === null || typeof value !== 'object') return `${typeof value}:${String(value)}`;
    const id = typeof value.id === 'string' && value.id.startsWith('fz-') ? value.id : `<${typeof value.id}>`;
    const text = Array.isArray(value.content)
      ? value.content.map((b) => (typeof b?.text === 'string' ? b.text : typeof b)).join('')
      : `<${typeof value.content}>`;
    return `object:${id}:${String(value.role)}:${typeof value.source?.kind}:${short(text)}`;
  } catch (error) {
    return `unreadable:${error?.message}`;
  }
}
