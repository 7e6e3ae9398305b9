import type { SessionRecord } from '../domain/records.js'
import type { SessionStore } from './session-store.js'

/**
 * Session records (they never change once created), kept in memory by the process that holds
 * the sessions, so admitting and ending a run read no session row. Bounded: the least recently
 * used is dropped (and read again when needed).
 */
export class SessionMemory {
  private readonly records = new Map<string, SessionRecord>()

  constructor(
    private readonly store: SessionStore,
    private readonly max = 10_000,
  ) {}

  private key(tenantId: string, id: string): string {
    return `${tenantId}/${id}`
  }

  private touch(key: string, record: SessionRecord): SessionRecord {
    this.records.delete(key)
    this.records.set(key, record)
    if (this.records.size > this.max) this.records.delete(this.records.keys().next().value!)
    return record
  }

  async find(tenantId: string, id: string): Promise<SessionRecord | null> {
    const key = this.key(tenantId, id)
    const cached = this.records.get(key)
    if (cached) return this.touch(key, cached)
    const record = await this.store.find(tenantId, id)
    return record && this.touch(key, this.records.get(key) ?? record)
  }

  /** A session just created. */
  remember(record: SessionRecord): void {
    this.touch(this.key(record.tenantId, record.id), record)
  }

  forget(tenantId: string, id: string): void {
    this.records.delete(this.key(tenantId, id))
  }
}
