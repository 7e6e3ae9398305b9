import { FixedBuffer, Repeater } from '@repeaterjs/repeater'
import { SubscriberTooSlowError } from '../domain/errors.js'
import type { SessionEvent, SessionEventData } from '../domain/events.js'
import type { Logger } from '../domain/logger.js'
import { type Metrics, NO_METRICS } from '../domain/metrics.js'
import type { EventStore } from '../store/event-store.js'
import type { SessionStore } from '../store/session-store.js'
import { type Fanout, localFanout } from './deployment-pubsub.js'
import { LOG_PAGE, replayLog } from './event-log.js'
import { EventWriter } from './event-writer.js'
import { SequenceAllocator, type SequenceSource } from './sequence-allocator.js'

/** A session's stream, and its topic in the fan-out: a run's subscribers take its events from there. */
const sessionKey = (tenantId: string, sessionId: string) => `${tenantId}/${sessionId}`

/** An event numbered but not yet delivered, because it, or one before it, waits for its write. */
interface Outgoing {
  event: SessionEvent
  /**
   * writing: delivered once stored; held: a token delta queued for the writer, delivered at its
   * turn whether stored or not; stored: delivered at its turn; refused: never delivered.
   */
  state: 'writing' | 'held' | 'stored' | 'refused'
}

interface Stream {
  sequences: SequenceAllocator
  /** Delivered but not yet written, in sequence order. */
  unwritten: SessionEvent[]
  /** Numbered and not yet delivered, in sequence order: empty unless a lifecycle event's write is under way. */
  outbox: Outgoing[]
  /** Whether any of its events may be in the store; false for a session created here until one is written. */
  stored: boolean
  /** The sequence of the last event delivered to subscribers (numbered but held ones are not yet). */
  delivered: number
}

export interface EventBusOptions {
  /**
   * How long published events may wait before they are written (ms). Subscribers get them live
   * at once; the write is for replay, and a run's end writes what is left in its own transaction.
   */
  flushIntervalMs: number
  /** Most events written in one statement. */
  batchSize: number
  /** Sequence numbers reserved ahead in the session row, so a crash never reuses one. */
  sequenceBlock: number
  /** Most events buffered for one slow subscriber before it is cut off (it can resume). */
  subscriberBuffer: number
}

export const DEFAULT_EVENT_BUS_OPTIONS: EventBusOptions = {
  flushIntervalMs: 100,
  batchSize: 500,
  sequenceBlock: 1000,
  subscriberBuffer: 10_000,
}

function newStream(sequences: SequenceAllocator, stored: boolean): Stream {
  return { sequences, unwritten: [], outbox: [], stored, delivered: sequences.last }
}

/**
 * The event bus of session streams. `publish` is synchronous: it numbers the event and, for a
 * token delta, hands it to live subscribers at once and queues it for the batched writer. Any
 * other event (a lifecycle event: queue entries, run starts, steers) goes live only once it is
 * written, so what a subscriber was told is what the log holds; the writer writes it at the next
 * turn of the event loop, with whatever else waits, and what the session publishes meanwhile is
 * delivered after it, in sequence order.
 * `subscribe` replays what was persisted (and what is still waiting to be written) after a
 * sequence, then continues live, with no gap and no duplicate.
 */
export class SessionEventBus {
  private readonly streams = new Map<string, Stream>()
  private readonly writer: EventWriter

  constructor(
    private readonly events: EventStore,
    private readonly sessions: SessionStore,
    private readonly logger: Logger,
    private readonly options: EventBusOptions = DEFAULT_EVENT_BUS_OPTIONS,
    /** Where delivered events go to every subscriber: in memory, or every instance's through Redis. */
    private readonly fanout: Fanout = localFanout(),
    metrics: Metrics = NO_METRICS,
  ) {
    this.writer = new EventWriter(
      events,
      logger,
      options,
      { written: (event) => this.writerSettled([event], 'stored'), refused: (refused) => this.writerSettled(refused, 'refused') },
      metrics,
    )
  }

  /** The writer's word on events: delivered ones leave the unwritten tail, waiting ones may go. */
  private writerSettled(events: readonly SessionEvent[], outcome: 'stored' | 'refused'): void {
    const stream = this.streams.get(sessionKey(events[0]!.tenantId, events[0]!.sessionId))
    if (!stream) return
    if (outcome === 'stored') stream.stored = true
    const waiting: SessionEvent[] = []
    for (const event of events) {
      // first in line unless an earlier end's write failed and its events wait for a retry
      const at = stream.unwritten.indexOf(event)
      if (at !== -1) stream.unwritten.splice(at, 1)
      else waiting.push(event)
    }
    if (waiting.length > 0) this.settle(stream, waiting, outcome)
  }

