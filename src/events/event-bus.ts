import { FixedBuffer, Repeater } from '@repeaterjs/repeater'
import { SubscriberTooSlowError, UnavailableError } from '../domain/errors.js'
import type { SessionEvent } from '../domain/events.js'
import type { Logger } from '../domain/logger.js'
import { type Metrics, NO_METRICS } from '../domain/metrics.js'
import type { EventStore } from '../store/event-store.js'
import type { SessionStore } from '../store/session-store.js'
import { type Fanout, localFanout } from './deployment-pubsub.js'
import { EventBatcher } from './event-batcher.js'
import { LOG_PAGE, replayLog } from './event-log.js'
import { SequenceAllocator, type SequenceSource } from './sequence-allocator.js'
import { SessionStream, sessionTopic, type UnwrittenTail } from './session-stream.js'

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
      const pushReplayed = async (event: SessionEvent) => {
        last = event.sequence
        await push(event)
        if (until?.(event)) stop()
      }
      /** The highest sequence of the session heard live, of any run: a jump past it means events were missed. */
      let heard = 0
      /** Replays what the log and the holder have after `last` (`fromLog`), drains what arrived meanwhile, then goes live with no await in between. */
      const catchUp = async (fromLog: boolean) => {
        if (fromLog) for await (const event of this.replay(options, last)) await pushReplayed(event)
        while (arrived.length > 0) for (const event of arrived.splice(0)) if (event.sequence > last) await pushReplayed(event)
        heard = Math.max(heard, last)
        replaying = false
      }
      const topic = sessionTopic(tenantId, sessionId)
      // what other instances published while the fan-out was down never arrived: it is in the log,
      // or in the holder's unwritten tail, asked once the subscription is in force again (a
      // subscriber from "now" given nothing yet has no place to resume from)
      let askAgain: NodeJS.Timeout | undefined
      const resume = () => {
        replaying = true
        const resumable = options.afterSequence !== null || last > 0
        this.fanout
          .heard('sessionEvents', topic)
          .then(() => catchUp(resumable))
          .catch((error: unknown) => {
            // Redis may be back for listening before it is for asking the holder: ask again when it says
            if (error instanceof UnavailableError) askAgain = setTimeout(resume, error.retryAfterMs)
            else stop(error)
          })
      }
      const unlisten = this.fanout.listen('sessionEvents', topic, (event) => {
        // a sequence skipped: the fan-out lost events (Redis away), and may deliver later ones
        // before it says it is back; a number a refused write left unused costs one read
        const skipped = heard > 0 && event.sequence > heard + 1
        heard = Math.max(heard, event.sequence)
        const wanted = !runId || event.runId === runId
        if (replaying || skipped) {
          if (wanted) arrived.push(event)
          if (!replaying) resume()
        } else if (wanted) deliver(event)
      })
      const unrestored = this.fanout.onRestored(() => {
        if (!replaying) resume()
      })
      try {
        await this.fanout.heard('sessionEvents', topic)
        if (options.afterSequence === null) last = 0
        await catchUp(options.afterSequence !== null)
        if (options.replayOnly) stop()
        await stop
      } finally {
        clearTimeout(askAgain)
        unrestored()
        unlisten()
      }
    }, new FixedBuffer(this.options.subscriberBuffer))
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

export interface SubscribeOptions {
  tenantId: string
  sessionId: string
  runId?: string
  afterSequence: number | null
  until?: (event: SessionEvent) => boolean
  /** End after the replay (for a run that has already ended). */
  replayOnly?: boolean
  /**
   * The events the session's owner delivered after a sequence and has not written yet (asked of
   * it wherever it is); the rest of the stream is in the store or comes live.
   */
  unwrittenTail: (afterSequence: number) => Promise<UnwrittenTail>
}
