import { randomUUID } from 'node:crypto'
import type { MessageRecord } from '../domain/records.js'
import type { SessionStore } from './session-store.js'

export type NewMessage = Pick<MessageRecord, 'role' | 'content' | 'parts' | 'runId' | 'interrupted' | 'toolCalls' | 'toolCallId'>

/**
 * One session's conversation, kept by the actor of the instance that holds the session, so a run
 * reads it from memory: loaded on first use, and added to only by the session's runs' ends,
 * once their turn is written.
 */
export class SessionHistory {
  constructor(
    private readonly store: SessionStore,
    private readonly tenantId: string,
    private readonly sessionId: string,
    /** What the session was created with; null loads it from the store on first use. */
    private loaded: MessageRecord[] | null = null,
  ) {}

  /** The conversation so far, oldest first. */
  async messages(): Promise<MessageRecord[]> {
    this.loaded ??= await this.store.messages(this.tenantId, this.sessionId)
    return [...this.loaded]
  }

  /**
   * Numbers a turn after the last message, without writing it: the run's end writes it in its
   * transaction, then `appended` adds it here. One run at a time appends.
   */
  async turn(messages: NewMessage[]): Promise<MessageRecord[]> {
    const history = await this.messages()
    const createdAt = new Date().toISOString()
    const last = history.at(-1)?.position ?? 0
    return messages.map((m, i) => ({ id: randomUUID(), sessionId: this.sessionId, position: last + i + 1, createdAt, ...m }))
  }

  /** A turn that was written. */
  appended(rows: MessageRecord[]): void {
    this.loaded?.push(...rows)
  }
}
