// What waits for the guard to leave wasm: an error Rust means to throw, the
// warn lines it wrote and the reports it made for an `onReport`.
//
// Host code never runs beneath a wasm frame of the guard on the guard's account:
// a host logger called from under wasm frames pays several times more for the
// stack captures it makes, an exception thrown through wasm frames would unwind
// them, and an `onReport` may dispose the guard or start a query. So Rust hands
// these over here while it runs, and the outermost exit from wasm (`left()` in
// supervisor.js, which calls `life.atExit`) passes them on.
//
// Why JavaScript: a value thrown from wasm would unwind through its frames, and
// calling the host after the frames are gone needs a frame outside wasm.

import { life } from './supervisor.js'

/** What Rust means to throw, handed over by `raise` and thrown once wasm returned. */
const NOTHING = Symbol('nothing')
let raised = NOTHING

/** Throw `error` from the trampoline once wasm has returned. */
export function raise(error) {
  raised = error
}

/** Throw what Rust raised while it ran, now that wasm has returned. */
export function rethrow() {
  if (raised === NOTHING) return
  const error = raised
  raised = NOTHING
  throw error
}

/** Forget what Rust raised (the instance that raised it faulted). */
export function forgetRaised() {
  raised = NOTHING
}

/** Lines written while wasm ran, `[log, text, …]`. */
const lines = []

/** Queue a line; the outermost exit from wasm logs it. */
export function logLater(log, text) {
  lines.push(log, text)
}

/**
 * Reports for a programmatic install's `onReport`, `[onReport, report, …]`,
 * handed over once the guard left wasm: after the endings they report were
 * delivered, so whatever `onReport` does (dispose the guard, start a query,
 * throw) no query is left waiting on its account.
 */
const reports = []

/** Queue a report for `onReport`. */
export function reportLater(onReport, report) {
  reports.push(onReport, report)
}

/**
 * Call what `queue` holds, `[f, argument, …]`, in order. A throw never stops
 * the rest, nor its caller: it is dropped.
 */
function drain(queue) {
  const batch = queue.splice(0)
  for (let i = 0; i < batch.length; i += 2) {
    try {
      batch[i](batch[i + 1])
    } catch {}
  }
}

life.atExit = () => {
  if (lines.length > 0) drain(lines)
  if (reports.length > 0) drain(reports)
}
