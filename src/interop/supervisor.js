// The guard's life across WebAssembly instances: which instance is current,
// whether the guard stood down, the mounts it must apply again, and recovery.
//
// A fault of the guard (a trap, an exception out of its code) stands it down
// in JavaScript at once: every trampoline of the faulted instance forwards from
// then on, and no call enters that instance again. The instance is replaced by
// a fresh one of the same compiled module (wasm-bindgen's reset), which holds
// nothing but the backoff timer of the recovery (a gloo `Timeout`, owned by its
// runtime). When that fires, or a new mount arrives, every live mount is
// applied again on the fresh instance: the faulted instance's registrations
// with cordis and the host are disposed (they are held here, per mount), its
// patches are adopted by the fresh installs (re-pointed, never stacked), and
// the guard is up. Whether to try again, and after how long, is Rust's rule
// (`recoveryPlan`); this file only keeps the facts it needs.
//
// Calls into wasm nest: cordis runs an effect's body inside the `ctx.effect`
// that `apply` makes, the host's splice emits a `session/event` the observer
// takes while the pre-step entry runs. Every entry from JavaScript counts itself
// in `life.depth` and calls `left()` on its way out. A fault below the top level
// stands the guard down and leaves the replacement pending: the code of the
// faulted instance still on the stack finishes against its own memory, and the
// outermost exit (depth 0) replaces the instance, plans the recovery and says
// so. The recovery timer's callback is itself a wasm frame, so it only queues
// the recovery, which runs once that frame is gone.
//
// A mount record is what survives an instance: `{ kind, ctx, config, host,
// logger, held, gen, effect }` for a plugin mount (`kind: 'plugin'`), or `{ kind:
// 'inspect', registry, config, host, logger, held, gen }` for a programmatic
// install (`config`: its options).

/** What every part of the boundary reads: the current instance and the guard's state. */
export const life = {
  /** Generation of the current instance: bumped by `configure` for each one. */
  gen: 0,
  /** Stood down: nothing enters wasm through a trampoline until a recovery. */
  down: false,
  /** Recovered too often: down until the process restarts. */
  gaveUp: false,
  /** Recoveries so far in this process. */
  recoveries: 0,
  /** Monotonic times of the recoveries (the policy counts those in its window). */
  recent: [],
  /** `{ point, at }` of the last fault. */
  lastFault: undefined,
  /**
   * The ways into the current instance (set by `configure`): a trampoline's call,
   * a claimed batch that needs the guard and an inbox write the observer found
   * (closures), and a client query's flight begun, settled first, and ended by
   * the deadline timer (the instance's exports).
   */
  dispatch: undefined,
  claim: undefined,
  observed: undefined,
  begin: undefined,
  settle: undefined,
  tick: undefined,
  /** The constants of the current instance (set by `configure`). */
  K: undefined,
  /** How many calls into wasm are on the stack now (see `left`). */
  depth: 0,
  /**
   * What a fault undoes at once, without entering wasm: each part of the boundary
   * adds its own (flights.js ends every flight and clears the faulted instance's
   * timers; trampolines.js forgets what the faulted instance raised).
   */
  standDown: [],
  /** Set by deferred.js: what waits for the guard to leave wasm (queued lines and reports). */
  atExit: () => {},
}

/** Longer than the policy's window (src/recovery.rs): recoveries older than this are forgotten. */
const RECENT_MS = 3_600_000

/** The plugin module's `host.state`: `{ wasm }`, the glue's exports. */
let shim
/** Live mount records. */
const mounts = new Set()
/** Records opened by the `apply` running now (undone if it faults). */
let opening
/** The recovery policy's clock: monotonic ms (a test of the fault build may move it on). */
let skew = 0
const now = () => performance.now() + skew

/** Move the recovery policy's clock on by `ms` (the fault-injection build's `skewClock`). */
export function skewClock(ms) {
  skew += ms
}

/** A recovery timer waits in the current instance (it must fire before a reset). */
let recoveryArmed = false
/** The current standby instance faulted while its recovery timer waited. */
let standbyFaulted = false
/** The current instance faulted: replace it at the outermost exit from wasm. */
let replaceDue = false
/** The fault to say once the instance is replaced: `{ point, error, applying }`. */
let unsaid
/** Faults so far (a mount fails when its `apply` saw one, at any depth). */
let faults = 0

/**
 * Leave a call into wasm (every entry's `finally`, after counting itself in
 * `life.depth`). The outermost exit replaces a faulted instance, then flushes
 * what waited for the guard to leave wasm.
 */
export function left() {
  life.depth -= 1
  if (life.depth !== 0) return
  if (replaceDue) replaceFaulted()
  life.atExit()
}

/** Take the plugin module's state: it enters the guard through `state.enter`. */
export function bindShim(state) {
  shim = state
  state.enter = enter
  state.life = life
}

/** A `WebAssembly.RuntimeError` (a trap) or a `RangeError` (wasm stack overflow). */
const isTrap = (error) => error instanceof WebAssembly.RuntimeError || error instanceof RangeError

