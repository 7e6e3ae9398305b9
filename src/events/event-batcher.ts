import { StorageFullError, UnavailableError } from '../domain/errors.js'
import type { SessionEvent } from '../domain/events.js'
import type { Logger } from '../domain/logger.js'
import type { Metrics } from '../domain/metrics.js'
import type { EventStore } from '../store/event-store.js'
import type { SessionStream } from './session-stream.js'

/** Failed writes of one batch before it is written session by session. */
const MAX_BATCH_FAILURES = 3
/** How long a batch waits before it is tried again after a failed write (ms). */
const RETRY_MS = 1000

/** A database that does not answer, or has no room, refuses no row: such a batch waits, however long. */
const waitsForTheDatabase = (error: unknown) => error instanceof UnavailableError || error instanceof StorageFullError

/**
 * Writes what session streams publish in multi-row inserts shared by every session: published
 * events wait at most `flushIntervalMs` (a lifecycle event, the next turn of the event loop),
 * then go in batches of up to `batchSize`, one batch at a time. It takes a stream's events only
 * while nothing of that stream is being written, and holds the stream's write chain while its
 * batch is under way, so a stream's events are still written in order, one write at a time. It
 * keeps only the streams with something queued or under way; each stream keeps its own state.
 */
export class EventBatcher {
  /** The streams with events queued or a write under way. */
  private readonly active = new Set<SessionStream>()
  private timer: NodeJS.Timeout | null = null
  private soon: NodeJS.Immediate | null = null
  /** The batch being written: batches go one at a time. */
  private batch: Promise<void> | null = null
  private batchFailures = 0

  constructor(
    private readonly events: EventStore,
    private readonly logger: Logger,
    private readonly options: { flushIntervalMs: number; batchSize: number },
    private readonly metrics: Metrics,
  ) {}

  track(stream: SessionStream): void {
    this.active.add(stream)
  }

  untrack(stream: SessionStream): void {
    this.active.delete(stream)
  }

  /** A stream queued an event: `soon` writes it (and whatever waits) at the next turn instead of within the interval. */
  schedule(soon: boolean): void {
    if (soon) this.soon ??= setImmediate(() => void this.flush())
    else this.timer ??= setTimeout(() => void this.flush(), this.options.flushIntervalMs)
  }

  /** A write failed and its events are queued again: try once more in a while. */
  retryLater(): void {
    this.timer ??= setTimeout(() => void this.flush(), RETRY_MS)
  }

  /** Counts events stored by a stream's own transaction. */
  counted(events: readonly SessionEvent[]): void {
    if (events.length > 0) this.metrics.eventsWritten(events.length, Date.now() - Date.parse(events[0]!.at))
  }

  private clearTimers(): void {
    if (this.timer) clearTimeout(this.timer)
    if (this.soon) clearImmediate(this.soon)
    this.timer = null
    this.soon = null
  }

  /** Writes every event queued so far, and waits for the writes under way in the streams' own chains. */
  async flush(): Promise<void> {
    this.clearTimers()
    for (;;) {
      if (this.batch !== null) {
        await this.batch.catch(() => {})
        continue
      }
      const ready = [...this.active].filter((stream) => stream.ready)
      if (ready.length === 0) {
        const busy = [...this.active].filter((stream) => !stream.settled)
        if (busy.length === 0) return
        await Promise.all(busy.map((stream) => stream.writesEnded))
        continue
      }
      if (!(await this.writeReady(ready))) return
    }
  }

  /** Writes one batch from the streams that have nothing under way; false when it failed (it is queued again). */
  private async writeReady(ready: SessionStream[]): Promise<boolean> {
    const taken: { stream: SessionStream; events: SessionEvent[] }[] = []
    let room = this.options.batchSize
    for (const stream of ready) {
      if (room === 0) break
      const events = stream.queued.splice(0, room)
      room -= events.length
      taken.push({ stream, events })
    }
    let landed!: () => void
    const held = new Promise<void>((resolve) => {
      landed = resolve
    })
    for (const { stream } of taken) void stream.inChain(() => held)
    this.batch = this.writeBatch(taken)
    try {
      await this.batch
      return true
    } catch {
      for (const { stream, events } of taken) stream.requeue(events)
      return false
    } finally {
      this.batch = null
      landed()
    }
  }

  /**
   * Writes a batch; after it failed `MAX_BATCH_FAILURES` times in a row with the database up and
   * room on its disk (it refuses some rows), writes it stream by stream and drops the rows of a stream that still
   * fail, so one session's bad rows never stop every other session's events.
   */
  private async writeBatch(taken: { stream: SessionStream; events: SessionEvent[] }[]): Promise<void> {
    const batch = taken.flatMap((t) => t.events)
    try {
      await this.events.append(batch)
      this.batchFailures = 0
      for (const { stream, events } of taken) stream.batchWritten(events)
      this.counted(batch)
      return
    } catch (error) {
      this.logger.error('could not write events; will retry', { count: batch.length, error: (error as Error).message })
      if (waitsForTheDatabase(error) || ++this.batchFailures < MAX_BATCH_FAILURES) throw error
    }
    this.batchFailures = 0
    for (const { stream, events } of taken) {
      try {
        await this.events.append(events)
        stream.batchWritten(events)
      } catch (error) {
        if (waitsForTheDatabase(error)) {
          stream.requeue(events)
          continue
        }
        this.logger.error('dropped events the database refused', {
          sessionId: stream.sessionId,
          count: events.length,
          error: (error as Error).message,
        })
        stream.batchRefused(events)
      }
    }
  }

  /** Writes everything, then stops the timers. */
  async close(): Promise<void> {
    await this.flush()
    this.clearTimers()
  }
}
