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

/** One session's part of the writer: its queued events, and the writes under way that hold its earlier ones. */
interface Lane {
  session: string
  queued: SessionEvent[]
  /** Settles once every write of this session's events started so far has ended; never rejects. */
  tail: Promise<void>
  /** Writes of this session's events under way. */
  writing: number
}

const sessionOf = (event: SessionEvent) => `${event.tenantId}/${event.sessionId}`

/**
 * The batched writer of the event log: published events wait at most `flushIntervalMs` (an
 * event enqueued `soon`, the next turn of the event loop), then go in multi-row inserts of up
 * to `batchSize`, one batch at a time. Each session has a lane of its own: its events are
 * written in sequence order, by one write at a time (a batch, or a transaction of its own that
 * `writeWith` hands them to), so the log never holds an event while one before it is still
 * being written; no session waits for another's transaction.
 */
export class EventWriter {
  private readonly lanes = new Map<string, Lane>()
  private timer: NodeJS.Timeout | null = null
  private soon: NodeJS.Immediate | null = null
  /** The batch being written: batches go one at a time. */
  private batch: Promise<void> | null = null
  private batchFailures = 0

  constructor(
    private readonly events: EventStore,
    private readonly logger: Logger,
    private readonly options: { flushIntervalMs: number; batchSize: number },
    private readonly outcomes: EventWriterOutcomes,
    private readonly metrics: Metrics,
  ) {}

  private lane(session: string): Lane {
    let lane = this.lanes.get(session)
    if (!lane) {
      lane = { session, queued: [], tail: Promise.resolve(), writing: 0 }
      this.lanes.set(session, lane)
    }
    return lane
  }

  /** Runs `write` after every write of the lane started before it, counting it as under way. */
  private inLane<T>(lane: Lane, write: () => Promise<T>): Promise<T> {
    lane.writing++
    const result = lane.tail.then(write)
    lane.tail = result.then(
      () => this.settled(lane),
      () => this.settled(lane),
    )
    return result
  }

  private settled(lane: Lane): void {
    lane.writing--
    if (lane.writing === 0 && lane.queued.length === 0) this.lanes.delete(lane.session)
  }

  /** Queues an event; `soon` writes it (and whatever waits) at the next turn instead of within the interval. */
  enqueue(event: SessionEvent, soon = false): void {
    this.lane(sessionOf(event)).queued.push(event)
    if (soon) this.soon ??= setImmediate(() => void this.flush())
    else this.timer ??= setTimeout(() => void this.flush(), this.options.flushIntervalMs)
  }

  private clearTimers(): void {
    if (this.timer) clearTimeout(this.timer)
    if (this.soon) clearImmediate(this.soon)
    this.timer = null
    this.soon = null
  }

  /** Writes every event enqueued so far, and waits for the writes handed to `writeWith`. */
  async flush(): Promise<void> {
    this.clearTimers()
    for (;;) {
      if (this.batch !== null) {
        await this.batch.catch(() => {})
        continue
      }
      const ready = [...this.lanes.values()].filter((lane) => lane.writing === 0 && lane.queued.length > 0)
      if (ready.length === 0) {
        const busy = [...this.lanes.values()].filter((lane) => lane.writing > 0)
        if (busy.length === 0) return
        await Promise.all(busy.map((lane) => lane.tail))
        continue
      }
      if (!(await this.writeReady(ready))) return
    }
  }

  /** Writes one batch from the lanes that have nothing under way; false when it failed (it is queued again). */
  private async writeReady(ready: Lane[]): Promise<boolean> {
    const taken: { lane: Lane; events: SessionEvent[] }[] = []
    let room = this.options.batchSize
    for (const lane of ready) {
      if (room === 0) break
      const events = lane.queued.splice(0, room)
      room -= events.length
      taken.push({ lane, events })
    }
    const batch = taken.flatMap((t) => t.events)
    let landed!: () => void
    const held = new Promise<void>((resolve) => {
      landed = resolve
    })
    for (const { lane } of taken) void this.inLane(lane, () => held)
    this.batch = this.writeBatch(batch)
    try {
      await this.batch
      return true
    } catch {
      for (const { lane, events } of taken) lane.queued.unshift(...events)
      this.timer ??= setTimeout(() => void this.flush(), RETRY_MS)
      return false
    } finally {
      this.batch = null
      landed()
    }
  }

  /**
   * Hands the session's queued events to `write`, which stores them in a transaction of its own
   * making (a run's start or end, with its own events), so they cost no statement of their own.
   * It runs once every earlier write of the session's events has ended; when it throws, its
   * events are queued again ahead of later ones.
   */
  writeWith<T>(tenantId: string, sessionId: string, write: (queued: SessionEvent[]) => Promise<T>): Promise<T> {
    const lane = this.lane(`${tenantId}/${sessionId}`)
    return this.inLane(lane, async () => {
      const queued = lane.queued.splice(0)
      try {
        const value = await write(queued)
        for (const event of queued) this.outcomes.written(event)
        if (queued.length > 0) this.metrics.eventsWritten(queued.length, Date.now() - Date.parse(queued[0]!.at))
        return value
      } catch (error) {
        lane.queued.unshift(...queued)
        if (lane.queued.length > 0) this.timer ??= setTimeout(() => void this.flush(), RETRY_MS)
        throw error
      }
    })
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
      const events = bySession.get(sessionOf(event))
      if (events) events.push(event)
      else bySession.set(sessionOf(event), [event])
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
