import { queueStatus, withPositions } from '../domain/queue-order.js'
import { type QueueEntryRecord, type QueueEntryView, type SessionStatus, TERMINAL_ENTRY_STATUSES } from '../domain/records.js'
import { NOTHING_UNWRITTEN, type UnwrittenTail } from '../events/session-stream.js'
import type { Store } from '../store/store.js'
import type { SessionReads } from './session-operations.js'

/**
 * A session's reads while no instance holds it: whoever held it last wrote everything before
 * its lease lapsed, so the store has it all, and nothing of it runs or waits to be written.
 */
export class StoredSessionReads implements SessionReads {
  constructor(private readonly store: Store) {}

  async queueEntry(tenantId: string, sessionId: string, queueId: string): Promise<QueueEntryView | null> {
    const entry = await this.store.entries.find(tenantId, sessionId, queueId)
    if (!entry) return null
    if (TERMINAL_ENTRY_STATUSES.includes(entry.status)) return { ...entry, position: null }
    return (await this.outstanding(tenantId, sessionId)).find((e) => e.queueId === queueId) ?? { ...entry, position: null }
  }

  run(tenantId: string, runId: string) {
    return this.store.runs.find(tenantId, runId)
  }

  async unwrittenTail(): Promise<UnwrittenTail> {
    return NOTHING_UNWRITTEN
  }

  messages(tenantId: string, sessionId: string) {
    return this.store.sessions.messages(tenantId, sessionId)
  }

  async status(tenantId: string, sessionId: string): Promise<SessionStatus> {
    const outstanding = await this.store.entries.forSession(tenantId, sessionId, false)
    // a queued or started entry waits for the instance that takes the session over
    return queueStatus(
      outstanding.some((e) => e.status !== 'SCHEDULED'),
      outstanding,
    )
  }

  lastSequence(tenantId: string, sessionId: string): Promise<number> {
    return this.store.events.maxSequence(tenantId, sessionId)
  }

  async queueOf(tenantId: string, sessionId: string, includeTerminal: boolean): Promise<QueueEntryView[]> {
    const entries = await this.store.entries.forSession(tenantId, sessionId, includeTerminal)
    const outstanding = entries.filter((e) => !TERMINAL_ENTRY_STATUSES.includes(e.status))
    const positions = new Map(this.positioned(outstanding).map((e) => [e.queueId, e.position]))
    return entries.map((e) => ({ ...e, position: positions.get(e.queueId) ?? null }))
  }

  private async outstanding(tenantId: string, sessionId: string): Promise<QueueEntryView[]> {
    return this.positioned(await this.store.entries.forSession(tenantId, sessionId, false))
  }

  /** Positions in line, an entry its last holder started first. */
  private positioned(outstanding: readonly QueueEntryRecord[]): QueueEntryView[] {
    return withPositions(outstanding.find((e) => e.status === 'STARTING') ?? null, outstanding)
  }
}
