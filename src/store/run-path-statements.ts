import type { ExpressionBuilder, Insertable } from 'kysely'
import type { SessionEvent } from '../domain/events.js'
import { TERMINAL_RUN_STATUSES } from '../domain/lifecycles.js'
import type { MessageRecord, QueueEntryRecord, RunRecord } from '../domain/records.js'
import type { WebhookDelivery } from '../domain/webhooks.js'
import type { DB } from '../generated/kysely/tables.js'
import { CompiledStatements, placeholders } from './compiled-statements.js'
import { deliveryRow, entryColumns, entryRow, eventRow, messageRow, runColumns, runRow } from './run-path-rows.js'
import type { Sql } from './sql-dialects.js'

/** The guard of every write that must not overwrite a run's end. */
const liveRun = (id: string) => (eb: ExpressionBuilder<DB, 'Run'>) =>
  eb.and([eb('id', '=', id), eb('status', 'not in', [...TERMINAL_RUN_STATUSES])])

/** Only a run whose heartbeat is older than this (or, with a call open, than `inFlight`) may be ended. */
export interface StaleGuard {
  before: Date
  inFlightBefore: Date
}

/**
 * Every statement of a run's life, each compiled once (`CompiledStatements`) and run on the
 * driver: on the store's connection, or in the transaction `on` names.
 */
export class RunPathStatements {
  private readonly statements: CompiledStatements

  constructor(private readonly sql: Sql) {
    this.statements = new CompiledStatements(sql)
  }

  insertEntry(entry: QueueEntryRecord, on?: Sql): Promise<void> {
    return this.statements.insert('QueueEntry', [entryRow(entry)], (rows) => this.sql.insertInto('QueueEntry').values(rows), on)
  }

  async updateEntry(entry: QueueEntryRecord, on?: Sql): Promise<void> {
    const columns = entryColumns(entry)
    await this.statements.execute(
      'update QueueEntry',
      (v) =>
        this.sql
          .updateTable('QueueEntry')
          .set(placeholders(columns, v))
          .where('id', '=', v('id') as string),
      (name) => (name === 'id' ? entry.queueId : columns[name as keyof typeof columns]),
      on,
    )
  }

  async insertRun(run: RunRecord, request: unknown, on?: Sql): Promise<void> {
    const { id, tenantId, tags } = run
    await this.statements.insert('Run', [runRow(run, request)], (rows) => this.sql.insertInto('Run').values(rows), on)
    const startedAt = new Date(run.startedAt)
    const tagRows: Insertable<DB['RunTag']>[] = tags.map((tag) => ({ tenantId, runId: id, tag, startedAt }))
    await this.statements.insert('RunTag', tagRows, (rows) => this.sql.insertInto('RunTag').values(rows), on)
  }

  /** Writes the run as it is unless it has ended (and, with `stale`, unless its heartbeat is fresh); says whether it did. */
  async updateRun(run: RunRecord, on?: Sql, stale: StaleGuard | null = null): Promise<boolean> {
    const columns = runColumns(run)
    const values = (name: string) =>
      name === 'id'
        ? run.id
        : name === 'before'
          ? stale?.before
          : name === 'inFlightBefore'
            ? stale?.inFlightBefore
            : columns[name as keyof typeof columns]
    const { numAffectedRows } = await this.statements.execute(
      stale ? 'update Run if stale' : 'update Run',
      (v) => {
        const update = this.sql
          .updateTable('Run')
          .set(placeholders(columns, v))
          .where(liveRun(v('id') as string))
        if (!stale) return update
        return update.where((eb) =>
          eb.or([
            eb.and([eb('inFlightSince', 'is', null), eb('heartbeatAt', '<', v('before') as Date)]),
            eb('heartbeatAt', '<', v('inFlightBefore') as Date),
          ]),
        )
      },
      values,
      on,
    )
    return (numAffectedRows ?? 0n) > 0n
  }

  /** Marks a live run alive (and when it last progressed); false when it has ended. */
  async heartbeat(id: string, at: Date, lastProgressAt: Date): Promise<boolean> {
    const values: Record<string, unknown> = { id, at, lastProgressAt }
    const { numAffectedRows } = await this.statements.execute(
      'heartbeat Run',
      (v) =>
        this.sql
          .updateTable('Run')
          .set({ heartbeatAt: v('at') as Date, lastProgressAt: v('lastProgressAt') as Date })
          .where(liveRun(v('id') as string)),
      (name) => values[name],
    )
    return (numAffectedRows ?? 0n) > 0n
  }

  insertEvents(events: readonly SessionEvent[], on?: Sql): Promise<void> {
    return this.statements.insert('RunEvent', events.map(eventRow), (rows) => this.sql.insertInto('RunEvent').values(rows), on)
  }

  insertMessages(tenantId: string, messages: readonly MessageRecord[], on?: Sql): Promise<void> {
    const rows = messages.map((m) => messageRow(tenantId, m))
    return this.statements.insert('Message', rows, (built) => this.sql.insertInto('Message').values(built), on)
  }

  insertDelivery(delivery: WebhookDelivery, on?: Sql): Promise<void> {
    return this.statements.insert(
      'WebhookDelivery',
      [deliveryRow(delivery)],
      (rows) => this.sql.insertInto('WebhookDelivery').values(rows),
      on,
    )
  }
}
