import type { SessionEvent } from '../domain/events.js'
import type { Logger } from '../domain/logger.js'
import type { EventStore } from '../store/event-store.js'

/**
 * The batched writer of the event log: published events wait at most `flushIntervalMs`, then go
 * in multi-row inserts of up to `batchSize`, one batch at a time so each session's rows land in
 * sequence order. `written` is told about each event once it is stored.
 */
export class EventWriter {
  private readonly queue: SessionEvent[] = []
  private timer: NodeJS.Timeout | null = null
  private writing: Promise<void> | null = null

  constructor(
    private readonly events: EventStore,
    private readonly logger: Logger,
    private readonly options: { flushIntervalMs: number; batchSize: number },
    private readonly written: (event: SessionEvent) => void,
  ) {}

  enqueue(event: SessionEvent): void {
    this.queue.push(event)
    this.timer ??= setTimeout(() => void this.flush(), this.options.flushIntervalMs)
  }

  /** Writes every event enqueued so far. */
  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    while (this.writing !== null) await this.writing
    while (this.queue.length > 0) {
      const batch = this.queue.slice(0, this.options.batchSize)
      this.writing = this.writeBatch(batch)
      try {
        await this.writing
      } catch {
        this.timer ??= setTimeout(() => void this.flush(), 1000)
        return
      } finally {
        this.writing = null
      }
      this.queue.splice(0, batch.length)
      for (const event of batch) this.written(event)
    }
  }

  private async writeBatch(batch: SessionEvent[]): Promise<void> {
    try {
      await this.events.append(batch)
    } catch (error) {
      this.logger.error('could not write events; will retry', { count: batch.length, error: (error as Error).message })
      throw error
    }
  }

  /** Writes everything, then stops the timer. */
  async close(): Promise<void> {
    await this.flush()
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
  }
}
