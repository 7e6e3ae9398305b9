import type { SessionEvent } from '../domain/events.js'
import type { MessageRecord, QueueEntryRecord, RunRecord } from '../domain/records.js'
import { runFinishedDelivery, runRequiresActionDelivery } from '../domain/webhooks.js'
import { uniqueChecked } from './errors.js'
import type { RunPathStatements, StaleGuard } from './run-path-statements.js'
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

/**
 * A run's start and end, each in one transaction, so a crash between writes never leaves the
 * records disagreeing: a run row exists exactly when its entry is claimed, and a terminal run has
 * its entry's status, its history turn, its last events and, when its entry names a webhook, the
 * delivery of its end. Its statements are compiled once and run on the driver (`RunPathStatements`).
 */
export class RunLedger {
  constructor(
    private readonly sql: Sql,
    private readonly statements: RunPathStatements,
    private readonly webhooks: WebhookStore,
  ) {}

  /** Inserts an admitted entry with the events that report it, in one transaction; a taken idempotency key fails as a UniqueViolation. */
  async admit(entry: QueueEntryRecord, events: readonly SessionEvent[]): Promise<boolean> {
    const { statements } = this
    await uniqueChecked(
      this.sql.transaction().execute(async (tx) => {
        await statements.insertEntry(entry, tx)
        await statements.insertEvents(events, tx)
      }),
    )
    return true
  }

  /** Inserts the run, claims its entry (STARTING, naming the run) and writes `events` (those that report it, and any before them) together. */
  async start(run: RunRecord, entry: QueueEntryRecord, events: readonly SessionEvent[]): Promise<void> {
    const { statements } = this
    await this.sql.transaction().execute(async (tx) => {
      await statements.insertRun(run, entry.request, tx)
      await statements.updateEntry(entry, tx)
      await statements.insertEvents(events, tx)
    })
  }

  /** Ends an entry that never ran, with the events that report it, in one transaction; resolves to true once written. */
  async endEntry(entry: QueueEntryRecord, events: SessionEvent[]): Promise<boolean> {
    const { statements } = this
    await this.sql.transaction().execute(async (tx) => {
      await statements.updateEntry(entry, tx)
      await statements.insertEvents(events, tx)
    })
    return true
  }

  /**
   * Writes a run that now waits for the results of its last round of tool calls, with the
   * delivery that tells its webhook, in one transaction (nothing, if the run has ended).
   */
  async requireAction(run: RunRecord, webhookUrl: string | null): Promise<void> {
    const { statements } = this
    const delivery = webhookUrl ? runRequiresActionDelivery(run, webhookUrl, run.toolRounds.length - 1) : null
    const written = await this.sql.transaction().execute(async (tx) => {
      const live = await statements.updateRun(run, tx)
      if (live && delivery) await statements.insertDelivery(delivery, tx)
      return live
    })
    if (written && delivery) this.webhooks.created()
  }

  /**
   * Writes a run's end if the run is still live (and, with `stale`, still stale); returns
   * whether it did. When it did not, only `earlier` was written.
   */
  async finish(end: RunEnd, stale: StaleGuard | null = null): Promise<boolean> {
    const { statements } = this
    const webhookUrl = end.entry?.request.webhookUrl
    const delivery = webhookUrl ? runFinishedDelivery(end.run, webhookUrl) : null
    const ended = await this.sql.transaction().execute(async (tx) => {
      // already ended (a reaper, or the owner, got there first): of this end, only the events
      // published before it are written (they are the stream's, whoever ends the run)
      if (!(await statements.updateRun(end.run, tx, stale))) {
        await statements.insertEvents(end.earlier, tx)
        return false
      }
      if (end.entry) await statements.updateEntry(end.entry, tx)
      await statements.insertMessages(end.run.tenantId, end.messages, tx)
      await statements.insertEvents([...end.earlier, ...end.events], tx)
      if (delivery) await statements.insertDelivery(delivery, tx)
      return true
    })
    if (ended && delivery) this.webhooks.created()
    return ended
  }
}
