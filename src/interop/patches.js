// Patching by marker: the wrappers the guard puts on host objects, and the
// records of what each slot held.
//
// Each wrapper is tagged `Symbol.for('harness-guard.patched')` → `{ original,
// owner }`, so that a second install (of this copy or another) wraps nothing,
// and restore goes by marker: cordis' method reads are not identity-stable. The
// records are kept here by target and key, outliving the instance that made
// them: a fresh instance that patches a slot where a faulted one left its
// wrapper re-points that wrapper to itself instead of stacking a second one
// (see supervisor.js). Rust owns each record through a `PatchHandle` (patch.rs)
// whose drop calls `unpatch`.
//
// Why JavaScript: the wrapper is a JavaScript function (it must pass its `this`
// and arguments on unchanged), and a record must outlive the wasm instance that
// made it.

import { hooks, life } from './supervisor.js'

const PATCHED = Symbol.for('harness-guard.patched')
/** Patch records by target, then key. */
const byTarget = new WeakMap()
/** Every patch record in place, of every generation. */
const records = new Set()

/** Whether `method` is a wrapper some harness-guard installed (any copy, any version). */
const isPatched = (method) => {
  try {
    return typeof method === 'function' && typeof method[PATCHED] === 'object' && method[PATCHED] !== null
  } catch {
    return false
  }
}

/**
 * Put the wrapper `make(previous, binding, inherited)` in `target[key]`, marked
 * `{ original, owner }`, and return its record. When this instance's wrapper is
 * there already, or another copy's, return `undefined`. When a wrapper an earlier
 * instance left is there (in the slot, or under another plugin's patch), re-point
 * it to `binding` and return its record instead: a wrapper is never stacked on one
 * of ours. Throws a `TypeError` when the slot holds no function or refuses the wrapper.
 */
export function patchWith(kind, target, key, owner, binding, make) {
  const previous = target[key]
  if (typeof previous !== 'function') throw new TypeError(`${key} is not a function`)
  const known = byTarget.get(target)?.get(key)
  if (known !== undefined) {
    if (known.binding.gen === life.gen) return undefined
    Object.assign(known.binding, binding)
    known.owner = owner
    return known
  }
  if (isPatched(previous)) return undefined
  const own = Reflect.getOwnPropertyDescriptor(target, key)
  const wrapper = make(previous, binding, own === undefined)
  Object.defineProperty(wrapper, PATCHED, { value: Object.freeze({ original: previous, owner: life.K.owner }) })
  const placed = Reflect.defineProperty(target, key, {
    value: wrapper, writable: true, configurable: true, enumerable: own?.enumerable ?? false,
  })
  if (!placed) throw new TypeError(`${key} cannot be replaced`)
  const record = { kind, target: new WeakRef(target), key, wrapper, own, binding, owner }
  let keys = byTarget.get(target)
  if (keys === undefined) byTarget.set(target, keys = new Map())
  keys.set(key, record)
  records.add(record)
  return record
}

/** The binding of the wrapper this guard put in `target[key]`, if one is there. */
export function bindingOf(target, key) {
  return byTarget.get(target)?.get(key)?.binding
}

/**
 * Take a patch off: its wrapper forwards from now on wherever it sits, and the
 * slot gets its previous method back if it still holds the wrapper (a later
 * patch over ours is left alone). Idempotent.
 */
export function unpatch(record) {
  if (!records.delete(record)) return
  record.binding.gen = 0
  const target = record.target.deref()
  if (target === undefined) return
  byTarget.get(target)?.delete(record.key)
  try {
    if (Reflect.getOwnPropertyDescriptor(target, record.key)?.value !== record.wrapper) return
    if (record.own !== undefined) Reflect.defineProperty(target, record.key, record.own)
    else Reflect.deleteProperty(target, record.key)
  } catch {}
}

/** Whether the patched object is still alive. */
export function patchAlive(record) {
  return record.target.deref() !== undefined
}

/** The live targets of `owner`'s `kind` patches that an earlier instance made. */
export function stalePatches(owner, kind) {
  const out = []
  for (const record of records) {
    if (record.owner !== owner || record.kind !== kind || record.binding.gen === life.gen) continue
    const target = record.target.deref()
    if (target === undefined) unpatch(record)
    else out.push(target)
  }
  return out
}

hooks.unpatchOwner = (owner) => {
  for (const record of records) if (record.owner === owner) unpatch(record)
}
hooks.unpatchStale = () => {
  for (const record of records) if (record.binding.gen !== life.gen) unpatch(record)
}
