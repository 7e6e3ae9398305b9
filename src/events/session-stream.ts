import type { SessionEvent, SessionEventData } from '../domain/events.js'
import type { Fanout } from './deployment-pubsub.js'
import type { EventBatcher } from './event-batcher.js'
import type { SequenceAllocator } from './sequence-allocator.js'

/** A session's topic in the fan-out: its subscribers take its events from there. */
export const sessionTopic = (tenantId: string, sessionId: string) => `${tenantId}/${sessionId}`

/** An event numbered but not yet delivered, because it, or one before it, waits for its write. */
interface Outgoing {
  event: SessionEvent
  /**
   * writing: delivered once stored; held: a token delta queued for the batcher, delivered at its
   * turn whether stored or not; stored: delivered at its turn; refused: never delivered.
   */
  state: 'writing' | 'held' | 'stored' | 'refused'
}

/** What the owner of a session has delivered and not written yet, as a subscriber's replay needs it. */
export interface UnwrittenTail {
  events: SessionEvent[]
  /** Whether any of the session's events may be in the store (false: nothing to read there). */
  anyStored: boolean
}

/** The tail of a session nobody holds loaded: all of it is written. */
export const NOTHING_UNWRITTEN: UnwrittenTail = Object.freeze({ events: [], anyStored: true })

/**
 * One session's event stream, owned by the session's actor on the instance that holds it: it
 * numbers the session's events, delivers them to the fan-out in sequence order, and writes them
 * through a write chain of its own — one write at a time, a batch the batcher takes or a
 * transaction `commit` hands them to — so the log never holds an event while one before it is
 * still being written, and no session waits for another's transaction.
 *
 * `publish` is synchronous: a token delta goes live at once and waits for the batcher; any other
 * event (a lifecycle event: queue entries, run starts, steers) goes live only once it is written,
 * so what a subscriber was told is what the log holds; what the session publishes meanwhile is
 * delivered after it, in sequence order.
 */
export class SessionStream {
  /** Delivered but not yet written, in sequence order. */
  private readonly unwritten: SessionEvent[] = []
  /** Numbered and not yet delivered, in sequence order: empty unless a lifecycle event's write is under way. */
  private readonly outbox: Outgoing[] = []
  /** Published and not yet taken by a write, in sequence order. */
  readonly queued: SessionEvent[] = []
  /** Settles once every write of this stream started so far has ended; never rejects. */
  private chain: Promise<void> = Promise.resolve()
  /** Writes of this stream's events under way (its commits, or a batch holding some). */
  private writing = 0
  /** The sequence of the last event delivered to subscribers (numbered but held ones are not yet). */
  private delivered: number

  constructor(
    readonly tenantId: string,
    readonly sessionId: string,
    private readonly sequences: SequenceAllocator,
    /** Whether any of its events may be in the store; false for a session created here until one is written. */
    private stored: boolean,
    private readonly batcher: EventBatcher,
    private readonly fanout: Fanout,
  ) {
    this.delivered = sequences.last
  }

  /** The sequence of the last event subscribers have been given: `afterSequence` for a stream that starts from now. */
  get lastDelivered(): number {
    return this.delivered
  }

  /** Whether nothing is waiting to be written, committed or reserved. */
  get quiet(): boolean {
    return this.unwritten.length === 0 && this.outbox.length === 0 && !this.sequences.busy
  }

  /**
   * Lets go of the numbering (a clean handoff: the session is forgotten here, nothing more is
   * published): with every event written, the next owner numbers right after the last one.
   */
  async handOff(): Promise<void> {
    if (this.quiet) await this.sequences.handOff()
  }

  /** Whether nothing is queued and no write is under way (the batcher may let go of it). */
  get settled(): boolean {
    return this.writing === 0 && this.queued.length === 0
  }

  /** Whether the batcher may take its queued events now: there are some, and no write of its events is under way. */
  get ready(): boolean {
    return this.writing === 0 && this.queued.length > 0
  }

  /** Settles once every write started so far has ended. */
  get writesEnded(): Promise<void> {
    return this.chain
  }

  /** The events delivered after `afterSequence` and not written yet. */
  unwrittenAfter(afterSequence: number): UnwrittenTail {
    return { events: this.unwritten.filter((event) => event.sequence > afterSequence), anyStored: this.stored }
  }