/**
 * Enter the guard from the plugin module at `point` (`apply`: a mount or an
 * install; `config`: validation only). A mount while the guard is down recovers
 * first, or refuses when the guard gave up. A trap stands the guard down and
 * fails the call.
 */
function enter(point, call, logger) {
  // A recovery replaces the instance: only with no wasm frame of the guard beneath.
  if (point === 'apply' && life.down && life.depth === 0) recover(logger)
  if (point === 'apply' && life.down) throw stoodDown(life.gaveUp ? life.K?.refusalMessage : undefined)
  const outer = opening
  opening = point === 'apply' ? [] : outer
  const faultsBefore = faults
  let failed
  life.depth += 1
  try {
    const value = call()
    if (point !== 'apply' || faults === faultsBefore) return value
    // A fault below this call (in an effect cordis ran inside `apply`) fails the mount too.
    failed = failMount(undefined, logger)
  } catch (error) {
    if (point === 'apply' && (isTrap(error) || faults !== faultsBefore)) {
      failed = failMount(error, logger)
    } else if (!isTrap(error)) {
      throw error
    } else {
      fail(point, error, logger)
      failed = stoodDown(`harness-guard stood down after an internal fault in ${point} (${describe(error)})`)
    }
  } finally {
    opening = outer
    left()
  }
  throw failed
}

/**
 * The mount being applied saw a fault (`error`, a trap out of `apply` itself, or
 * one below it, already handled where it came out of wasm): close every record
 * it opened, so nothing of it stays, and return the error its caller gets.
 */
function failMount(error, logger) {
  const opened = opening ?? []
  opening = undefined
  if (isTrap(error)) fail('apply', error, logger)
  // The mount's logger hears of the fault, though the mount is gone.
  if (unsaid !== undefined) unsaid.applying ??= logger
  for (const record of opened) abandon(record)
  const where = isTrap(error) ? `apply (${describe(error)})` : `${life.lastFault?.point}, inside apply`
  return stoodDown(`harness-guard stood down after an internal fault in ${where}; nothing was installed`)
}

function stoodDown(message = 'harness-guard stood down after an internal fault') {
  return Object.assign(new Error(message), { code: life.K?.refusalCode ?? 'HARNESS_GUARD_FAILED' })
}

function describe(error) {
  try {
    return error instanceof Error ? `${error.name}: ${error.message}` : String(error)
  } catch {
    return 'an unprintable error'
  }
}

// ---- mount records ------------------------------------------------------------------

/**
 * Open the record of a mount (`ctx` set) or of a programmatic install. A plugin
 * mount also gets one effect of its own, generation-free, that closes the record
 * when cordis disposes the mount (registered first, so it runs last).
 */
export function openMount(kind, target, config, host, logger) {
  const record = { kind, config, host, logger, held: [], gen: life.gen, effect: undefined }
  if (kind === 'plugin') record.ctx = target
  else record.registry = target
  if (kind === 'plugin') {
    record.effect = target.effect(() => () => close(record), 'harness-guard: mount')
  }
  mounts.add(record)
  opening?.push(record)
  return record
}

/** Hold a disposer (a function, or an object with `dispose()`) of what the current instance registered for `record`. */
export function hold(record, disposer) {
  if (record.gen === life.gen) record.held.push(disposer)
}

/** Forget a held disposer (the instance ran it itself). */
export function release(record, disposer) {
  const i = record.held.indexOf(disposer)
  if (i >= 0) record.held.splice(i, 1)
}

/** The disposer of a programmatic install: closes its record, whichever instance installed it. */
export function disposerOf(record) {
  return () => close(record)
}

function runDisposer(disposer) {
  try {
    const result = typeof disposer === 'function' ? disposer() : disposer?.dispose?.()
    if (result && typeof result.then === 'function') result.then(undefined, () => {})
  } catch {}
}

/** The mount went away: run what is held (the live instance's disposers are idempotent), undo stale patches. */
function close(record) {
  if (!mounts.delete(record)) return
  for (const disposer of record.held.splice(0).reverse()) runDisposer(disposer)
  hooks.unpatchOwner(record)
  if (mounts.size === 0 && recoveryArmed) cancelRecovery()
}

/** A mount that failed while it was applied: nothing of it stays. */
export function abandon(record) {
  close(record)
  if (record.effect) runDisposer(record.effect)
}

/** Set by patches.js: restore every patch `owner` made that no live instance owns. */
export const hooks = { unpatchOwner: () => {}, unpatchStale: () => {} }

// ---- failing, and recovering ------------------------------------------------------------

/** The loggers that hear of a fault: the live mounts', else the one of the mount being applied. */
function loggers(applying) {
  const live = [...mounts].map((r) => r.logger).filter((l) => l !== undefined)
  return live.length > 0 ? live : [applying].filter((l) => l !== undefined)
}

function say(level, text, applying) {
  const heard = loggers(applying)
  for (const logger of heard) {
    try {
      logger[level](text)
    } catch {}
  }
  return heard.length
}

