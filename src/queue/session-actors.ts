import type { MessageRecord } from '../domain/records.js'
import type { SessionEventBus } from '../events/event-bus.js'
import type { QueueStore } from '../store/queue-store.js'
import { SessionHistory } from '../store/session-history.js'
import type { SessionStore } from '../store/session-store.js'
import { SessionActor } from './session-actor.js'

const sessionKey = (tenantId: string, sessionId: string) => `${tenantId}/${sessionId}`

/**
 * The actors of the sessions this instance holds, each loaded once: its event stream opened (its
 * numbering restored), its queue's next sequence read, what its previous owner left taken over.
 * An actor is forgotten with its session's lease (which lapses once it is idle), so memory follows
 * the sessions in use, not every session ever touched; its rows and events are all written by
 * then, so loading it again reads back the same state.
 */
export class SessionActors {
  private readonly loading = new Map<string, Promise<SessionActor>>()
  private readonly loaded = new Map<string, SessionActor>()

  constructor(
    private readonly bus: SessionEventBus,
    private readonly entries: QueueStore,
    private readonly sessions: SessionStore,
    /** Takes over what the session's previous owner (another instance, or this one before a restart) left, before first use. */
    private readonly adopt: (actor: SessionActor) => Promise<void>,
  ) {}

  get(tenantId: string, sessionId: string): Promise<SessionActor> {
    const key = sessionKey(tenantId, sessionId)
    let loading = this.loading.get(key)
    if (!loading) {
      loading = (async () => {
        const [stream, lastQueueSequence] = await Promise.all([
          this.bus.open(tenantId, sessionId),
          this.entries.maxQueueSequence(tenantId, sessionId),
        ])
        const history = new SessionHistory(this.sessions, tenantId, sessionId)
        const actor = new SessionActor(tenantId, sessionId, lastQueueSequence + 1, stream, history)
        await this.adopt(actor)
        if (this.loading.get(key) === loading) this.loaded.set(key, actor)
        return actor
      })()
      this.loading.set(key, loading)
      loading.catch(() => this.loading.delete(key))
    }
    return loading
  }

  /** The session's actor if it is loaded now (not while it loads). */
  current(tenantId: string, sessionId: string): SessionActor | undefined {
    return this.loaded.get(sessionKey(tenantId, sessionId))
  }

  /** Whether the session has anything outstanding, running, loading or unwritten. */
  hasWork(tenantId: string, sessionId: string): boolean {
    const key = sessionKey(tenantId, sessionId)
    const actor = this.loaded.get(key)
    return actor ? !actor.idle : this.loading.has(key)
  }

  /** A session created here just now, with the history it was created with: its actor starts empty and its stream fresh, with no read. */
  created(tenantId: string, sessionId: string, history: MessageRecord[]): void {
    const stream = this.bus.openCreated(tenantId, sessionId)
    const actor = new SessionActor(tenantId, sessionId, 1, stream, new SessionHistory(this.sessions, tenantId, sessionId, [...history]))
    actor.terminalCount = 0
    const key = sessionKey(tenantId, sessionId)
    this.loading.set(key, Promise.resolve(actor))
    this.loaded.set(key, actor)
  }

  /** Every loaded actor. */
  all(): SessionActor[] {
    return [...this.loaded.values()]
  }

  /** The actor if it was ever loaded, without loading it. */
  peek(tenantId: string, sessionId: string): Promise<SessionActor> | undefined {
    return this.loading.get(sessionKey(tenantId, sessionId))
  }

  /** Entries queued, scheduled or running in the loaded actors, counted without loading any. */
  get outstanding(): number {
    let count = 0
    for (const actor of this.loaded.values()) count += actor.outstanding.size
    return count
  }

  forget(tenantId: string, sessionId: string): void {
    this.loading.delete(sessionKey(tenantId, sessionId))
    this.loaded.delete(sessionKey(tenantId, sessionId))
  }
}
