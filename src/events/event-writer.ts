import type { SessionEvent } from '../domain/events.js'
import type { Logger } from '../domain/logger.js'
import type { Metrics } from '../domain/metrics.js'
import type { EventStore } from '../store/event-store.js'

/** Failed writes of one batch before it is written session by session. */
const MAX_BATCH_FAILURES = 3
/** How long a batch waits before it is tried again after a failed write (ms). */
const RETRY_MS = 1000

/**
 * The batched writer of the event log: published events wait at most `flushIntervalMs`, then go
 * in multi-row inserts of up to `batchSize`, one batch at a time so each session's rows land in
 * sequence order. `written` is told about each event once it is stored.
 */
export class EventWriter {
  private readonly queue: SessionEvent[] = []
  private timer: NodeJS.Timeout | null = null
  /** The batch `flush()` is writing: its events stay queued until it has landed. */
  private writing: Promise<void> | null = null
  /** The writes `writeWith` handed events to, while they run. */
  private readonly handedOver = new Set<Promise<void>>()
  private batchFailures = 0

  constructor(
    private readonly events: EventStore,
    private readonly logger: Logger,
    private readonly options: { flushIntervalMs: number; batchSize: number },
    private readonly written: (event: SessionEvent) => void,
    private readonly metrics: Metrics,
  ) {}

  enqueue(event: SessionEvent): void {
    this.queue.push(event)
    this.timer ??= setTimeout(() => void this.flush(), this.options.flushIntervalMs)
  }

  /** Writes every event enqueued so far (and waits for those handed to `writeWith`). */
  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
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
      for (const event of batch) this.written(event)
    }
  }

  /**
   * Hands every queued event to `write`, which stores them in a transaction of its own making (a
   * run's end, with its last events), so they cost no statement of their own. Several ends may
   * be writing at once, each with its own events (readers order the log by sequence); a batch of
   * `flush()`'s, still queued while it is written, lands first. When `write` throws, its events
   * are queued again ahead of later ones.
   */
  async writeWith<T>(write: (queued: SessionEvent[]) => Promise<T>): Promise<T> {
    while (this.writing !== null) await this.writing.catch(() => {})
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    const batch = this.queue.splice(0)
    const writing = write(batch)
    const settled = writing.then(
      () => {},
      () => {},
    )
    this.handedOver.add(settled)
    try {
      const value = await writing
      for (const event of batch) this.written(event)
      if (batch.length > 0) this.metrics.eventsWritten(batch.length, Date.now() - Date.parse(batch[0]!.at))
      return value
    } catch (error) {
      this.queue.unshift(...batch)
      if (this.queue.length > 0) this.timer ??= setTimeout(() => void this.flush(), RETRY_MS)
      throw error
    } finally {
      this.handedOver.delete(settled)
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
      await this.events.append(events).catch((error: unknown) => {
        this.logger.error('dropped events the database refused', { session, count: events.length, error: (error as Error).message })
      })
    }
  }

  /** Writes everything, then stops the timer. */
  async close(): Promise<void> {
    await this.flush()
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
  }
}
