import type { RunRecord } from './records.js'

/**
 * What the layers below the server report for metrics, at most once per run or per written
 * batch (never per token); server/metrics.ts turns it into Prometheus series.
 */
export interface Metrics {
  /** A run's end was written. */
  runFinished(run: RunRecord): void
  /** A prompt was refused at admission; `reason` is the limit (maxOutstandingPerSession, …), sessionBusy or budget. */
  admissionRefused(reason: string): void
  /** A batch of events reached the database, the oldest `lagMs` after it was published. */
  eventsWritten(count: number, lagMs: number): void
  /** A webhook attempt ended: the delivery landed, will be retried, or failed for good. */
  webhookAttempted(outcome: 'delivered' | 'retrying' | 'failed'): void
}

export const NO_METRICS: Metrics = { runFinished() {}, admissionRefused() {}, eventsWritten() {}, webhookAttempted() {} }
