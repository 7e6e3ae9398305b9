import type { SessionEvent } from '../domain/events.js'
import type { MessageRecord, QueueEntryRecord, RunRecord } from '../domain/records.js'
import { runFinishedDelivery } from '../domain/webhooks.js'
import type { EventStore } from './event-store.js'
import type { GroupCommit } from './group-commit.js'
import { ENTRY_JSON_COLUMNS, entryData } from './queue-store.js'
import { RUN_IS_LIVE, RUN_JSON_COLUMNS, runData } from './run-store.js'
import { DELIVERY_JSON_COLUMNS, deliveryRow, type WebhookStore } from './webhook-store.js'

/** Everything a run's end writes. */
export interface RunEnd {
  /** The run, terminal. */
  run: RunRecord
  /** Its queue entry, terminal; null for a run without one. */
  entry: QueueEntryRecord | null
  /** The turn it adds to the session's history (empty: none). */
  messages: MessageRecord[]
  /** Its last events, numbered: the history's, the entry's and RUN_FINISHED. */
  events: SessionEvent[]
  /** Events published before these and not yet written (any session's): stored whether or not the end is. */
  earlier: SessionEvent[]
}

/** Only a run whose heartbeat is older than this (or, with a call open, than `inFlight`) may be ended. */
export interface StaleGuard {
  before: Date
  inFlightBefore: Date
}

/**
 * A run's start and end, each in one transaction (shared with other runs' writes under load,
 * through the group commit), so a crash between writes never leaves the records disagreeing
 * (DESIGN §6): a run row exists exactly when its entry is claimed, and a terminal run has its
 * entry's status, its history turn, its last events and, when its entry names a webhook, the
 * delivery of its end.
 */
export class RunLedger {
  constructor(
    private readonly writes: GroupCommit,
    private readonly events: EventStore,
    private readonly webhooks: WebhookStore,
  ) {}

  /** Inserts the run and claims its entry (STARTING, naming the run) together. */
  start(run: RunRecord, entry: QueueEntryRecord): Promise<void> {
    const { id, tenantId, sessionId, queueId, startedAt } = run
    const row = { id, tenantId, sessionId, queueId, startedAt: new Date(startedAt), ...runData(run) }
    const claim = entryData(entry)
    return this.writes.write(async (raw) => {
      await raw.insert('Run', [row], RUN_JSON_COLUMNS)
      await raw.update('QueueEntry', { column: 'id', value: entry.queueId }, claim, ENTRY_JSON_COLUMNS)
    }, true)
  }

  /**
   * Writes a run's end if the run is still live (and, with `stale`, still stale); returns
   * whether it did. When it did not, only `earlier` was written.
   */
  async finish(end: RunEnd, stale: StaleGuard | null = null): Promise<boolean> {
    const run = runData(end.run)
    const entry = end.entry && entryData(end.entry)
    const messages = end.messages.map((m) => ({ ...m, tenantId: end.run.tenantId, createdAt: new Date(m.createdAt) }))
    const webhookUrl = end.entry?.request.webhookUrl
    const delivery = webhookUrl ? deliveryRow(runFinishedDelivery(end.run, webhookUrl)) : null
    const ended = await this.writes.write(async (raw) => {
      const changed = await raw.update('Run', { column: 'id', value: end.run.id }, run, RUN_JSON_COLUMNS, (param) =>
        stale
          ? `${RUN_IS_LIVE} AND (("inFlightSince" IS NULL AND "heartbeatAt" < ${param(stale.before)}) OR "heartbeatAt" < ${param(stale.inFlightBefore)})`
          : RUN_IS_LIVE,
      )
      // already ended (a reaper, or the owner, got there first): of this end, only the events
      // published before it are written (they are the stream's, whoever ends the run)
      if (changed === 0) {
        await this.events.append(end.earlier, raw)
        return false
      }
      if (entry) await raw.update('QueueEntry', { column: 'id', value: end.entry!.queueId }, entry, ENTRY_JSON_COLUMNS)
      if (messages.length > 0) await raw.insert('Message', messages)
      await this.events.append([...end.earlier, ...end.events], raw)
      if (delivery) await raw.insert('WebhookDelivery', [delivery], DELIVERY_JSON_COLUMNS)
      return true
    }, true)
    if (ended && delivery) this.webhooks.created()
    return ended
  }
}
