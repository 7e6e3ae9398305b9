import { InvalidRequestError } from '../domain/errors.js'
import type { QueueEntryRecord } from '../domain/records.js'
import type { QueueStore } from '../store/queue-store.js'
import type { SessionActor } from './session-actor.js'

/**
 * Retried admissions: a key (per tenant and session) answers with the entry it first admitted
 * for `ttlMs`, and never admits twice; the store's unique index holds that across processes.
 */
export class IdempotentAdmissions {
  constructor(
    private readonly entries: QueueStore,
    private readonly ttlMs: number,
    private readonly clock: () => number,
  ) {}

  /** The entry this key already admitted, or null; the same key with another request is refused. */
  async existing(actor: SessionActor, key: string, requestHash: string): Promise<QueueEntryRecord | null> {
    const live = [...actor.outstanding.values()].find((e) => e.idempotencyKey === key)
    const found = live ?? (await this.entries.findByIdempotencyKey(actor.tenantId, actor.sessionId, key))
    if (!found) return null
    if (!live && this.clock() - Date.parse(found.queuedAt) > this.ttlMs) {
      await this.entries.releaseIdempotencyKey(found.queueId)
      return null
    }
    if (found.idempotencyHash !== requestHash) {
      throw InvalidRequestError.at('input.idempotencyKey', `idempotency key '${key}' was already used for a different request`)
    }
    return found
  }
}
