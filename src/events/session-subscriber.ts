import type { Push, Stop } from '@repeaterjs/repeater'
import { SubscriberTooSlowError, UnavailableError } from '../domain/errors.js'
import type { SessionEvent } from '../domain/events.js'
import type { Fanout } from './deployment-pubsub.js'
import { sessionTopic } from './session-stream.js'

/** What a subscriber asks for: a session, or one run of it, after a sequence; `until` ends it after a matching event. */
export interface SubscriberOptions {
  tenantId: string
  sessionId: string
  runId?: string
  afterSequence: number | null
  until?: (event: SessionEvent) => boolean
  /** End after the replay (for a run that has already ended). */
  replayOnly?: boolean
}

/**
 * One subscriber of a session's events: it listens first, replays what it missed (`replay`: the
 * holder's unwritten tail and the log), then drains what arrived meanwhile and goes live with no
 * await in between, so nothing is missed or given twice. It catches up the same way whenever the
 * fan-out may have lost events: when it says it is back, or when a live sequence skips one.
 */
export class SessionSubscriber {
  /** The sequence of the last event given to the subscriber. */
  private last: number
  /** The highest sequence of the session heard live, of any run: a jump past it means events were missed. */
  private heard = 0
  /** While catching up, live events wait in `arrived`. */
  private replaying = true
  private readonly arrived: SessionEvent[] = []
  private askAgain: NodeJS.Timeout | undefined

  constructor(
    private readonly options: SubscriberOptions,
    private readonly push: Push<SessionEvent>,
    private readonly stop: Stop,
    private readonly fanout: Fanout,
    /** What the holder and the log have after a sequence. */
    private readonly replay: (after: number) => AsyncIterable<SessionEvent>,
  ) {
    this.last = options.afterSequence ?? Number.MAX_SAFE_INTEGER
  }

  private get topic(): string {
    return sessionTopic(this.options.tenantId, this.options.sessionId)
  }

  /** Streams until stopped, then lets go of its listeners. */
  async run(): Promise<void> {
    const { afterSequence, replayOnly } = this.options
    const unlisten = this.fanout.listen('sessionEvents', this.topic, (event) => this.heardLive(event))
    const unrestored = this.fanout.onRestored(() => {
      if (!this.replaying) this.resume()
    })
    try {
      await this.fanout.heard('sessionEvents', this.topic)
      if (afterSequence === null) this.last = 0
      await this.catchUp(afterSequence !== null)
      if (replayOnly) this.stop()
      await this.stop
    } finally {
      clearTimeout(this.askAgain)
      unrestored()
      unlisten()
    }
  }

  private heardLive(event: SessionEvent): void {
    // a sequence skipped: the fan-out lost events (Redis away), and may deliver later ones
    // before it says it is back; a number a refused write left unused costs one read
    const skipped = this.heard > 0 && event.sequence > this.heard + 1
    this.heard = Math.max(this.heard, event.sequence)
    const wanted = !this.options.runId || event.runId === this.options.runId
    if (this.replaying || skipped) {
      if (wanted) this.arrived.push(event)
      if (!this.replaying) this.resume()
    } else if (wanted) this.deliver(event)
  }

  private deliver(event: SessionEvent): void {
    if (event.sequence <= this.last) return
    this.last = event.sequence
    try {
      void this.push(event)
    } catch {
      // its buffer and the pushes waiting behind it are full: what it holds is still
      // delivered, then the error says where to resume
      this.stop(new SubscriberTooSlowError(event.sequence - 1))
    }
    if (this.options.until?.(event)) this.stop()
  }

  private async pushReplayed(event: SessionEvent): Promise<void> {
    this.last = event.sequence
    await this.push(event)
    if (this.options.until?.(event)) this.stop()
  }

  /** Replays what the log and the holder have after `last` (`fromLog`), drains what arrived meanwhile, then goes live with no await in between. */
  private async catchUp(fromLog: boolean): Promise<void> {
    if (fromLog) for await (const event of this.replay(this.last)) await this.pushReplayed(event)
    while (this.arrived.length > 0)
      for (const event of this.arrived.splice(0)) if (event.sequence > this.last) await this.pushReplayed(event)
    this.heard = Math.max(this.heard, this.last)
    this.replaying = false
  }

  /**
   * What other instances published while the fan-out was down never arrived: it is in the log,
   * or in the holder's unwritten tail, asked once the subscription is in force again (a
   * subscriber from "now" given nothing yet has no place to resume from).
   */
  private resume(): void {
    this.replaying = true
    const resumable = this.options.afterSequence !== null || this.last > 0
    this.fanout
      .heard('sessionEvents', this.topic)
      .then(() => this.catchUp(resumable))
      .catch((error: unknown) => {
        // Redis may be back for listening before it is for asking the holder: ask again when it says
        if (error instanceof UnavailableError) this.askAgain = setTimeout(() => this.resume(), error.retryAfterMs)
        else this.stop(error)
      })
  }
}
