import { FixedBuffer, Repeater } from '@repeaterjs/repeater'
import type { SessionEvent } from '../domain/events.js'
import type { Logger } from '../domain/logger.js'
import { type Metrics, NO_METRICS } from '../domain/metrics.js'
import type { EventStore } from '../store/event-store.js'
import type { SessionStore } from '../store/session-store.js'
import { type Fanout, localFanout } from './deployment-pubsub.js'
import { EventBatcher } from './event-batcher.js'
import { LOG_PAGE, replayLog } from './event-log.js'
import { SequenceAllocator, type SequenceSource } from './sequence-allocator.js'
import { SessionStream, type UnwrittenTail } from './session-stream.js'
import { SessionSubscriber, type SubscriberOptions } from './session-subscriber.js'

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

/**
 * The hub of session event streams: it opens a session's stream for the actor that holds the
 * session (wired to the fan-out and the shared batcher) and replays a session's events to any
 * subscriber, then continues live. It keeps no session's state: each stream is its actor's.
 */
export class SessionEventBus {
  private readonly batcher: EventBatcher

  constructor(
    private readonly events: EventStore,
    private readonly sessions: SessionStore,
    private readonly logger: Logger,
    private readonly options: EventBusOptions = DEFAULT_EVENT_BUS_OPTIONS,
    /** Where delivered events go to every subscriber: in memory, or every instance's through Redis. */
    private readonly fanout: Fanout = localFanout(),
    metrics: Metrics = NO_METRICS,
  ) {
    this.batcher = new EventBatcher(events, logger, options, metrics)
  }

  /**
   * Opens the stream of a session this instance just came to hold: its numbering resumes above
   * anything reserved before (so above any event a crashed process may have published), with a
   * block reserved first.
   */
  async open(tenantId: string, sessionId: string): Promise<SessionStream> {
    const sequences = await SequenceAllocator.resume(this.sequenceSource(tenantId, sessionId), this.options.sequenceBlock)
    return new SessionStream(tenantId, sessionId, sequences, true, this.batcher, this.fanout)
  }

  /**
   * Opens the stream of a session just created here, whose row reserved `firstCeiling`: nothing
   * to read, and nothing to replay from the store until one of its events is written.
   */
  openCreated(tenantId: string, sessionId: string): SessionStream {
    const sequences = SequenceAllocator.fresh(this.sequenceSource(tenantId, sessionId), this.options.sequenceBlock)
    return new SessionStream(tenantId, sessionId, sequences, false, this.batcher, this.fanout)
  }

  private sequenceSource(tenantId: string, sessionId: string): SequenceSource {
    return {
      reserved: () => this.sessions.sequenceCeiling(tenantId, sessionId),
      persisted: () => this.events.maxSequence(tenantId, sessionId),
      reserve: (ceiling) => this.sessions.raiseSequenceCeiling(tenantId, sessionId, ceiling),
      lower: (from, to) => this.sessions.lowerSequenceCeiling(tenantId, sessionId, from, to),
      failed: (error) => this.logger.error('could not reserve event sequences', { sessionId, error: (error as Error).message }),
    }
  }

  /** The sequence ceiling a new session's row is created with: its first block, reserved with the row. */
  get firstCeiling(): number {
    return this.options.sequenceBlock
  }

  /** Writes every event published so far. */
  flush(): Promise<void> {
    return this.batcher.flush()
  }

  /** Stops the batcher after writing everything. */
  close(): Promise<void> {
    return this.batcher.close()
  }

  /**
   * The events of a session (or of one run of it) after `afterSequence`: first what is already
   * stored or waiting to be written, then live. `until` ends the stream after a matching event.
   */
  subscribe(options: SubscribeOptions): AsyncIterableIterator<SessionEvent> {
    return new Repeater<SessionEvent>(
      (push, stop) => new SessionSubscriber(options, push, stop, this.fanout, (after) => this.replay(options, after)).run(),
      new FixedBuffer(this.options.subscriberBuffer),
    )
  }

  /**
   * What a subscriber missed after `after`: the owner's unwritten tail is asked first, so an
   * event written meanwhile is in the store read after it (events delivered from now on arrive
   * through the subscriber's listener).
   */
  private async *replay({ tenantId, sessionId, runId, unwrittenTail }: SubscribeOptions, after: number) {
    const { events, anyStored } = await unwrittenTail(after)
    const tail = runId ? events.filter((e) => e.runId === runId) : events
    const page = (from: number) =>
      !anyStored
        ? Promise.resolve([])
        : runId
          ? this.events.forRun(tenantId, runId, from, LOG_PAGE)
          : this.events.after(tenantId, sessionId, from, LOG_PAGE)
    yield* replayLog(page, tail, after)
  }
}

export interface SubscribeOptions extends SubscriberOptions {
  /**
   * The events the session's owner delivered after a sequence and has not written yet (asked of
   * it wherever it is); the rest of the stream is in the store or comes live.
   */
  unwrittenTail: (afterSequence: number) => Promise<UnwrittenTail>
}