  /**
   * Loads where a session's numbering resumes (above anything reserved before, so above any
   * event a crashed process may have published) and reserves a block. Idempotent; must have
   * resolved before the session's first `publish`.
   */
  async open(tenantId: string, sessionId: string): Promise<void> {
    const key = sessionKey(tenantId, sessionId)
    if (this.streams.has(key)) return
    const sequences = await SequenceAllocator.resume(this.sequenceSource(tenantId, sessionId), this.options.sequenceBlock)
    if (!this.streams.has(key)) this.streams.set(key, newStream(sequences, true))
  }

  private sequenceSource(tenantId: string, sessionId: string): SequenceSource {
    return {
      reserved: () => this.sessions.sequenceCeiling(tenantId, sessionId),
      persisted: () => this.events.maxSequence(tenantId, sessionId),
      reserve: (ceiling) => this.sessions.raiseSequenceCeiling(tenantId, sessionId, ceiling),
      failed: (error) => this.logger.error('could not reserve event sequences', { sessionId, error: (error as Error).message }),
    }
  }

  /** The sequence ceiling a new session's row is created with: its first block, reserved with the row. */
  get firstCeiling(): number {
    return this.options.sequenceBlock
  }

  /**
   * Opens the stream of a session just created here, whose row reserved `firstCeiling`: nothing
   * to read, and nothing to replay from the store until one of its events is written.
   */
  openCreated(tenantId: string, sessionId: string): void {
    const sequences = SequenceAllocator.fresh(this.sequenceSource(tenantId, sessionId), this.options.sequenceBlock)
    this.streams.set(sessionKey(tenantId, sessionId), newStream(sequences, false))
  }

  /** Whether nothing of the session's stream is waiting to be written, committed or reserved. */
  quiet(tenantId: string, sessionId: string): boolean {
    const stream = this.streams.get(sessionKey(tenantId, sessionId))
    return !stream || (stream.unwritten.length === 0 && stream.outbox.length === 0 && !stream.sequences.busy)
  }

  /**
   * The sequence of the session's last event subscribers have been given: `afterSequence` for a
   * stream that starts from now and can still resume. From the store when this process does not
   * number the session (it may then be a little behind: a few events replay, none are missed).
   */
  async lastSequence(tenantId: string, sessionId: string): Promise<number> {
    const stream = this.streams.get(sessionKey(tenantId, sessionId))
    return stream ? stream.delivered : this.events.maxSequence(tenantId, sessionId)
  }

  /** The events of a session this instance numbers that were delivered after `afterSequence` and are not written yet. */
  unwrittenAfter(tenantId: string, sessionId: string, afterSequence: number): SessionEvent[] {
    const unwritten = this.streams.get(sessionKey(tenantId, sessionId))?.unwritten ?? []
    return unwritten.filter((event) => event.sequence > afterSequence)
  }

  /** Forgets a session's stream (deleted, unloaded, or now numbered by another instance). */
  forget(tenantId: string, sessionId: string): void {
    this.streams.delete(sessionKey(tenantId, sessionId))
  }

  publish(tenantId: string, sessionId: string, runId: string | null, data: SessionEventData): SessionEvent {
    const stream = this.stream(tenantId, sessionId)
    const event = this.number(stream, tenantId, sessionId, runId, data)
    if (data.type !== 'TOKEN_DELTA') {
      stream.outbox.push({ event, state: 'writing' })
      this.writer.enqueue(event, true)
    } else if (stream.outbox.length > 0) {
      // queued for the writer now, so a run's end that follows writes it with the rest
      stream.outbox.push({ event, state: 'held' })
      this.writer.enqueue(event)
    } else this.release(stream, event)
    return event
  }

  /**
   * Publishes a run's last events only once `write` has stored them, in the caller's transaction
   * with the rest of the run's end. Everything the session published before and not yet written
   * goes into that transaction too (`earlier`, to be stored whatever `write` decides), so the end
   * waits for no write of its own; what the session publishes meanwhile waits behind them, so
   * subscribers still get every sequence in order. No other session's events, and no other
   * session's transaction, are part of it. When `write` returns false or throws, these
   * events are never delivered and their numbers stay unused. Resolves to what `write` resolved to.
   */
  async commit(
    tenantId: string,
    sessionId: string,
    runId: string | null,
    data: readonly SessionEventData[],
    write: (events: SessionEvent[], earlier: SessionEvent[]) => Promise<boolean>,
  ): Promise<boolean> {
    const stream = this.stream(tenantId, sessionId)
    const events = data.map((d) => this.number(stream, tenantId, sessionId, runId, d))
    for (const event of events) stream.outbox.push({ event, state: 'writing' })
    let written = false
    try {
      written = await this.writer.writeWith(tenantId, sessionId, (earlier) => write(events, earlier))
      if (written) stream.stored = true
      return written
    } finally {
      this.settle(stream, events, written ? 'stored' : 'refused')
    }
  }

