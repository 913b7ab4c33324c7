// Trampolines: the functions handed to the host (service methods, listeners,
// effects, the provider and the command), each of which enters the current
// instance with the token Rust gave it.
//
// Every trampoline enters wasm through one of a few ways the instance handed
// over when it started (`configure`), so nothing is made per call or per patch.
// Each belongs to the instance (generation) that made it: once that instance
// faulted, or was replaced, it forwards to what it replaced, or answers a copy
// of a fallback Rust made in advance, and never enters wasm again (see
// supervisor.js). Every entry counts itself in `life.depth` and leaves through
// `left()`.
//
// Listeners are arrow functions: none needs its `this`, and handed to cordis an
// arrow costs the host's dispatch less than a `function` (docs/ARCHITECTURE.md,
// "What keeps it cheap").
//
// Why JavaScript: a wasm-bindgen closure does not see `this`, a trampoline must
// work after its instance is gone, and the fallbacks must be answered without
// entering wasm.

import { forgetRaised, rethrow } from './deferred.js'
import { hasMessageCode, noteLogged, setLayout, shapes } from './shapes.js'
import { fail, faultFacts, left, life } from './supervisor.js'

/**
 * A new instance: its constants (field names, event names, texts and the
 * shape-code layout), and the ways every trampoline of this generation enters
 * it: its wasm exports, which take numbers and host values only and so are
 * called as they are, with no glue between (a recovery's fresh instance hands
 * over its own), and the two inbox entries, closures whose glue converts a
 * list's shape codes and two strings: the claim's and the observer's.
 */
export function configure(constants, shape, exports, claim, observed) {
  life.gen += 1
  life.K = interned({ ...constants, shape })
  life.dispatch = exports.dispatch
  life.claim = claim
  life.observed = observed
  life.begin = exports.begin
  life.settle = exports.settle
  life.tick = exports.tick
  setLayout(life.K.shape, life.K.messageCode)
}

/**
 * `value` with each string in it, in its plain objects and arrays too, replaced
 * by the engine's internalized copy (what a property key is). A string made in
 * wasm is a fresh copy: compared on every call with a host's literal (`'user'`,
 * `'client'`, an event name) or read as a key, it is compared by content, where
 * an internalized one is compared by reference.
 */
function interned(value) {
  if (typeof value === 'string') return Object.keys({ [value]: 0 })[0]
  if (Array.isArray(value)) return value.map(interned)
  if (value === null || typeof value !== 'object') return value
  const out = {}
  for (const key of Object.keys(value)) out[key] = interned(value[key])
  return out
}

/** Whether a trampoline of generation `gen` may enter wasm now. */
export const up = (gen) => gen === life.gen && !life.down

life.standDown.push(forgetRaised)

/**
 * Enter the current instance with `token`, for a trampoline of generation `gen`.
 * When it may not (stood down, or made by an instance since replaced), or on a
 * fault, return `fallback()`; on a raise, throw what Rust handed over.
 */
export function enter(point, fallback, token, gen, previous, self, args) {
  if (!up(gen)) return fallback()
  let result
  life.depth += 1
  try {
    result = life.dispatch(token, previous, self, args)
  } catch (error) {
    fail(point, error)
    return fallback()
  } finally {
    left()
  }
  rethrow()
  return result
}

/**
 * A fresh copy of a fallback answer Rust made (a caller may change what it
 * gets). An answer that says the guard failed also says what the supervisor
 * knows; once it gave up, the command's answer says so.
 */
function copy(value) {
  let out
  try {
    out = structuredClone(value)
  } catch {
    return undefined
  }
  if (out === null || typeof out !== 'object') return out
  if (Object.hasOwn(out, life.K.failedKey)) {
    Object.assign(out, faultFacts())
    if (life.gaveUp) out[life.K.failedKey] = `${life.K.failedLine}; ${life.K.gaveUpLine}`
  } else if (life.gaveUp && typeof out.text === 'string') {
    // The command's answer, in words.
    out.text = `${life.K.failedLine}; ${life.K.gaveUpLine}`
  }
  return out
}

/**
 * A method or callback served by `token` at `point`. When it may not enter wasm
 * it answers with a copy of `fallback` (a value, or a table of values by first
 * argument when `byFirst`), or forwards to `previous` when there is one.
 */
export function makeMethod(token, point, previous, fallback, byFirst) {
  const gen = life.gen
  return function harnessGuardMethod(...args) {
    const otherwise = () => {
      if (typeof previous === 'function') return Reflect.apply(previous, this, args)
      return copy(byFirst ? fallback?.[args[0]] : fallback)
    }
    return enter(point, otherwise, token, gen, previous, this, args)
  }
}

const noop = () => undefined

/** A listener served by `token` at `point`: it never throws, and answers nothing. */
export function makeListener(token, point) {
  const gen = life.gen
  return (...args) => {
    enter(point, noop, token, gen, undefined, undefined, args)
  }
}

/** The `agent/pre-step` entry: the guard sees the event, then the chain goes on from here. */
export function makePreStep(token) {
  const gen = life.gen
  return (event, next) => {
    enter('preStep', noop, token, gen, undefined, undefined, [event])
    return typeof next === 'function' ? next() : undefined
  }
}

/**
 * The `session/event` observer: only inbox writes that inserted something other
 * than entries with the message code reach the guard (a claim's own splices are
 * deletions). They enter wasm once, through the observer's entry, with the
 * inserted list, its codes and where it went, read here.
 */
export function makeInsertObserver(token) {
  const gen = life.gen
  const { splicedEvent, inserted: key } = life.K
  return (session, event) => {
    if (!up(gen)) return
    let data
    let list
    try {
      if (event?.type !== splicedEvent) return
      data = event.data
      list = data?.[key]
      if (!Array.isArray(list)) return
      // A claim's own writes are deletions: nothing inserted, so nothing is read.
      // Each usable message is noted as the log's own (see `noteLogged`).
      let clean = true
      for (let i = 0; i < list.length; i++) {
        const entry = list[i]
        if (hasMessageCode(entry)) noteLogged(entry)
        else clean = false
      }
      if (clean) return
    } catch {
      // A list that cannot be read through is coded defensively below.
    }
    if (list !== undefined) enterObserved(token, session, event, data, list, shapes(list))
  }
}

/** `object[key]`, or `undefined` when reading it throws. */
function read(object, key) {
  try {
    return object?.[key]
  } catch {
    return undefined
  }
}

/**
 * Enter the current instance's observer entry: `(token, list, start, seq, codes,
 * flags, session, target)`, numbers and two strings only (the flags are Rust's,
 * `K.inboxFlags`; `seq` counts when `flags` says it is a number).
 */
function enterObserved(token, session, event, data, list, codes) {
  const F = life.K.inboxFlags
  const start = read(data, 'start')
  const seq = read(event, 'seq')
  const target = read(data, 'target')
  const id = read(session, 'id')
  const flags = typeof seq === 'number' ? F.seq : 0
  life.depth += 1
  try {
    life.observed(token, list, typeof start === 'number' ? start : 0, typeof seq === 'number' ? seq : 0,
      codes, flags, typeof id === 'string' ? id : undefined, typeof target === 'string' ? target : undefined)
  } catch (error) {
    fail('sessionEvent', error)
    return
  } finally {
    left()
  }
  rethrow()
}
