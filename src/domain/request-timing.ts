import type { RunRecord } from './records.js'

/** The stages of an OpenAI API request, in the order they end. */
export type RequestStage = 'auth' | 'admission' | 'first-token' | 'record'

/**
 * Where one `/v1` request's time went, filled in by the layers it passes: the server's own time
 * is the total less the vendor calls' (`overheadMs`), as gateways report theirs.
 */
export class RequestTiming {
  private readonly startedAt = performance.now()
  private lastEnded = this.startedAt
  private lastTokenAt: number | null = null
  readonly stages: Partial<Record<RequestStage, number>> = {}
  /** The vendor calls' time, from the run's record: its candidates' tries, streams read whole. */
  vendorMs = 0

  /** The key is known and its rate limit counted. */
  authenticated(): void {
    this.end('auth')
  }

  /** The run's admission is written (its entry queued). */
  admitted(): void {
    this.end('admission')
  }

  /** A token reached the answer; the first ends `first-token` (the queue and the vendor's first byte). */
  token(): void {
    const now = performance.now()
    if (this.lastTokenAt === null) this.end('first-token', now)
    this.lastTokenAt = now
  }

  /** The run's end (or pause for tool results) is written: `record` is from its last token to that. */
  ran(run: RunRecord): void {
    this.vendorMs = run.failoverAttempts.reduce((sum, a) => sum + a.durationMs, 0)
    const now = performance.now()
    this.stages.record = now - (this.lastTokenAt ?? this.lastEnded)
    this.lastEnded = now
  }

  /** The server's own time so far: all of it less the vendor's. */
  overheadMs(): number {
    return Math.max(0, performance.now() - this.startedAt - this.vendorMs)
  }

  private end(stage: RequestStage, now = performance.now()): void {
    this.stages[stage] = now - this.lastEnded
    this.lastEnded = now
  }
}
