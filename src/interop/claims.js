// The claim wrapper: every agent's `inbox.claim`, and the one way a claimed
// batch reaches the guard.
//
// The host's own claim (`Inbox.prototype.claim`, inherited) returns the entries
// of its live lists: those its splice put there are the durable log's plain
// frozen snapshots, noted by the observer with the message code Rust handed
// over (shapes.js). When every entry is the log's own (`loggedPrefix`: one
// look-up each, no field read), the batch goes back untouched and never enters
// wasm; it is kept, with its length, on the wrapper's binding, so that the
// pre-step entry knows it was judged (`vouched`). Anything else has its shape
// codes read (`codesOf`) and enters wasm once (`life.claim`), with numbers, the
// batch and the session id: Rust decides, renders, repairs and drops by index
// (values.js, edits.js), and says whether to claim again (it emptied a turn's
// batch while more turns wait).
//
// Why JavaScript: the host's clean batch, nearly every batch, is judged with no
// crossing at all, and the wrapper passes the caller's `this` and arguments on
// unchanged.

import { rethrow } from './deferred.js'
import { bindingOf, patchWith } from './patches.js'
import { allLogged, codesOf, loggedPrefix } from './shapes.js'
import { fail, left, life } from './supervisor.js'
import { up } from './trampolines.js'
import { isArray } from './values.js'

/**
 * Wrap `inbox.claim` for the guard whose claim token is `token`. After a fault
 * the host's batch goes back as claimed.
 */
export function patchClaim(inbox, owner, token) {
  const binding = { gen: life.gen, token, batch: undefined, length: -1 }
  return patchWith('claim', inbox, 'claim', owner, binding, (previous, b, inherited) => {
    // An inherited method is the host's own `Inbox.prototype.claim`: its entries
    // were written through the host's splice, which stores plain copies.
    if (!inherited) {
      return function harnessGuardClaim(...args) {
        return claimWith(b, previous, this, args, true)
      }
    }
    // The loop calls `claim(target, turn)`; a call with more arguments, or a
    // guard that is down, takes the general path, which passes them all on.
    return function harnessGuardClaim(target, turn) {
      if (b.gen !== life.gen || life.down || arguments.length > 2) {
        return claimWith(b, previous, this, Array.from(arguments), false)
      }
      let split = -1
      try {
        const n = this.nextStep.length
        if (typeof n === 'number') split = n
      } catch {}
      const batch = previous.call(this, target, turn)
      const known = loggedPrefix(batch)
      if (known >= 0 && known === batch.length) {
        b.batch = batch
        b.length = known
        return batch
      }
      return judge(b, previous, this, [target, turn], batch, split, false, codesOf(batch, known), known)
    }
  })
}

/** A claim the fast path does not take: the guard is down, or the claim is not the host's own (`foreign`). */
function claimWith(b, previous, self, args, foreign) {
  if (!up(b.gen)) return Reflect.apply(previous, self, args)
  const split = nextStepLength(self)
  const batch = Reflect.apply(previous, self, args)
  return judge(b, previous, self, args, batch, split, foreign, codesOf(batch))
}

/**
 * A batch the guard must see, with its codes (`codesOf`): Rust sanitizes it in
 * place, and the wrapper claims again while Rust says so. A clean batch of the
 * host's own claim whose entries the durable log wrote, and anything that is not
 * an array, goes back as it is; `foreign` (another plugin's claim), or a
 * message-shaped entry the log did not write, has Rust judge message-shaped
 * entries by their plain copies. The first `known` entries are the log's own.
 */
function judge(b, previous, self, args, batch, split, foreign, codes, known = 0) {
  for (;;) {
    if (codes === null && isArray(batch) !== true) return batch
    // A message-shaped entry the durable log did not write: the batch is judged as another plugin's is.
    const deep = foreign || !allLogged(batch, codes, known)
    if (codes === undefined && !deep) {
      b.batch = batch
      b.length = batch.length
      return batch
    }
    const again = enterClaim(b, self, batch, split, codes, deep, args[0] === life.K.nextTurn)
    if (up(b.gen)) {
      b.batch = batch
      b.length = sizeOf(batch)
    }
    if (!again) return batch
    split = nextStepLength(self)
    batch = Reflect.apply(previous, self, args)
    codes = codesOf(batch)
    known = 0
  }
}

/** `list.length`, or -1 when it cannot be read. */
function sizeOf(list) {
  try {
    const n = list.length
    return typeof n === 'number' ? n : -1
  } catch {
    return -1
  }
}

/**
 * The inbox's `nextStep` length before a claim (where next-step entries end in
 * the batch), or -1. Read by name, the host's property, not by a key handed
 * over: a read by a computed key through the host's getter measured several
 * times slower on the per-claim path.
 */
function nextStepLength(inbox) {
  try {
    return sizeOf(inbox.nextStep)
  } catch {
    return -1
  }
}

/** The inbox's `nextTurn` length after a claim, or -1. */
function nextTurnLength(inbox) {
  try {
    return sizeOf(inbox.nextTurn)
  } catch {
    return -1
  }
}

/** An inbox's session id, or `undefined`. */
function sessionIdOf(inbox) {
  try {
    const id = inbox.session?.id
    return typeof id === 'string' ? id : undefined
  } catch {
    return undefined
  }
}

const NO_CODES = new Uint32Array(0)

/**
 * Enter the current instance's claim entry: `(token, batch, split, nextTurn,
 * codes, flags, session)`, numbers and one string only (the flags are Rust's,
 * `K.inboxFlags`). Returns whether to claim again; on a fault the batch goes back
 * as claimed.
 */
function enterClaim(b, inbox, batch, split, codes, foreign, forTurn) {
  if (!up(b.gen)) return false
  const F = life.K.inboxFlags
  const flags = (foreign ? F.foreign : 0) | (forTurn ? F.forTurn : 0)
    | (codes === null ? F.unread : 0) | (codes === undefined ? F.clean : 0)
  let again = false
  life.depth += 1
  try {
    again = life.claim(b.token, batch, split, nextTurnLength(inbox), codes ?? NO_CODES, flags, sessionIdOf(inbox))
  } catch (error) {
    fail('claim', error)
    return false
  } finally {
    left()
  }
  rethrow()
  return again
}

/**
 * Whether `list` is the batch the claim wrapper on `inbox` last returned, at
 * the length it had then: its entries were judged already, so the pre-step
 * entry need not judge their plain copies again.
 */
export function vouched(inbox, list) {
  try {
    const b = bindingOf(inbox, 'claim')
    return b !== undefined && b.batch === list && b.length === list.length
  } catch {
    return false
  }
}
