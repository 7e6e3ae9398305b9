import type { ExpressionBuilder } from 'kysely'
import type { SessionEvent } from '../domain/events.js'
import { TERMINAL_RUN_STATUSES } from '../domain/lifecycles.js'
import type { MessageRecord, QueueEntryRecord, RunRecord } from '../domain/records.js'
import { runFinishedDelivery, runRequiresActionDelivery } from '../domain/webhooks.js'
import type { DB } from '../generated/kysely/tables.js'
import type { EventStore } from './event-store.js'
import { deliveryRow, entryColumns, messageRow, runColumns, runRow } from './run-path-rows.js'
import type { Sql } from './sql-dialects.js'
import type { WebhookStore } from './webhook-store.js'

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
  /** Events of its session published before these and not yet written: stored whether or not the end is. */
  earlier: SessionEvent[]
}

/** Only a run whose heartbeat is older than this (or, with a call open, than `inFlight`) may be ended. */
export interface StaleGuard {
  before: Date
  inFlightBefore: Date
}

/** The guard of every write that must not overwrite a run's end. */
export const liveRun = (id: string) => (eb: ExpressionBuilder<DB, 'Run'>) =>
  eb.and([eb('id', '=', id), eb('status', 'not in', [...TERMINAL_RUN_STATUSES])])

/**
 * A run's start and end, each in one transaction, so a crash between writes never leaves the
 * records disagreeing: a run row exists exactly when its entry is claimed, and a terminal run has
 * its entry's status, its history turn, its last events and, when its entry names a webhook, the
 * delivery of its end. Its statements are Kysely's, run on the driver (see store/database.ts).
 */
export class RunLedger {
  constructor(
    private readonly sql: Sql,
    private readonly events: EventStore,
    private readonly webhooks: WebhookStore,
  ) {}

  /** Inserts the run, claims its entry (STARTING, naming the run) and writes `events` (those that report it, and any before them) together. */
  async start(run: RunRecord, entry: QueueEntryRecord, events: readonly SessionEvent[]): Promise<void> {
    const { id, tenantId, tags } = run
    const startedAt = new Date(run.startedAt)
    await this.sql.transaction().execute(async (tx) => {
      await tx.insertInto('Run').values(runRow(run, entry.request)).execute()
      if (tags.length > 0)
        await tx
          .insertInto('RunTag')
          .values(tags.map((tag) => ({ tenantId, runId: id, tag, startedAt })))
          .execute()
      await tx.updateTable('QueueEntry').set(entryColumns(entry)).where('id', '=', entry.queueId).execute()
      await this.events.append(events, tx)
    })
  }

  /** Ends an entry that never ran, with the events that report it, in one transaction; resolves to true once written. */
  async endEntry(entry: QueueEntryRecord, events: SessionEvent[]): Promise<boolean> {
    await this.sql.transaction().execute(async (tx) => {
      await tx.updateTable('QueueEntry').set(entryColumns(entry)).where('id', '=', entry.queueId).execute()
      await this.events.append(events, tx)
    })
    return true
  }

  /**
   * Writes a run that now waits for the results of its last round of tool calls, with the
   * delivery that tells its webhook, in one transaction (nothing, if the run has ended).
   */
  async requireAction(run: RunRecord, webhookUrl: string | null): Promise<void> {
    const delivery = webhookUrl ? deliveryRow(runRequiresActionDelivery(run, webhookUrl, run.toolRounds.length - 1)) : null
    const written = await this.sql.transaction().execute(async (tx) => {
      const { numUpdatedRows } = await tx.updateTable('Run').set(runColumns(run)).where(liveRun(run.id)).executeTakeFirstOrThrow()
      if (numUpdatedRows > 0n && delivery) await tx.insertInto('WebhookDelivery').values(delivery).execute()
      return numUpdatedRows > 0n
    })
    if (written && delivery) this.webhooks.created()
  }

  /**
   * Writes a run's end if the run is still live (and, with `stale`, still stale); returns
   * whether it did. When it did not, only `earlier` was written.
   */
  async finish(end: RunEnd, stale: StaleGuard | null = null): Promise<boolean> {
    const webhookUrl = end.entry?.request.webhookUrl
    const delivery = webhookUrl ? deliveryRow(runFinishedDelivery(end.run, webhookUrl)) : null
    const ended = await this.sql.transaction().execute(async (tx) => {
      let update = tx.updateTable('Run').set(runColumns(end.run)).where(liveRun(end.run.id))
      if (stale) {
        update = update.where((eb) =>
          eb.or([
            eb.and([eb('inFlightSince', 'is', null), eb('heartbeatAt', '<', stale.before)]),
            eb('heartbeatAt', '<', stale.inFlightBefore),
          ]),
        )
      }
      const { numUpdatedRows } = await update.executeTakeFirstOrThrow()
      // already ended (a reaper, or the owner, got there first): of this end, only the events
      // published before it are written (they are the stream's, whoever ends the run)
      if (numUpdatedRows === 0n) {
        await this.events.append(end.earlier, tx)
        return false
      }
      if (end.entry) await tx.updateTable('QueueEntry').set(entryColumns(end.entry)).where('id', '=', end.entry.queueId).execute()
      if (end.messages.length > 0)
        await tx
          .insertInto('Message')
          .values(end.messages.map((m) => messageRow(end.run.tenantId, m)))
          .execute()
      await this.events.append([...end.earlier, ...end.events], tx)
      if (delivery) await tx.insertInto('WebhookDelivery').values(delivery).execute()
      return true
    })
    if (ended && delivery) this.webhooks.created()
    return ended
  }
}
