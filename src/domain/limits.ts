/** Admission limits (DESIGN §1); every one answers QueueFullError when exceeded. */
export interface QueueLimits {
  /** Outstanding prompts (queued, scheduled, running) plus unapplied steers, per session. */
  maxOutstandingPerSession: number
  /** Bytes of those, per session. */
  maxOutstandingBytesPerSession: number
  /** Admitted prompts not yet started, server-wide. */
  maxPendingAdmissions: number
  /** Bytes of those, server-wide. */
  maxPendingBytes: number
  /** Terminal entries kept per session, oldest dropped first (pruned in batches: up to a tenth more may linger). */
  retainedTerminalPerSession: number
}

export const DEFAULT_QUEUE_LIMITS: QueueLimits = {
  maxOutstandingPerSession: 16,
  maxOutstandingBytesPerSession: 64 * 1024 * 1024,
  maxPendingAdmissions: 64,
  maxPendingBytes: 128 * 1024 * 1024,
  retainedTerminalPerSession: 100,
}