/** The fault line also goes where the user of the `dsh` CLI sees it (it prints no cordis log lines). */
function warnProcess(text) {
  try {
    process.emitWarning(text, { code: 'HARNESS_GUARD_FAULT' })
  } catch {}
}

/**
 * The guard faulted at `point` (called where the fault came out of wasm): stand
 * down (once) and end what waits, at once. The faulted instance is replaced by
 * a fresh one that plans the recovery at the outermost exit from wasm (`left`),
 * which also says so once: through the cordis logger, and as a process warning.
 */
export function fail(point, error, applying) {
  faults += 1
  if (life.down) {
    // Only the standby instance can fault while the guard is down (it runs no guard
    // code): its recovery timer must fire before that instance is replaced.
    if (recoveryArmed) standbyFaulted = true
    else replaceDue = true
    return
  }
  life.down = true
  life.lastFault = { point, at: Date.now() }
  for (const undo of life.standDown) {
    try {
      undo()
    } catch {}
  }
  unsaid = { point, error, applying }
  replaceDue = true
}

/** At the outermost exit: replace the faulted instance, plan the recovery, say what happened. */
function replaceFaulted() {
  replaceDue = false
  const fault = unsaid
  unsaid = undefined
  const outcome = replaceAndPlan(fault?.applying)
  if (fault === undefined) return
  const text = `${life.K?.failedLine ?? 'harness-guard stood down after an internal fault'} (in ${fault.point}: ${describe(fault.error)}); ${outcome}`
  say('error', text, fault.applying)
  warnProcess(text)
}

/**
 * A fresh instance, asked whether and when to recover; returns what happens next,
 * in words. Only with no wasm frame of the guard on the stack (depth 0).
 */
function replaceAndPlan(applying) {
  recoveryArmed = false
  standbyFaulted = false
  try {
    shim.wasm.__wbg_reset_state()
    const [giveUp, delayMs] = shim.wasm.recoveryPlan(Float64Array.from(life.recent), now())
    if (giveUp) {
      life.gaveUp = true
      return life.K.gaveUpLine
    }
    if (mounts.size > 0) {
      shim.wasm.scheduleRecovery(delayMs)
      recoveryArmed = true
    }
    return `${life.K.recoversLine} in ${delayMs / 1000} s, or as soon as it is mounted again`
  } catch (error) {
    // The fresh instance failed at once: nothing more can be tried.
    life.gaveUp = true
    const text = `harness-guard could not start a fresh instance (${describe(error)}); it stays down until the process restarts`
    say('error', text, applying)
    return text
  }
}

function cancelRecovery() {
  if (!recoveryArmed || standbyFaulted) return
  recoveryArmed = false
  life.depth += 1
  try {
    shim.wasm.cancelRecovery()
  } catch {
  } finally {
    life.depth -= 1
  }
}

/**
 * The recovery's backoff timer fired (called from its callback, a wasm frame of
 * the instance a recovery may replace): recover once that frame is gone.
 */
export function recoveryDue() {
  queueMicrotask(() => {
    if (mounts.size > 0) recover()
  })
}

/**
 * Apply every live mount again, on the fresh instance. Called once the recovery
 * timer fired, or by a new mount while the guard is down (`applying`: its
 * logger); never beneath a wasm frame of the guard.
 */
function recover(applying) {
  if (!life.down || life.gaveUp || life.depth !== 0) return
  if (standbyFaulted) {
    // This call comes from the faulted standby's timer: replace it first.
    replaceAndPlan(applying)
    if (life.gaveUp) return
  }
  cancelRecovery()
  life.down = false
  life.recoveries += 1
  life.recent.push(now())
  // Only the window's recoveries matter to the policy: older ones are let go.
  while (life.recent.length > 0 && now() - life.recent[0] > RECENT_MS) life.recent.shift()
  for (const record of [...mounts]) {
    for (const disposer of record.held.splice(0).reverse()) runDisposer(disposer)
    record.gen = life.gen
    life.depth += 1
    try {
      shim.wasm.reapply(record)
    } catch (error) {
      if (isTrap(error)) fail('recover', error, applying)
      else if (!life.down) say('error', `harness-guard: a mount could not be applied again after the fault: ${describe(error)}`, applying)
    } finally {
      left()
    }
    if (life.down) return
  }
  // Patches no fresh install adopted go back once the injections the mounts asked
  // for again have run (cordis may start them a turn later).
  setImmediate(() => {
    if (!life.down) hooks.unpatchStale()
  })
  say('info', `${life.K?.recoveredLine ?? 'recovered'} (recovery ${life.recoveries}, after a fault in ${life.lastFault?.point})`, applying)
}

/** What `status` tells of faults: recoveries so far, the last fault, and whether the guard gave up. */
export function faultFacts() {
  return {
    recoveries: life.recoveries,
    ...(life.lastFault === undefined ? {} : { lastFault: { ...life.lastFault } }),
    ...(life.gaveUp ? { gaveUp: true } : {}),
  }
}
