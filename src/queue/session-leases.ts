import type { Logger } from '../domain/logger.js'
import type { SessionStore } from '../store/session-store.js'

/** Whether this instance drains a session now; when not, which instance does (null: no such session). */
export type Claim = { mine: true } | { mine: false; owner: string | null }

/** Who drains each session's queue. */
export interface SessionOwnership {
  /** Claims the session unless another live instance holds it. */
  claim(tenantId: string, sessionId: string): Promise<Claim>
  /** Renews what this instance holds (and learns what it lost) every `renewMs`, until `release`. */
  start(): void
  /** Gives up every session (draining): another instance may take them at once. */
  release(): Promise<void>
}

/** One instance on its database: it drains every session. */
export const SOLE_OWNERSHIP: SessionOwnership = {
  claim: async () => ({ mine: true }),
  start: () => {},
  release: async () => {},
}

// tenant ids are operator text: a newline cannot be in them
const key = (tenantId: string, sessionId: string) => `${tenantId}\n${sessionId}`

/**
 * Session leases for several instances on one database (DESIGN §6): a row lease on the session
 * (owner, expiry) taken with a conditional update, renewed in one statement with the heartbeat,
 * lost when not renewed within `ttlMs`. An instance acts on a session only while its own clock
 * says the lease is valid, so it stops before another may take over.
 */
export class SessionLeases implements SessionOwnership {
  /** Sessions held, with when this instance must stop assuming it holds them (ms). */
  private readonly held = new Map<string, number>()
  private timer: NodeJS.Timeout | null = null
  private released = false

  constructor(
    private readonly sessions: SessionStore,
    readonly instanceId: string,
    private readonly ttlMs: number,
    private readonly renewMs: number,
    /** Told about each session this instance held and lost (it stops running it). */
    private readonly onLost: (tenantId: string, sessionId: string) => void,
    private readonly logger: Logger,
  ) {}

  async claim(tenantId: string, sessionId: string): Promise<Claim> {
    if (this.released) return { mine: false, owner: null }
    const until = this.held.get(key(tenantId, sessionId))
    if (until !== undefined && until > Date.now()) return { mine: true }
    const asked = Date.now()
    const owner = await this.sessions.claimLease(tenantId, sessionId, this.instanceId, this.ttlMs)
    if (owner !== this.instanceId) return { mine: false, owner }
    this.held.set(key(tenantId, sessionId), asked + this.ttlMs - this.renewMs)
    return { mine: true }
  }

  start(): void {
    this.timer = setInterval(() => void this.renew(), this.renewMs)
    this.timer.unref()
  }

  private async renew(): Promise<void> {
    // holding nothing, there is nothing to renew or to learn it lost: an idle instance asks nothing
    if (this.held.size === 0) return
    const asked = Date.now()
    try {
      const still = new Set((await this.sessions.renewLeases(this.instanceId, this.ttlMs)).map((s) => key(s.tenantId, s.id)))
      for (const [held] of this.held) if (!still.has(held)) this.lose(held)
      for (const held of still) if (this.held.has(held)) this.held.set(held, asked + this.ttlMs - this.renewMs)
    } catch (error) {
      this.logger.error('could not renew session leases', { error: (error as Error).message })
      for (const [held, until] of this.held) if (until <= Date.now()) this.lose(held)
    }
  }

  private lose(held: string): void {
    this.held.delete(held)
    const [tenantId, sessionId] = held.split('\n') as [string, string]
    this.onLost(tenantId, sessionId)
  }

  async release(): Promise<void> {
    this.released = true
    if (this.timer) clearInterval(this.timer)
    this.timer = null
    this.held.clear()
    await this.sessions.releaseLeases(this.instanceId)
  }
}
