import type { QueueEntryEventKind } from '../domain/events.js'
import type { Logger } from '../domain/logger.js'
import type { QueueEntryRecord, RunRecord } from '../domain/records.js'
import { RecordJournal } from '../runner/record-journal.js'
import type { QueueStore } from '../store/queue-store.js'
import type { RunLedger } from '../store/run-ledger.js'
import type { RunSettlement } from './run-settlement.js'
import type { SessionActor } from './session-actor.js'

export interface QueueEntryWriterDeps {
  entries: QueueStore
  ledger: RunLedger
  logger: Logger
  /** Terminal entries kept per session. */
  retainedTerminal: number
  settlement: RunSettlement
}

/**
 * Writes outstanding queue entries, each through its own journal, and tells the session's
 * subscribers. An entry leaves the outstanding set only once its terminal row is written, so
 * a read of an entry that is not outstanding finds it as it ended.
 */
export class QueueEntryWriter {
  constructor(private readonly deps: QueueEntryWriterDeps) {}

  /** The journal of an outstanding entry's writes, kept by its queue (its run's start claims the entry there). */
  journalOf(actor: SessionActor, entry: QueueEntryRecord): RecordJournal {
    let journal = actor.journals.get(entry.queueId)
    if (!journal) {
      journal = new RecordJournal((error) =>
        this.deps.logger.error('a queue entry write failed', { queueId: entry.queueId, error: (error as Error).message }),
      )
      actor.journals.set(entry.queueId, journal)
    }
    return journal
  }

  /** Queues a write of the whole entry as it is when the write runs; nobody waits for it. */
  save(actor: SessionActor, entry: QueueEntryRecord): void {
    this.journalOf(actor, entry).saveRow(() => this.deps.entries.update({ ...entry }))
  }

  /** Writes the whole entry as it is now; resolves once it is durable. */
  write(actor: SessionActor, entry: QueueEntryRecord): Promise<void> {
    const snapshot = { ...entry }
    return this.journalOf(actor, entry).write(() => this.deps.entries.update(snapshot))
  }

  /**
   * Inserts an admitted entry with its QUEUED event in one transaction (the event goes live once
   * written), first in its journal; resolves once it is durable. A taken idempotency key fails
   * as the store's UniqueViolation, and the event is never delivered.
   */
  async admit(actor: SessionActor, entry: QueueEntryRecord): Promise<void> {
    const { ledger } = this.deps
    const admitted = { ...entry }
    await this.journalOf(actor, entry).write(() =>
      actor.stream.commit(null, [{ type: 'QUEUE_ENTRY', kind: 'QUEUED', entry: admitted }], (events, earlier) =>
        ledger.admit(admitted, [...earlier, ...events]),
      ),
    )
  }

  publish(actor: SessionActor, kind: QueueEntryEventKind, entry: QueueEntryRecord): void {
    actor.stream.publish(entry.runId, { type: 'QUEUE_ENTRY', kind, entry: { ...entry } })
  }

  /**
   * A terminal entry that never ran: written with its FINISHED event in one transaction (the
   * event goes live once written), then retired. Resolves once it is durable.
   */
  async finish(actor: SessionActor, entry: QueueEntryRecord): Promise<void> {
    const { ledger } = this.deps
    const ended = { ...entry }
    try {
      await this.journalOf(actor, entry).write(() =>
        actor.closing
          ? ledger.endEntry(ended, [])
          : actor.stream.commit(null, [{ type: 'QUEUE_ENTRY', kind: 'FINISHED', entry: ended }], (events, earlier) =>
              ledger.endEntry(ended, [...earlier, ...events]),
            ),
      )
    } finally {
      this.retire(actor, entry)
    }
  }

  /** An entry this instance lets go of, its writes landed: the session's next owner takes it up. */
  leave(actor: SessionActor, entry: QueueEntryRecord): void {
    this.deps.settlement.left(entry)
    actor.outstanding.delete(entry.queueId)
    actor.journals.delete(entry.queueId)
  }

  /** A terminal entry, already written: no longer outstanding, settled with its budgets and key, and old terminal entries pruned. */
  retire(actor: SessionActor, entry: QueueEntryRecord, run: RunRecord | null = null): void {
    this.leave(actor, entry)
    this.deps.settlement.ended(entry, run)
    const { tenantId, sessionId } = actor
    const keep = this.deps.retainedTerminal
    // prune only when the count may be well over the limit (a tenth of slack), not once per run
    if (actor.terminalCount === null || ++actor.terminalCount > keep + Math.max(1, Math.ceil(keep / 10))) {
      this.deps.entries.pruneTerminal(tenantId, sessionId, keep).then(
        (count) => {
          actor.terminalCount = count
        },
        (error: Error) => this.deps.logger.error('could not prune terminal queue entries', { sessionId, error: error.message }),
      )
    }
  }
}
