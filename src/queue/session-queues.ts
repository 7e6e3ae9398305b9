import type { SessionEventBus } from '../events/event-bus.js'
import type { QueueStore } from '../store/queue-store.js'
import { SessionQueue } from './session-queue.js'

const sessionKey = (tenantId: string, sessionId: string) => `${tenantId}/${sessionId}`

/**
 * The queues of the sessions this instance holds, each loaded once: its event stream opened, its
 * numbering restored, what its previous owner left taken over. A queue is forgotten with its
 * session's lease (which lapses once it is idle), so memory follows the sessions in use, not
 * every session ever touched; its rows and events are all written by then, so loading it again
 * reads back the same state.
 */
export class SessionQueues {
  private readonly loading = new Map<string, Promise<SessionQueue>>()
  private readonly loaded = new Map<string, SessionQueue>()

  constructor(
    private readonly bus: SessionEventBus,
    private readonly entries: QueueStore,
    /** Takes over what the session's previous owner (another instance, or this one before a restart) left, before first use. */
    private readonly adopt: (queue: SessionQueue) => Promise<void>,
  ) {}

  get(tenantId: string, sessionId: string): Promise<SessionQueue> {
    const key = sessionKey(tenantId, sessionId)
    let loading = this.loading.get(key)
    if (!loading) {
      loading = (async () => {
        await this.bus.open(tenantId, sessionId)
        const queue = new SessionQueue(tenantId, sessionId, (await this.entries.maxQueueSequence(tenantId, sessionId)) + 1)
        await this.adopt(queue)
        if (this.loading.get(key) === loading) this.loaded.set(key, queue)
        return queue
      })()
      this.loading.set(key, loading)
      loading.catch(() => this.loading.delete(key))
    }
    return loading
  }

  /** The session's queue if it is loaded now (not while it loads). */
  current(tenantId: string, sessionId: string): SessionQueue | undefined {
    return this.loaded.get(sessionKey(tenantId, sessionId))
  }

  /** Whether the session has anything outstanding, running, loading or unwritten. */
  hasWork(tenantId: string, sessionId: string): boolean {
    const key = sessionKey(tenantId, sessionId)
    const queue = this.loaded.get(key)
    if (!queue) return this.loading.has(key)
    return !queue.idle || !this.bus.quiet(tenantId, sessionId)
  }

  /** A session created here just now: its queue starts empty and its stream fresh, with no read. */
  created(tenantId: string, sessionId: string): void {
    this.bus.openCreated(tenantId, sessionId)
    const queue = new SessionQueue(tenantId, sessionId, 1)
    queue.terminalCount = 0
    const key = sessionKey(tenantId, sessionId)
    this.loading.set(key, Promise.resolve(queue))
    this.loaded.set(key, queue)
  }

  /** The queue if it was ever loaded, without loading it. */
  peek(tenantId: string, sessionId: string): Promise<SessionQueue> | undefined {
    return this.loading.get(sessionKey(tenantId, sessionId))
  }

  /** Entries queued, scheduled or running in the loaded queues, counted without loading any. */
  get outstanding(): number {
    let count = 0
    for (const queue of this.loaded.values()) count += queue.outstanding.size
    return count
  }

  all(): Promise<SessionQueue[]> {
    return Promise.all(this.loading.values())
  }

  forget(tenantId: string, sessionId: string): void {
    this.loading.delete(sessionKey(tenantId, sessionId))
    this.loaded.delete(sessionKey(tenantId, sessionId))
  }
}
