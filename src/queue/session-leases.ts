import { StorageFullError, UnavailableError } from '../domain/errors.js'
import type { Logger } from '../domain/logger.js'
import type { DatabaseLink } from '../store/database-link.js'
import type { SessionStore } from '../store/session-store.js'

/** Whether this instance drains a session now; when not, which instance does (null: no such session). */
export type Claim = { mine: true } | { mine: false; owner: string | null }

/** A new session's lease, written with its row. */
export interface NewLease {
  leaseOwner: string
  leaseExpiresAt: Date
}

// tenant ids are operator text: a newline cannot be in them
const key = (tenantId: string, sessionId: string) => `${tenantId}\n${sessionId}`
const parts = (held: string) => {
  const [tenantId, id] = held.split('\n') as [string, string]
  return { tenantId, id }
}

/** What the leases need of the queues: which held sessions have work, and telling them of a loss. */
export interface LeaseHolder {
  /** Whether the session has anything outstanding, running or unwritten: its lease is renewed. */
  hasWork(tenantId: string, sessionId: string): boolean
  /** The session is no longer held here: stop running it and forget it; settles once it let go. */
  lost(tenantId: string, sessionId: string): Promise<void>
}

/**
 * Session leases: a row lease on the session (owner, expiry) taken with a conditional
 * update, lost when not renewed within `ttlMs`. An instance acts on a session only while its own
 * clock says the lease is valid, so it stops before another may take over; while the database
 * does not answer, nobody can take over, so it goes on (docs/architecture.md). A session's lease is
 * renewed while it has work; an idle one lapses and is forgotten here, so whichever instance uses
 * it next loads it from the store. One instance alone runs the same code under its own id.
 */
export class SessionLeases {
  /** Sessions held, with when this instance must stop assuming it holds them (ms). */
  private readonly held = new Map<string, number>()
  private timer: NodeJS.Timeout | null = null
  private released = false

  constructor(
    private readonly sessions: SessionStore,
    readonly instanceId: string,
    private readonly ttlMs: number,
    private readonly renewMs: number,
    private readonly holder: LeaseHolder,
    /** While the database is away nobody can take a session over, so what is held stays held; takeovers wait until it is steady. */
    private readonly database: DatabaseLink,
    private readonly logger: Logger,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Claims the session unless another live instance holds it. */
  async claim(tenantId: string, sessionId: string): Promise<Claim> {
    if (this.released) return { mine: false, owner: null }
    const held = key(tenantId, sessionId)
    if (this.holds(tenantId, sessionId)) return { mine: true }
    // lapsed while idle: what this instance kept of it may be behind another owner's
    if (this.held.has(held) && !this.holder.hasWork(tenantId, sessionId)) await this.lose(held)
    const asked = this.clock()
    const owner = await this.sessions.claimLease(tenantId, sessionId, this.instanceId, this.ttlMs, this.database.steady)
    if (owner !== this.instanceId) return { mine: false, owner }
    this.held.set(held, asked + this.ttlMs - this.renewMs)
    return { mine: true }
  }

  /**
   * The instance holding the session's lease now, as the store says, without claiming it; null
   * when none does (none ever did, it lapsed, or it names this instance, which no longer holds it).
   */
  async leaseHolder(tenantId: string, sessionId: string): Promise<string | null> {
    const lease = await this.sessions.leaseOf(tenantId, sessionId)
    if (!lease?.owner || lease.owner === this.instanceId || !lease.expiresAt || lease.expiresAt.getTime() <= Date.now()) return null
    return lease.owner
  }

  /** Whether this instance holds the session now, by its own clock (no read). */
  holds(tenantId: string, sessionId: string): boolean {
    return (this.held.get(key(tenantId, sessionId)) ?? 0) > this.clock()
  }

  /** The lease a session created here is written with; `created` then holds it, with no claim. */
  newLease(): NewLease {
    return { leaseOwner: this.instanceId, leaseExpiresAt: new Date(Date.now() + this.ttlMs) }
  }

  created(tenantId: string, sessionId: string, lease: NewLease): void {
    // the lease's time left, on this instance's clock, less the margin every held lease keeps
    const left = lease.leaseExpiresAt.getTime() - Date.now()
    this.held.set(key(tenantId, sessionId), this.clock() + left - this.renewMs)
  }

  /** Renews what this instance holds (and learns what it lost) every `renewMs`, until `release`. */
  start(): void {
    this.timer = setInterval(() => void this.renew(), this.renewMs)
    this.timer.unref()
  }

  /** Renews the leases of the sessions with work (learning which were lost); idle ones past their time lapse. */
  private async renew(): Promise<void> {
    const working: string[] = []
    for (const [held, until] of this.held) {
      const { tenantId, id } = parts(held)
      if (this.holder.hasWork(tenantId, id)) working.push(held)
      else if (until <= this.clock()) void this.lose(held)
    }
    // holding nothing with work, there is nothing to renew: an idle instance asks nothing
    if (working.length === 0) return
    const asked = this.clock()
    try {
      const still = await this.sessions.renewLeases(this.instanceId, this.ttlMs, working.map(parts))
      const renewed = new Set(still.map((s) => key(s.tenantId, s.id)))
      for (const held of working) {
        if (!renewed.has(held)) void this.lose(held)
        else if (this.held.has(held)) this.held.set(held, asked + this.ttlMs - this.renewMs)
      }
    } catch (error) {
      this.logger.error('could not renew session leases', { error: (error as Error).message })
      this.database.failed(error)
      // unreachable or full, the database takes no other instance's claim either: the runs go on here
      if (error instanceof UnavailableError || error instanceof StorageFullError) return
      for (const held of working) if ((this.held.get(held) ?? 0) <= this.clock()) void this.lose(held)
    }
  }

  private lose(held: string): Promise<void> {
    this.held.delete(held)
    const { tenantId, id } = parts(held)
    return this.holder.lost(tenantId, id)
  }

  /** Gives up every session (draining): another instance may take them at once. */
  async release(): Promise<void> {
    this.released = true
    if (this.timer) clearInterval(this.timer)
    this.timer = null
    this.held.clear()
    await this.sessions.releaseLeases(this.instanceId)
  }
}
