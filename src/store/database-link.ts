import { StorageFullError, UnavailableError } from '../domain/errors.js'
import type { Logger } from '../domain/logger.js'
import { databaseUnavailable } from './errors.js'

/** How often the database is asked whether it answers (ms). */
const PROBE_MS = 1000

/**
 * Whether the database answers this instance. It learns that the database is away from a
 * statement that could not reach it (a run's write, a lease renewal, the reaper's look), then
 * probes every second until it answers; an idle server with a healthy database asks nothing. A
 * write that must land (a run's start, its wait for tool results, its end) goes through
 * `retried` and waits out an outage; an admission is refused at once while one lasts. Taking over
 * another instance's sessions waits until the database has answered for `steadyAfterMs` since an
 * outage ended or a write found the disk full (`steady`): their holders could not renew their
 * leases or heartbeats either, and get that long to renew first.
 */
export class DatabaseLink {
  private downSince: number | null = null
  /** When an outage last ended, or a write last found the disk full. */
  private troubledAt = Number.NEGATIVE_INFINITY
  private readonly waiting = new Set<{ resolve: () => void; reject: () => void }>()
  private timer: NodeJS.Timeout | null = null
  private closed = false

  constructor(
    private readonly ping: () => Promise<void>,
    private readonly logger: Logger,
    private readonly steadyAfterMs: number,
  ) {}

  get up(): boolean {
    return this.downSince === null
  }

  /** Up, and for `steadyAfterMs` at least since the last outage ended or a write found the disk full. */
  get steady(): boolean {
    return this.up && Date.now() - this.troubledAt >= this.steadyAfterMs
  }

  /** Throws UNAVAILABLE while the database does not answer: nothing may be acknowledged that cannot be written. */
  requireUp(): void {
    if (!this.up) throw databaseUnavailable()
  }

  /** Asks the database once and marks it up or down by the answer; an answer lets waiting writes try again. */
  private async probe(): Promise<void> {
    try {
      await this.ping()
    } catch (error) {
      if (error instanceof UnavailableError) this.lost()
      return
    }
    this.reached()
    this.wake((waiter) => waiter.resolve())
    if (this.waiting.size === 0) this.stopProbing()
  }

  /** Probes every second while the database is away or a write waits for it. */
  private probing(): void {
    if (this.timer || this.closed) return
    this.timer = setInterval(() => void this.probe(), PROBE_MS)
    this.timer.unref()
  }

  private stopProbing(): void {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
  }

  /** A write failed: an unreachable database is an outage; a full disk keeps takeovers waiting. */
  failed(error: unknown): void {
    if (error instanceof UnavailableError) this.lost()
    else if (error instanceof StorageFullError) this.troubledAt = Date.now()
  }

  /**
   * Runs `write`; each time it fails because the database cannot be reached, runs it again once
   * the database answers. Rejects with that failure once the link is closed (shutdown).
   */
  retried<T>(write: () => Promise<T>): Promise<T> {
    return this.retrying(write, (error) => error instanceof UnavailableError)
  }

  /** As `retried`, and also each second while the disk is full: for a write that must land once there is room. */
  retriedUntilRoom<T>(write: () => Promise<T>): Promise<T> {
    return this.retrying(write, (error) => error instanceof UnavailableError || error instanceof StorageFullError)
  }

  private async retrying<T>(write: () => Promise<T>, waitsOut: (error: unknown) => boolean): Promise<T> {
    for (;;) {
      try {
        return await write()
      } catch (error) {
        if (!waitsOut(error) || this.closed) throw error
        this.failed(error)
        // the next probe that gets an answer wakes it
        const waited = new Promise<void>((resolve, reject) => this.waiting.add({ resolve, reject: () => reject(error) }))
        this.probing()
        await waited
      }
    }
  }

  private lost(): void {
    if (this.downSince !== null || this.closed) return
    this.downSince = Date.now()
    this.probing()
    this.logger.error('the database is unreachable; admissions answer UNAVAILABLE and writes wait until it is back', {
      since: new Date(this.downSince).toISOString(),
    })
  }

  private reached(): void {
    if (this.downSince === null) return
    this.troubledAt = Date.now()
    this.logger.info('the database is reachable again', {
      since: new Date(this.downSince).toISOString(),
      downMs: this.troubledAt - this.downSince,
    })
    this.downSince = null
  }

  private wake(how: (waiter: { resolve: () => void; reject: () => void }) => void): void {
    const waiting = [...this.waiting]
    this.waiting.clear()
    for (const waiter of waiting) how(waiter)
  }

  /** Stops probing; writes waiting for the database fail with what stopped them. */
  close(): void {
    this.closed = true
    this.stopProbing()
    this.wake((waiter) => waiter.reject())
  }
}
