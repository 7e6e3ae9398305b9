import { randomUUID } from 'node:crypto'
import type { MessageRecord, SessionRecord } from '../domain/records.js'
import type { SessionStore } from './session-store.js'

interface Entry {
  record: SessionRecord
  /** Loaded on first use. */
  history: MessageRecord[] | null
}

export type NewMessage = Pick<MessageRecord, 'role' | 'content' | 'parts' | 'runId' | 'interrupted' | 'toolCalls' | 'toolCallId'>

/**
 * Sessions and their conversation histories, kept in memory by the process that owns their
 * queues, so a run reads neither from the database; a run's end writes its turn. Bounded: the least
 * recently used session is dropped (and read again when needed).
 */
export class SessionMemory {
  private readonly entries = new Map<string, Entry>()

  constructor(
    private readonly store: SessionStore,
    private readonly max = 10_000,
  ) {}

  private key(tenantId: string, id: string): string {
    return `${tenantId}/${id}`
  }

  private touch(key: string, entry: Entry): Entry {
    this.entries.delete(key)
    this.entries.set(key, entry)
    if (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value!)
    return entry
  }

  private async entry(tenantId: string, id: string): Promise<Entry | null> {
    const key = this.key(tenantId, id)
    const cached = this.entries.get(key)
    if (cached) return this.touch(key, cached)
    const record = await this.store.find(tenantId, id)
    return record && this.touch(key, this.entries.get(key) ?? { record, history: null })
  }

  async find(tenantId: string, id: string): Promise<SessionRecord | null> {
    return (await this.entry(tenantId, id))?.record ?? null
  }

  /** A session just created, with the history it was created with. */
  remember(record: SessionRecord, history: MessageRecord[] = []): void {
    this.touch(this.key(record.tenantId, record.id), { record, history: [...history] })
  }

  /** The conversation so far, oldest first. */
  async messages(tenantId: string, sessionId: string): Promise<MessageRecord[]> {
    const entry = await this.entry(tenantId, sessionId)
    if (!entry) return []
    entry.history ??= await this.store.messages(tenantId, sessionId)
    return [...entry.history]
  }

  /**
   * Numbers a turn after the last message, without writing it: the run's end writes it in its
   * transaction, then `appended` adds it here. Only the session's queue appends, one run at a time.
   */
  async turn(tenantId: string, sessionId: string, messages: NewMessage[]): Promise<MessageRecord[]> {
    const history = await this.messages(tenantId, sessionId)
    const createdAt = new Date().toISOString()
    const last = history.at(-1)?.position ?? 0
    return messages.map((m, i) => ({ id: randomUUID(), sessionId, position: last + i + 1, createdAt, ...m }))
  }

  /** A turn that was written. */
  appended(tenantId: string, sessionId: string, rows: MessageRecord[]): void {
    const entry = this.entries.get(this.key(tenantId, sessionId))
    if (entry?.history) entry.history.push(...rows)
  }

  forget(tenantId: string, id: string): void {
    this.entries.delete(this.key(tenantId, id))
  }
}
