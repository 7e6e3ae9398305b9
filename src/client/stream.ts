import { backoffDelay, type RetryOptions, wait } from './backoff.js'
import { isTransient } from './errors.js'

/** Where a resumable stream is, and how it opens one subscription from a sequence. */
export interface ResumableSource<E extends { sequence: number }> {
  /** The sequence to start after: the caller's, or where the stream is now; null: from the server's default. */
  start(): Promise<number | null>
  /** One subscription of the events after `afterSequence`. */
  open(afterSequence: number | null, signal: AbortSignal | undefined): AsyncGenerator<E>
  /** The event after which the stream is over (a run's end); none for a session. */
  isLast(event: E): boolean
}

/**
 * A stream that survives disconnects and server restarts: after any break it subscribes again
 * from the last sequence it yielded, with backoff, so it yields every event once, in order.
 * Sequences only grow, but may skip numbers (after a restart), so none is taken for a gap.
 * A GraphQL error that is not transient (NOT_FOUND, FORBIDDEN, …) ends it with that error.
 */
export async function* resumable<E extends { sequence: number }>(
  source: ResumableSource<E>,
  retry: RetryOptions,
  signal?: AbortSignal,
): AsyncGenerator<E> {
  let after: number | null = null
  let started = false
  let attempt = 0
  while (!signal?.aborted) {
    try {
      if (!started) {
        after = await source.start()
        started = true
      }
      for await (const event of source.open(after, signal)) {
        attempt = 0
        if (after !== null && event.sequence <= after) continue
        after = event.sequence
        yield event
        if (source.isLast(event)) return
      }
      // completed by the server before the end (it was shutting down): resume like after a break
      if (signal?.aborted) return
      await wait(backoffDelay(attempt++, retry), signal)
    } catch (error) {
      if (signal?.aborted) return
      if (!isTransient(error) || attempt + 1 >= (retry.maxAttempts ?? Number.POSITIVE_INFINITY)) throw error
      await wait(backoffDelay(attempt++, retry), signal).catch(() => undefined)
    }
  }
}