  publish(runId: string | null, data: SessionEventData): SessionEvent {
    const event = this.number(runId, data)
    if (data.type !== 'TOKEN_DELTA') {
      this.outbox.push({ event, state: 'writing' })
      this.enqueue(event, true)
    } else if (this.outbox.length > 0) {
      // queued for a write now, so a run's end that follows writes it with the rest
      this.outbox.push({ event, state: 'held' })
      this.enqueue(event, false)
    } else {
      this.unwritten.push(event)
      this.enqueue(event, false)
      this.deliver(event)
    }
    return event
  }

  /**
   * Publishes a run's last events only once `write` has stored them, in the caller's transaction
   * with the rest of the run's end. Everything the session published before and not yet written
   * goes into that transaction too (`earlier`, to be stored whatever `write` decides), so the end
   * waits for no write of its own; what the session publishes meanwhile waits behind them, so
   * subscribers still get every sequence in order. When `write` returns false or throws, these
   * events are never delivered and their numbers stay unused. Resolves to what `write` resolved to.
   */
  async commit(
    runId: string | null,
    data: readonly SessionEventData[],
    write: (events: SessionEvent[], earlier: SessionEvent[]) => Promise<boolean>,
  ): Promise<boolean> {
    const events = data.map((d) => this.number(runId, d))
    for (const event of events) this.outbox.push({ event, state: 'writing' })
    let written = false
    try {
      written = await this.inChain(async () => {
        const earlier = this.queued.splice(0)
        try {
          const value = await write(events, earlier)
          this.batchWritten(earlier)
          this.batcher.counted(earlier)
          return value
        } catch (error) {
          this.requeue(earlier)
          throw error
        }
      })
      if (written) this.stored = true
      return written
    } finally {
      this.settle(events, written ? 'stored' : 'refused')
    }
  }

  /** Runs `write` after every write of the stream started before it, counting it as under way. */
  inChain<T>(write: () => Promise<T>): Promise<T> {
    this.writing++
    this.batcher.track(this)
    const result = this.chain.then(write)
    const ended = () => {
      this.writing--
      if (this.settled) this.batcher.untrack(this)
    }
    this.chain = result.then(ended, ended)
    return result
  }

  /** Events a failed write took: queued again ahead of later ones, and retried. */
  requeue(events: readonly SessionEvent[]): void {
    this.queued.unshift(...events)
    if (this.queued.length > 0) this.batcher.retryLater()
  }

  /** Events a batch stored: delivered ones leave the unwritten tail, waiting ones may go. */
  batchWritten(events: readonly SessionEvent[]): void {
    if (events.length === 0) return
    this.stored = true
    this.settleWritten(events, 'stored')
  }

  /** Events the database refused for good: they will never be stored. */
  batchRefused(events: readonly SessionEvent[]): void {
    this.settleWritten(events, 'refused')
  }

  private settleWritten(events: readonly SessionEvent[], outcome: 'stored' | 'refused'): void {
    const waiting: SessionEvent[] = []
    for (const event of events) {
      // first in line unless an earlier end's write failed and its events wait for a retry
      const at = this.unwritten.indexOf(event)
      if (at !== -1) this.unwritten.splice(at, 1)
      else waiting.push(event)
    }
    if (waiting.length > 0) this.settle(waiting, outcome)
  }

  /** Marks events of the outbox written (or refused), then delivers from its head what may go. */
  private settle(events: readonly SessionEvent[], state: 'stored' | 'refused'): void {
    if (this.outbox.length === 0) return
    for (const outgoing of this.outbox) if (events.includes(outgoing.event)) outgoing.state = state
    while (this.outbox.length > 0 && this.outbox[0]!.state !== 'writing') {
      const { event, state: settled } = this.outbox.shift()!
      if (settled === 'refused') continue
      if (settled === 'held') this.unwritten.push(event)
      this.deliver(event)
    }
  }

  private number(runId: string | null, data: SessionEventData): SessionEvent {
    const { tenantId, sessionId } = this
    return { ...data, tenantId, sessionId, runId, sequence: this.sequences.take(), at: new Date().toISOString() } as SessionEvent
  }

  private enqueue(event: SessionEvent, soon: boolean): void {
    this.queued.push(event)
    this.batcher.track(this)
    this.batcher.schedule(soon)
  }

  private deliver(event: SessionEvent): void {
    this.delivered = event.sequence
    this.fanout.pubsub.publish('sessionEvents', sessionTopic(this.tenantId, this.sessionId), event)
  }
}
