import type { CapacityPools, Release } from '../capacity/capacity-pool.js'
import type { Backend } from '../domain/catalog.js'

/**
 * A run's leases on backend capacity: one a backend, taken on first use (waiting in line when
 * the backend is full), all given back at once when the run waits for tool results or ends.
 */
export class RunLeases {
  private readonly held = new Map<string, Release>()

  constructor(
    private readonly capacity: CapacityPools,
    private readonly signal: AbortSignal,
    /** Told when the run has to wait in line for a lease, and when it got one. */
    private readonly listener: { waiting(): void; leased(): void },
  ) {}

  /** The run's lease on `backend`, taken now or after waiting in line; honours the run's abort signal. */
  async take(backend: Backend): Promise<Release> {
    const held = this.held.get(backend.id)
    if (held) return held
    const release = await this.capacity.get(backend).lease(this.signal, () => this.listener.waiting())
    this.held.set(backend.id, release)
    this.listener.leased()
    return release
  }

  releaseAll(): void {
    for (const release of this.held.values()) release()
    this.held.clear()
  }
}
