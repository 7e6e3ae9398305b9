import type { SessionEvent } from '../domain/events.js'
import type { Logger } from '../domain/logger.js'
import type { Metrics } from '../domain/metrics.js'
import type { EventStore } from '../store/event-store.js'

/** Failed writes of one batch before it is written session by session. */
const MAX_BATCH_FAILURES = 3
/** How long a batch waits before it is tried again after a failed write (ms). */
const RETRY_MS = 1000

/** What the writer tells about each event it was given. */
export interface EventWriterOutcomes {
  /** The event is stored. */
  written(event: SessionEvent): void
  /** The database refused the event's rows for good: it will never be stored. */
  refused(events: readonly SessionEvent[]): void
}

/**
 * The batched writer of the event log: published events wait at most `flushIntervalMs` (an
 * event enqueued `soon`, the next turn of the event loop), then go in multi-row inserts of up to
 * `batchSize`, one batch at a time so each session's rows land in sequence order.
 */
export class EventWriter {
  private readonly queue: SessionEvent[] = []
  private timer: NodeJS.Timeout | null = null
  private soon: NodeJS.Immediate | null = null
  /** The last write handed over by `writeWith`: the next one starts after it. */
  private handing: Promise<void> = Promise.resolve()
  /** The batch `flush()` is writing: its events stay queued until it has landed. */
  private writing: Promise<void> | null = null
  /** The writes handed over and not yet ended: `flush()` waits for them. */
  private readonly handedOver = new Set<Promise<unknown>>()
  private batchFailures = 0

  constructor(
    private readonly events: EventStore,
    private readonly logger: Logger,
    private readonly options: { flushIntervalMs: number; batchSize: number },
    private readonly outcomes: EventWriterOutcomes,
    private readonly metrics: Metrics,
  ) {}

  /** Queues an event; `soon` writes it (and whatever waits) at the next turn instead of within the interval. */
  enqueue(event: SessionEvent, soon = false): void {
    this.queue.push(event)
    if (soon) this.soon ??= setImmediate(() => void this.flush())
    else this.timer ??= setTimeout(() => void this.flush(), this.options.flushIntervalMs)
  }

  private clearTimers(): void {
    if (this.timer) clearTimeout(this.timer)
    if (this.soon) clearImmediate(this.soon)
    this.timer = null
    this.soon = null
  }

  /** Writes every event enqueued so far (and waits for those handed to `writeWith`). */
  async flush(): Promise<void> {
    this.clearTimers()
    for (;;) {
      if (this.writing !== null) await this.writing
      else if (this.handedOver.size > 0) await Promise.all(this.handedOver)
      else break
    }
    while (this.queue.length > 0) {
      const batch = this.queue.slice(0, this.options.batchSize)
      this.writing = this.writeBatch(batch)
      try {
        await this.writing
      } catch {
        this.timer ??= setTimeout(() => void this.flush(), RETRY_MS)
        return
      } finally {
        this.writing = null
      }
      this.queue.splice(0, batch.length)
    }
  }

  /**
   * Hands every queued event to `write`, which stores them in a transaction of its own making (a
   * run's end, with its last events), so they cost no statement of their own. Handed-over writes
   * run one at a time, in the order they were handed over, so the log never holds an event while
   * one before it is still being written elsewhere; a batch of `flush()`'s, still queued while it
   * is written, lands first. When `write` throws, its events are queued again ahead of later ones.
   */
  writeWith<T>(write: (queued: SessionEvent[]) => Promise<T>): Promise<T> {
    const written = this.handing.then(() => this.handOver(write))
    const done: Promise<boolean> = written.then(
      () => this.handedOver.delete(done),
      () => this.handedOver.delete(done),
    )
    this.handing = done.then(() => {})
    this.handedOver.add(done)
    return written
  }

  private async handOver<T>(write: (queued: SessionEvent[]) => Promise<T>): Promise<T> {
    while (this.writing !== null) await this.writing.catch(() => {})
    this.clearTimers()
    const batch = this.queue.splice(0)
    try {
      const value = await write(batch)
      for (const event of batch) this.outcomes.written(event)
      if (batch.length > 0) this.metrics.eventsWritten(batch.length, Date.now() - Date.parse(batch[0]!.at))
      return value
    } catch (error) {
      this.queue.unshift(...batch)
      if (this.queue.length > 0) this.timer ??= setTimeout(() => void this.flush(), RETRY_MS)
      throw error
    }
  }

  /**
   * Writes a batch; after it failed `MAX_BATCH_FAILURES` times in a row (the database is up but
   * refuses some rows), writes it session by session and drops the rows of a session that still
   * fail, so one session's bad rows never stop every other session's events.
   */
  private async writeBatch(batch: SessionEvent[]): Promise<void> {
    try {
      await this.events.append(batch)
      this.batchFailures = 0
      for (const event of batch) this.outcomes.written(event)
      this.metrics.eventsWritten(batch.length, Date.now() - Date.parse(batch[0]!.at))
      return
    } catch (error) {
      this.logger.error('could not write events; will retry', { count: batch.length, error: (error as Error).message })
      if (++this.batchFailures < MAX_BATCH_FAILURES) throw error
    }
    this.batchFailures = 0
    const bySession = new Map<string, SessionEvent[]>()
    for (const event of batch) {
      const key = `${event.tenantId}/${event.sessionId}`
      const group = bySession.get(key)
      if (group) group.push(event)
      else bySession.set(key, [event])
    }
    for (const [session, events] of bySession) {
      try {
        await this.events.append(events)
        for (const event of events) this.outcomes.written(event)
      } catch (error) {
        this.logger.error('dropped events the database refused', { session, count: events.length, error: (error as Error).message })
        this.outcomes.refused(events)
      }
    }
  }

  /** Writes everything, then stops the timer. */
  async close(): Promise<void> {
    await this.flush()
    this.clearTimers()
  }
}
