import type { SessionEventBus } from '../events/event-bus.js'
import type { QueueStore } from '../store/queue-store.js'
import { SessionQueue } from './session-queue.js'

const sessionKey = (tenantId: string, sessionId: string) => `${tenantId}/${sessionId}`

/** How long a session's queue stays loaded with nothing to do and nobody asking for it. */
const IDLE_UNLOAD_MS = 5 * 60_000

/**
 * Every loaded session queue, each loaded once: its event stream opened, its numbering restored.
 * A queue with nothing to do that nobody asked for in `IDLE_UNLOAD_MS` is unloaded with its
 * stream, so memory follows the sessions in use, not every session ever touched; its rows and
 * events are all written by then, so loading it again reads back the same state.
 */
export class SessionQueues {
  private readonly loaded = new Map<string, Promise<SessionQueue>>()
  /** The loaded queues, with when each was last asked for. */
  private readonly used = new Map<string, { queue: SessionQueue; at: number }>()
  private readonly sweeper: NodeJS.Timeout

  constructor(
    private readonly bus: SessionEventBus,
    private readonly entries: QueueStore,
    /** Takes over what a session's previous owner left (with several instances), before first use. */
    private readonly adopt: ((queue: SessionQueue) => Promise<void>) | null = null,
  ) {
    this.sweeper = setInterval(() => this.unloadIdle(Date.now() - IDLE_UNLOAD_MS), IDLE_UNLOAD_MS / 5)
    this.sweeper.unref()
  }

  get(tenantId: string, sessionId: string): Promise<SessionQueue> {
    const key = sessionKey(tenantId, sessionId)
    let loading = this.loaded.get(key)
    if (!loading) {
      loading = (async () => {
        await this.bus.open(tenantId, sessionId)
        const queue = new SessionQueue(tenantId, sessionId, (await this.entries.maxQueueSequence(tenantId, sessionId)) + 1)
        await this.adopt?.(queue)
        if (this.loaded.get(key) === loading) this.used.set(key, { queue, at: Date.now() })
        return queue
      })()
      this.loaded.set(key, loading)
      loading.catch(() => this.loaded.delete(key))
    }
    const used = this.used.get(key)
    if (used) used.at = Date.now()
    return loading
  }

  /** Unloads the queues with nothing to do, and nothing of theirs unwritten, last asked for before `before`; returns how many. */
  unloadIdle(before: number): number {
    let unloaded = 0
    for (const { queue, at } of this.used.values()) {
      const { tenantId, sessionId } = queue
      if (at >= before || !queue.idle || !this.bus.quiet(tenantId, sessionId)) continue
      this.forget(tenantId, sessionId)
      this.bus.forget(tenantId, sessionId)
      unloaded++
    }
    return unloaded
  }

  close(): void {
    clearInterval(this.sweeper)
  }

  /** A session created here just now: its queue starts empty and its stream fresh, with no read. */
  created(tenantId: string, sessionId: string): void {
    this.bus.openCreated(tenantId, sessionId)
    const queue = new SessionQueue(tenantId, sessionId, 1)
    queue.terminalCount = 0
    const key = sessionKey(tenantId, sessionId)
    this.loaded.set(key, Promise.resolve(queue))
    this.used.set(key, { queue, at: Date.now() })
  }

  /** The queue if it was ever loaded, without loading it. */
  peek(tenantId: string, sessionId: string): Promise<SessionQueue> | undefined {
    return this.loaded.get(sessionKey(tenantId, sessionId))
  }

  /** Entries queued, scheduled or running in the loaded queues, counted without loading any. */
  get outstanding(): number {
    let count = 0
    for (const { queue } of this.used.values()) count += queue.outstanding.size
    return count
  }

  all(): Promise<SessionQueue[]> {
    return Promise.all(this.loaded.values())
  }

  forget(tenantId: string, sessionId: string): void {
    this.loaded.delete(sessionKey(tenantId, sessionId))
    this.used.delete(sessionKey(tenantId, sessionId))
  }
}
