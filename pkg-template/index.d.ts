import type { Context } from '@deepseek-ai/cordis'
import type Schema from '@deepseek-ai/schemastery'
import type { InspectReport } from './guard.js'

export type { InspectReport } from './guard.js'

export interface Config {
  inspect?: {
    /** Default true. */
    enabled?: boolean
    /** Integer, 1 ..= 2147483647. Default 15000. */
    deadlineMs?: number
    /** Integer, 0 ..= deadlineMs. Default min(1000, deadlineMs). */
    refusalGraceMs?: number
  }
  inbox?: {
    /** Default true. */
    enabled?: boolean
    /** Default 'repair'. */
    mode?: 'repair' | 'quarantine' | 'report'
    /** Integer, 1 ..= 100000. Default 80. */
    previewChars?: number
  }
}

/** One non-message found in an inbox. */
export interface Violation {
  at: number
  origin: 'durable' | 'pending' | 'claimed'
  sessionId: string | null
  seq: number | null
  target: 'next-turn' | 'next-step' | null
  index: number
  valueKind: string
  preview: string
  action: 'repaired' | 'quarantined' | 'observed'
  /** Which value: every record of one value (its write, while pending, its claim) has the same id. */
  valueId: number
}

/** What the guard is doing: the `status()` of both services and of the `HarnessGuard` provider. */
export interface Status {
  version: string
  /** Present while the guard stands down after a fault of its own. */
  failed?: string
  /** Recoveries on a fresh instance after faults, in this process. */
  recoveries: number
  /** The guard's last fault of its own: the entry point, and when (ms since the epoch). */
  lastFault?: { point: string; at: number }
  /** Present when the guard recovered too often and stays down until the process restarts. */
  gaveUp?: true
  inspect: {
    installed: boolean
    deadlineMs?: number
    refusalGraceMs?: number
    inFlight: number
    counts: { deadline: number; refused: number; unboundAgent: number; disposed: number }
  }
  inbox: {
    installed: boolean
    mode: 'repair' | 'quarantine' | 'report'
    counts: { repaired: number; quarantined: number; observed: number }
  }
}

/** The `inspectClientGuard` service. */
export interface InspectClientGuard {
  reports(): InspectReport[]
  counts(): { deadline: number; refused: number; unboundAgent: number; disposed: number }
  reset(): void
  status(): Status
}

/** The `inboxInputGuard` service. */
export interface InboxInputGuard {
  violations(): Violation[]
  /** `observed` counts values: one value seen at its write, while pending and at its claim counts once. */
  counts(): { repaired: number; quarantined: number; observed: number }
  reset(): void
  status(): Status
}

export const name: 'harness-guard'
export const inject: string[]
/**
 * The config schema (`@deepseek-ai/schemastery`). Every way of using it runs the mount's
 * checks: `Config(value)` throws what the mount refuses (a `ValidationError` whose
 * `message`, `code` and `field` are the mount's) and returns `value` with the defaults;
 * `Config['~standard'].validate(value)` returns the same issue. Validating has no side
 * effect. Its JSON (`Config.toJSON()`) carries each field's description, default and range.
 */
export const Config: Schema<Config>
export function apply(ctx: Context, config?: Config): void

declare const plugin: {
  name: typeof name
  inject: typeof inject
  Config: typeof Config
  apply: typeof apply
}
export default plugin
