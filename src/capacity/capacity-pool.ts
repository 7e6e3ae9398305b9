import { CapacityError } from '../domain/errors.js'
import type { Logger } from '../domain/logger.js'
import { sleep } from '../domain/sleep.js'

export interface CapacityLimits {
  /** Runs holding a lease: from admission to their end. */
  maxAccepted: number
  /** Model calls in flight: the ceiling of the adaptive limit. */
  maxActive: number
  /** Runs allowed to wait for a lease; past that they fail at once. */
  maxWaiting: number
}

/**
 * High enough that the server is never what holds a backend back: the vendor's own limit is
 * found by the adaptive limit (429 / overloaded halve it, successes grow it back).
 */
export const DEFAULT_CAPACITY: CapacityLimits = { maxAccepted: 10_000, maxActive: 1_000, maxWaiting: 10_000 }

export interface CapacitySnapshot extends CapacityLimits {
  accepted: number
  /** Model calls in flight now. */
  active: number
  /** Runs waiting for a lease now. */
  waiting: number
  /** The adaptive limit of model calls in flight, at most maxActive. */
  activeLimit: number
  /** Model calls waiting for the adaptive limit (or a vendor's retry-after) now. */
  callsWaiting: number
  /** Until when the vendor asked for no new calls (retry-after), if it did. */
  pausedUntil: Date | null
}

/** Gives back what was taken; calling it again does nothing. */
export type Release = () => void

interface Waiter {
  grant: () => void
  fail: (reason: unknown) => void
}

/** A FIFO semaphore whose waiters can leave by aborting, and whose size can change. */
class FifoSemaphore {
  used = 0
  readonly waiters: Waiter[] = []
  constructor(public size: number) {}

  /** Takes a slot now if one is free and nobody is ahead; else null. */
  tryTake(): Release | null {
    if (this.used >= this.size || this.waiters.length > 0) return null
    this.used++
    return this.releaser()
  }

  wait(signal: AbortSignal): Promise<Release> {
    return new Promise<Release>((resolve, reject) => {
      const waiter: Waiter = {
        grant: () => {
          signal.removeEventListener('abort', onAbort)
          resolve(this.releaser())
        },
        fail: reject,
      }
      const onAbort = () => {
        const at = this.waiters.indexOf(waiter)
        if (at >= 0) this.waiters.splice(at, 1)
        reject(signal.reason)
      }
      if (signal.aborted) return reject(signal.reason)
      signal.addEventListener('abort', onAbort, { once: true })
      this.waiters.push(waiter)
    })
  }

  resize(size: number): void {
    this.size = size
    while (this.used < this.size && this.waiters.length > 0) {
      this.used++
      this.waiters.shift()!.grant()
    }
  }

  private releaser(): Release {
    let released = false
    return () => {
      if (released) return
      released = true
      const next = this.used <= this.size ? this.waiters.shift() : undefined
      if (next)
        next.grant() // the slot passes straight on, in arrival order
      else this.used--
    }
  }
}

/**
 * One backend's capacity: leases bound the runs accepted at once (waiting FIFO across
 * sessions, up to maxWaiting), permits bound the model calls in flight and are held only
 * around an actual call, so one backend's limits never starve another's. The permits' limit
 * adapts (AIMD): a vendor's 429 or overloaded answer halves it from the calls then in flight
 * and pauses new calls for its retry-after; each success while the limit is what holds calls
 * back grows it by one, up to maxActive.
 */
export class CapacityPool {
  private readonly leases: FifoSemaphore
  private readonly permits: FifoSemaphore
  private pausedUntil = 0

  constructor(
    readonly backendId: string,
    readonly limits: CapacityLimits,
    private readonly logger: Logger,
  ) {
    this.leases = new FifoSemaphore(limits.maxAccepted)
    this.permits = new FifoSemaphore(limits.maxActive)
  }

  /**
   * A lease, now or after waiting in line (`onWait` is told when it has to wait). Past
   * maxWaiting it fails at once with CAPACITY; an abort while waiting leaves the line.
   */
  async lease(signal: AbortSignal, onWait: () => void): Promise<Release> {
    signal.throwIfAborted()
    const now = this.leases.tryTake()
    if (now) return now
    if (this.leases.waiters.length >= this.limits.maxWaiting) {
      throw new CapacityError(
        `backend '${this.backendId}' is at capacity (${this.limits.maxAccepted} runs accepted, ${this.limits.maxWaiting} waiting)`,
        this.backendId,
      )
    }
    onWait()
    return this.leases.wait(signal)
  }

  /**
   * A permit for one model call, FIFO, after any pause the vendor asked for. The pause is waited
   * out holding no permit, so calls of other runs are never queued behind a sleeper; a pause that
   * began while this call waited in line sends it back to wait it out.
   */
  async permit(signal: AbortSignal): Promise<Release> {
    signal.throwIfAborted()
    for (;;) {
      const pause = this.pausedUntil - Date.now()
      if (pause > 0) await sleep(pause, signal)
      const release = this.permits.tryTake() ?? (await this.permits.wait(signal))
      if (this.pausedUntil <= Date.now()) return release
      release()
    }
  }

  /** A call succeeded: grow the limit by one if it is what holds calls back. */
  succeeded(): void {
    const size = this.permits.size
    if (size >= this.limits.maxActive || (this.permits.waiters.length === 0 && this.permits.used < size)) return
    this.permits.resize(size + 1)
    if (size + 1 === this.limits.maxActive)
      this.logger.info('backend call limit restored', { backendId: this.backendId, activeLimit: size + 1 })
  }

  /** The vendor refused for load (429, overloaded): halve the limit and honour its retry-after. */
  throttled(retryAfterMs: number | null): void {
    const limit = Math.max(1, Math.floor(Math.min(this.permits.size, this.permits.used) / 2))
    if (retryAfterMs !== null) this.pausedUntil = Math.max(this.pausedUntil, Date.now() + retryAfterMs)
    if (limit < this.permits.size) this.permits.resize(limit)
    this.logger.warn('backend throttled the calls; limit lowered', {
      backendId: this.backendId,
      activeLimit: this.permits.size,
      active: this.permits.used,
      callsWaiting: this.permits.waiters.length,
      retryAfterMs,
    })
  }

  snapshot(): CapacitySnapshot {
    return {
      ...this.limits,
      accepted: this.leases.used,
      active: this.permits.used,
      waiting: this.leases.waiters.length,
      activeLimit: this.permits.size,
      callsWaiting: this.permits.waiters.length,
      pausedUntil: this.pausedUntil > Date.now() ? new Date(this.pausedUntil) : null,
    }
  }
}

/** The pools of every backend, made on first use from each backend's limits. */
export class CapacityPools {
  private readonly pools = new Map<string, CapacityPool>()

  constructor(private readonly logger: Logger) {}

  get(backend: { id: string; capacity?: Partial<CapacityLimits> | null }): CapacityPool {
    let pool = this.pools.get(backend.id)
    if (!pool) {
      pool = new CapacityPool(backend.id, { ...DEFAULT_CAPACITY, ...backend.capacity }, this.logger)
      this.pools.set(backend.id, pool)
    }
    return pool
  }

  /** Every pool made so far, as it is now. */
  snapshots(): { backendId: string; snapshot: CapacitySnapshot }[] {
    return [...this.pools].map(([backendId, pool]) => ({ backendId, snapshot: pool.snapshot() }))
  }
}
