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
}

/** The `inspectClientGuard` service. */
export interface InspectClientGuard {
  reports(): InspectReport[]
  counts(): { deadline: number; refused: number; unboundAgent: number; disposed: number }
  reset(): void
}

/** The `inboxInputGuard` service. */
export interface InboxInputGuard {
  violations(): Violation[]
  counts(): { repaired: number; quarantined: number; observed: number }
  reset(): void
}

export const name: 'harness-guard'
export const inject: string[]
export const Config: Schema<Config>
export function apply(ctx: Context, config?: Config): void

declare const plugin: {
  name: typeof name
  inject: typeof inject
  Config: typeof Config
  apply: typeof apply
}
export default plugin
