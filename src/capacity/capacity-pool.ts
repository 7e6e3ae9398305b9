import { CapacityError } from '../domain/errors.js'

export interface CapacityLimits {
  /** Runs holding a lease: from admission to their end. */
  maxAccepted: number
  /** Model calls in flight. */
  maxActive: number
  /** Runs allowed to wait for a lease; past that they fail at once. */
  maxWaiting: number
}

export const DEFAULT_CAPACITY: CapacityLimits = { maxAccepted: 64, maxActive: 16, maxWaiting: 256 }

export interface CapacitySnapshot extends CapacityLimits {
  accepted: number
  active: number
  waiting: number
}

/** Gives back what was taken; calling it again does nothing. */
export type Release = () => void

interface Waiter {
  grant: () => void
  fail: (reason: unknown) => void
}

/** A FIFO semaphore whose waiters can leave by aborting. */
class FifoSemaphore {
  used = 0
  readonly waiters: Waiter[] = []
  constructor(private readonly size: number) {}

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

  private releaser(): Release {
    let released = false
    return () => {
      if (released) return
      released = true
      const next = this.waiters.shift()
      if (next)
        next.grant() // the slot passes straight on, in arrival order
      else this.used--
    }
  }
}

/**
 * One backend's capacity: leases bound the runs accepted at once (waiting FIFO across
 * sessions, up to maxWaiting), permits bound the model calls in flight and are held only
 * around an actual call, so one backend's limits never starve another's.
 */
export class CapacityPool {
  private readonly leases: FifoSemaphore
  private readonly permits: FifoSemaphore

  constructor(
    readonly backendId: string,
    readonly limits: CapacityLimits,
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

  /** A permit for one model call, FIFO. */
  async permit(signal: AbortSignal): Promise<Release> {
    signal.throwIfAborted()
    return this.permits.tryTake() ?? this.permits.wait(signal)
  }

  snapshot(): CapacitySnapshot {
    return { ...this.limits, accepted: this.leases.used, active: this.permits.used, waiting: this.leases.waiters.length }
  }
}

/** The pools of every backend, made on first use from each backend's limits. */
export class CapacityPools {
  private readonly pools = new Map<string, CapacityPool>()

  get(backend: { id: string; capacity?: Partial<CapacityLimits> | null }): CapacityPool {
    let pool = this.pools.get(backend.id)
    if (!pool) {
      pool = new CapacityPool(backend.id, { ...DEFAULT_CAPACITY, ...backend.capacity })
      this.pools.set(backend.id, pool)
    }
    return pool
  }
}
