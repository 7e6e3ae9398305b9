import type { SessionEventBus } from '../events/event-bus.js'
import type { QueueStore } from '../store/queue-store.js'
import { SessionQueue } from './session-queue.js'

const sessionKey = (tenantId: string, sessionId: string) => `${tenantId}/${sessionId}`

/** Every loaded session queue, each loaded once: its event stream opened, its numbering restored. */
export class SessionQueues {
  private readonly loaded = new Map<string, Promise<SessionQueue>>()

  constructor(
    private readonly bus: SessionEventBus,
    private readonly entries: QueueStore,
    /** Takes over what a session's previous owner left (with several instances), before first use. */
    private readonly adopt: ((queue: SessionQueue) => Promise<void>) | null = null,
  ) {}

  get(tenantId: string, sessionId: string): Promise<SessionQueue> {
    const key = sessionKey(tenantId, sessionId)
    let loading = this.loaded.get(key)
    if (!loading) {
      loading = (async () => {
        await this.bus.open(tenantId, sessionId)
        const queue = new SessionQueue(tenantId, sessionId, (await this.entries.maxQueueSequence(tenantId, sessionId)) + 1)
        await this.adopt?.(queue)
        return queue
      })()
      this.loaded.set(key, loading)
      loading.catch(() => this.loaded.delete(key))
    }
    return loading
  }

  /** A session created here just now: its queue starts empty and its stream fresh, with no read. */
  created(tenantId: string, sessionId: string): void {
    this.bus.openCreated(tenantId, sessionId)
    const queue = new SessionQueue(tenantId, sessionId, 1)
    queue.terminalCount = 0
    this.loaded.set(sessionKey(tenantId, sessionId), Promise.resolve(queue))
  }

  /** The queue if it was ever loaded, without loading it. */
  peek(tenantId: string, sessionId: string): Promise<SessionQueue> | undefined {
    return this.loaded.get(sessionKey(tenantId, sessionId))
  }

  all(): Promise<SessionQueue[]> {
    return Promise.all(this.loaded.values())
  }

  forget(tenantId: string, sessionId: string): void {
    this.loaded.delete(sessionKey(tenantId, sessionId))
  }
}