  /** Marks events of the outbox written (or refused), then delivers from its head what may go. */
  private settle(stream: Stream, events: readonly SessionEvent[], state: 'stored' | 'refused'): void {
    if (stream.outbox.length === 0) return
    for (const outgoing of stream.outbox) if (events.includes(outgoing.event)) outgoing.state = state
    while (stream.outbox.length > 0 && stream.outbox[0]!.state !== 'writing') {
      const { event, state: settled } = stream.outbox.shift()!
      if (settled === 'refused') continue
      if (settled === 'held') stream.unwritten.push(event)
      this.deliver(stream, event)
    }
  }

  private stream(tenantId: string, sessionId: string): Stream {
    const stream = this.streams.get(sessionKey(tenantId, sessionId))
    if (!stream) throw new Error(`event stream of session ${sessionId} was not opened`)
    return stream
  }

  private number(stream: Stream, tenantId: string, sessionId: string, runId: string | null, data: SessionEventData): SessionEvent {
    return { ...data, tenantId, sessionId, runId, sequence: stream.sequences.take(), at: new Date().toISOString() } as SessionEvent
  }

  /** Queues a numbered event for the writer and delivers it live. */
  private release(stream: Stream, event: SessionEvent): void {
    stream.unwritten.push(event)
    this.writer.enqueue(event)
    this.deliver(stream, event)
  }

  private deliver(stream: Stream, event: SessionEvent): void {
    stream.delivered = event.sequence
    this.fanout.pubsub.publish('sessionEvents', sessionKey(event.tenantId, event.sessionId), event)
  }

  /** Writes every event published so far. */
  flush(): Promise<void> {
    return this.writer.flush()
  }

  /** Stops the writer after writing everything. */
  close(): Promise<void> {
    return this.writer.close()
  }

  /**
   * The events of a session (or of one run of it) after `afterSequence`: first what is already
   * stored or waiting to be written, then live. `until` ends the stream after a matching event.
   */
  subscribe(options: {
    tenantId: string
    sessionId: string
    runId?: string
    afterSequence: number | null
    until?: (event: SessionEvent) => boolean
    /** End after the replay (for a run that has already ended). */
    replayOnly?: boolean
    /**
     * Where this instance does not number the session: the events its owner delivered after a
     * sequence and has not written yet (the rest of the stream is in the store or comes live).
     */
    ownersTail?: (afterSequence: number) => Promise<SessionEvent[]>
  }): AsyncIterableIterator<SessionEvent> {
    const { tenantId, sessionId, runId, until } = options
    return new Repeater<SessionEvent>(async (push, stop) => {
      let last = options.afterSequence ?? Number.MAX_SAFE_INTEGER
      let replaying = true
      const arrived: SessionEvent[] = []
      const deliver = (event: SessionEvent) => {
        if (event.sequence <= last) return
        last = event.sequence
        try {
          void push(event)
        } catch {
          // its buffer and the pushes waiting behind it are full: what it holds is still
          // delivered, then the error says where to resume
          stop(new SubscriberTooSlowError(event.sequence - 1))
        }
        if (until?.(event)) stop()
      }
      const key = sessionKey(tenantId, sessionId)
      const unlisten = this.fanout.listen('sessionEvents', key, (event) => {
        if (runId && event.runId !== runId) return
        if (replaying) arrived.push(event)
        else deliver(event)
      })
      try {
        await this.fanout.heard('sessionEvents', key)
        if (options.afterSequence !== null) {
          // what is unwritten now is asked first (of the owner, when another instance numbers the
          // session), so an event written meanwhile is in the store read after it; events
          // delivered from now on arrive through the listener
          const stream = this.streams.get(key)
          const unwritten = stream ? stream.unwritten.slice() : ((await options.ownersTail?.(last)) ?? [])
          const tail = runId ? unwritten.filter((e) => e.runId === runId) : unwritten
          const page = (after: number) =>
            stream?.stored === false
              ? Promise.resolve([])
              : runId
                ? this.events.forRun(tenantId, runId, after, LOG_PAGE)
                : this.events.after(tenantId, sessionId, after, LOG_PAGE)
          for await (const event of replayLog(page, tail, last)) await pushReplayed(event)
        } else {
          last = 0
        }
        // drain what arrived meanwhile, then switch to live delivery with no await in between
        while (arrived.length > 0) for (const event of arrived.splice(0)) if (event.sequence > last) await pushReplayed(event)
        replaying = false
        if (options.replayOnly) stop()
        await stop
      } finally {
        unlisten()
      }

      async function pushReplayed(event: SessionEvent) {
        last = event.sequence
        await push(event)
        if (until?.(event)) stop()
      }
    }, new FixedBuffer(this.options.subscriberBuffer))
  }
}
