import type { SessionEvent } from '../domain/events.js'
import type { MessageRecord, QueueEntryRecord, RunRecord } from '../domain/records.js'
import type { Db } from './database.js'
import type { EventStore } from './event-store.js'
import { ENTRY_JSON_COLUMNS, entryData } from './queue-store.js'
import type { RawWriter } from './raw-writer.js'
import { RUN_IS_LIVE, RUN_JSON_COLUMNS, runData } from './run-store.js'

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
}

/** Only a run whose heartbeat is older than this (or, with a call open, than `inFlight`) may be ended. */
export interface StaleGuard {
  before: Date
  inFlightBefore: Date
}

/** The run's end was not written: it had already ended (a reaper, or the owner, got there first). */
class AlreadyEnded extends Error {}

/**
 * A run's start and end, each one transaction, so a crash between writes never leaves the
 * records disagreeing (DESIGN §6): a run row exists exactly when its entry is claimed, and a
 * terminal run has its entry's status, its history turn and its last events.
 */
export class RunLedger {
  constructor(
    private readonly db: Db,
    private readonly raw: RawWriter,
    private readonly events: EventStore,
  ) {}

  /** Inserts the run and claims its entry (STARTING, naming the run) together. */
  async start(run: RunRecord, entry: QueueEntryRecord): Promise<void> {
    await this.db.$transaction(async (tx) => {
      const raw = this.raw.in(tx)
      const { id, tenantId, sessionId, queueId, startedAt } = run
      await raw.insert('Run', [{ id, tenantId, sessionId, queueId, startedAt: new Date(startedAt), ...runData(run) }], RUN_JSON_COLUMNS)
      await raw.update('QueueEntry', { column: 'id', value: entry.queueId }, entryData(entry), ENTRY_JSON_COLUMNS)
    })
  }

  /**
   * Writes a run's end if the run is still live (and, with `stale`, still stale); returns
   * whether it did. When it did not, nothing was written.
   */
  async finish(end: RunEnd, stale: StaleGuard | null = null): Promise<boolean> {
    try {
      await this.db.$transaction(async (tx) => {
        const raw = this.raw.in(tx)
        const changed = await raw.update('Run', { column: 'id', value: end.run.id }, runData(end.run), RUN_JSON_COLUMNS, (param) =>
          stale
            ? `${RUN_IS_LIVE} AND (("inFlightSince" IS NULL AND "heartbeatAt" < ${param(stale.before)}) OR "heartbeatAt" < ${param(stale.inFlightBefore)})`
            : RUN_IS_LIVE,
        )
        if (changed === 0) throw new AlreadyEnded()
        if (end.entry) await raw.update('QueueEntry', { column: 'id', value: end.entry.queueId }, entryData(end.entry), ENTRY_JSON_COLUMNS)
        if (end.messages.length > 0) {
          const rows = end.messages.map((m) => ({ ...m, tenantId: end.run.tenantId, createdAt: new Date(m.createdAt) }))
          await raw.insert('Message', rows)
        }
        await this.events.append(end.events, raw)
      })
      return true
    } catch (error) {
      if (error instanceof AlreadyEnded) return false
      throw error
    }
  }
}
