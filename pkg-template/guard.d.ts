/** One rejected client query, or one refused unbound-agent answer. */
export interface InspectReport {
  kind: 'deadline' | 'refused' | 'unbound-agent' | 'disposed'
  requestId: string
  /** The agent (session) whose query it was, when the registry announced it. */
  sessionId: string | null
  providerId: string
  methodName: string
  deadlineMs: number
  /** Milliseconds since the epoch. */
  at: number
  /** The page's refusal reason (refused reports only). */
  reason?: string
}

export interface InspectClientGuardOptions {
  /** Integer, 1 ..= 2147483647. Default 15000. */
  deadlineMs?: number
  /** Integer, 0 ..= deadlineMs. Default min(1000, deadlineMs). */
  refusalGraceMs?: number
  /**
   * Called once per report, after the query it reports on was ended (its caller's
   * rejection decided), with no call of the guard's on the stack. It may call
   * anything: the `dispose()` this install returned, another install, a new query.
   * What it throws is dropped (the guard and the other reports go on).
   */
  onReport?: (report: InspectReport) => void
}

/**
 * Guard a `CordisInspectRegistryService` (raw, or any cordis read of it).
 * Idempotent. Returns `dispose()`, which restores the previous methods by marker
 * and rejects queries still waiting with `INSPECT_CLIENT_GUARD_DISPOSED`.
 * Throws (code `HARNESS_GUARD_INVALID_CONFIG`, with `field`) on invalid options.
 */
export function installInspectClientGuard(registry: object, options?: InspectClientGuardOptions): () => void

/** The object under `Symbol.for('cordis.original')`, else the value itself. */
export function originalOf<T>(value: T): T
