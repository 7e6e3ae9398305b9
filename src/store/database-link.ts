import { UnavailableError } from '../domain/errors.js'
import type { Logger } from '../domain/logger.js'
import { databaseUnavailable } from './errors.js'

/** How often the database is asked whether it answers (ms). */
const PROBE_MS = 1000

/**
 * Whether the database answers this instance, as a probe every second and the statements that
 * could not reach it find it. A write that must land (a run's start, its wait for tool results,
 * its end) goes through `retried` and waits out an outage; an admission is refused at once while
 * one lasts. Taking over another instance's sessions waits until the database has answered for
 * `steadyAfterMs` since an outage ended (`steady`): their holders could not renew their leases
 * or heartbeats either, and get that long to renew first.
 */
export class DatabaseLink {
  private downSince: number | null = null
  private outageEnded = Number.NEGATIVE_INFINITY
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

  /** Up, and for `steadyAfterMs` at least since the last outage ended. */
  get steady(): boolean {
    return this.up && Date.now() - this.outageEnded >= this.steadyAfterMs
  }

  /** Throws UNAVAILABLE while the database does not answer: nothing may be acknowledged that cannot be written. */
  requireUp(): void {
    if (!this.up) throw databaseUnavailable()
  }

  /** Probes every second until `close`. */
  start(): void {
    this.timer = setInterval(() => void this.probe(), PROBE_MS)
    this.timer.unref()
  }

  /** Asks the database once, and marks it up or down by the answer. */
  async probe(): Promise<void> {
    try {
      await this.ping()
      this.reached()
    } catch (error) {
      if (error instanceof UnavailableError) this.lost()
    }
  }

  /**
   * Runs `write`; each time it fails because the database cannot be reached, runs it again once
   * the database answers. Rejects with that failure once the link is closed (shutdown).
   */
  async retried<T>(write: () => Promise<T>): Promise<T> {
    for (;;) {
      try {
        return await write()
      } catch (error) {
        if (!(error instanceof UnavailableError) || this.closed) throw error
        this.lost()
        await new Promise<void>((resolve, reject) => this.waiting.add({ resolve, reject: () => reject(error) }))
      }
    }
  }

  private lost(): void {
    if (this.downSince !== null || this.closed) return
    this.downSince = Date.now()
    this.logger.error('the database is unreachable; admissions answer UNAVAILABLE and writes wait until it is back', {
      since: new Date(this.downSince).toISOString(),
    })
  }

  private reached(): void {
    if (this.downSince === null) return
    this.outageEnded = Date.now()
    this.logger.info('the database is reachable again', {
      since: new Date(this.downSince).toISOString(),
      downMs: this.outageEnded - this.downSince,
    })
    this.downSince = null
    this.wake((waiter) => waiter.resolve())
  }

  private wake(how: (waiter: { resolve: () => void; reject: () => void }) => void): void {
    const waiting = [...this.waiting]
    this.waiting.clear()
    for (const waiter of waiting) how(waiter)
  }

  /** Stops probing; writes waiting for the database fail with what stopped them. */
  close(): void {
    this.closed = true
    if (this.timer) clearInterval(this.timer)
    this.timer = null
    this.wake((waiter) => waiter.reject())
  }
}
