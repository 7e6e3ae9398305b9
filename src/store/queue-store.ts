import type { Prisma } from '@db/client'
import { type EntryStatus, type QueueEntryRecord, type RunRequest, TERMINAL_ENTRY_STATUSES } from '../domain/records.js'
import type { Db } from './database.js'
import { parsedColumn } from './json-columns.js'
import { steerIdsColumn } from './record-json-columns.js'
import type { RunPathStatements } from './run-path-statements.js'

const select = {
  id: true,
  tenantId: true,
  sessionId: true,
  queueSequence: true,
  priority: true,
  status: true,
  request: true,
  requestBytes: true,
  scheduleKey: true,
  fireAt: true,
  runId: true,
  errorCode: true,
  errorMessage: true,
  unappliedSteerIds: true,
  idempotencyKey: true,
  idempotencyHash: true,
  queuedAt: true,
  startedAt: true,
  finishedAt: true,
} satisfies Prisma.QueueEntrySelect

type Row = Prisma.QueueEntryGetPayload<{ select: typeof select }>

const iso = (d: Date | null) => (d ? d.toISOString() : null)

function toRecord(row: Row): QueueEntryRecord {
  return {
    queueId: row.id,
    tenantId: row.tenantId,
    sessionId: row.sessionId,
    queueSequence: row.queueSequence,
    priority: row.priority,
    status: row.status as EntryStatus,
    request: row.request as unknown as RunRequest,
    requestBytes: row.requestBytes,
    scheduleKey: row.scheduleKey,
    fireAt: iso(row.fireAt),
    runId: row.runId,
    error: row.errorCode ? { code: row.errorCode, message: row.errorMessage ?? '' } : null,
    unappliedSteerIds: parsedColumn(steerIdsColumn, row.unappliedSteerIds, 'QueueEntry.unappliedSteerIds', row.id) ?? [],
    idempotencyKey: row.idempotencyKey,
    idempotencyHash: row.idempotencyHash,
    queuedAt: row.queuedAt.toISOString(),
    startedAt: iso(row.startedAt),
    finishedAt: iso(row.finishedAt),
  }
}

/** Queue entries, written as they change so the queue survives a restart (an admission's insert is the ledger's). */
export class QueueStore {
  constructor(
    private readonly db: Db,
    private readonly statements: RunPathStatements,
  ) {}

  /** Writes the entry's mutable fields; a no-op when the entry (or its session) is gone. */
  async update(entry: QueueEntryRecord): Promise<void> {
    await this.statements.updateEntry(entry)
  }

  /** The entry admitted with this idempotency key, if any. */
  async findByIdempotencyKey(tenantId: string, sessionId: string, idempotencyKey: string): Promise<QueueEntryRecord | null> {
    const row = await this.db.queueEntry.findFirst({ where: { tenantId, sessionId, idempotencyKey }, select })
    return row && toRecord(row)
  }

  /** Prompts a tenant had admitted since `since`, across its sessions (terminal ones pruned since are not counted). */
  countSince(tenantId: string, since: Date): Promise<number> {
    return this.db.queueEntry.count({ where: { tenantId, queuedAt: { gte: since } } })
  }

  /** Frees an expired key so a new admission may take it. */
  async releaseIdempotencyKey(queueId: string): Promise<void> {
    await this.db.queueEntry.updateMany({ where: { id: queueId }, data: { idempotencyKey: null } })
  }

  async find(tenantId: string, sessionId: string, queueId: string): Promise<QueueEntryRecord | null> {
    const row = await this.db.queueEntry.findFirst({ where: { tenantId, sessionId, id: queueId }, select })
    return row && toRecord(row)
  }

  /** An entry by its id alone (an OpenAI response names only its entry). */
  async findById(tenantId: string, queueId: string): Promise<QueueEntryRecord | null> {
    const row = await this.db.queueEntry.findFirst({ where: { tenantId, id: queueId }, select })
    return row && toRecord(row)
  }

  /** A session's entries in queueSequence order, terminal ones only when asked. */
  async forSession(tenantId: string, sessionId: string, includeTerminal: boolean): Promise<QueueEntryRecord[]> {
    const rows = await this.db.queueEntry.findMany({
      where: { tenantId, sessionId, ...(!includeTerminal && { status: { notIn: [...TERMINAL_ENTRY_STATUSES] } }) },
      orderBy: { queueSequence: 'asc' },
      select,
    })
    return rows.map(toRecord)
  }

  async maxQueueSequence(tenantId: string, sessionId: string): Promise<number> {
    const row = await this.db.queueEntry.findFirst({
      where: { tenantId, sessionId },
      orderBy: { queueSequence: 'desc' },
      select: { queueSequence: true },
    })
    return row?.queueSequence ?? 0
  }

  /** Entries in the given states, across tenants (used at start-up). */
  async withStatus(statuses: EntryStatus[]): Promise<QueueEntryRecord[]> {
    const rows = await this.db.queueEntry.findMany({ where: { status: { in: statuses } }, orderBy: { queueSequence: 'asc' }, select })
    return rows.map(toRecord)
  }

  /** Keeps the newest `keep` terminal entries of a session; returns how many it kept. */
  async pruneTerminal(tenantId: string, sessionId: string, keep: number): Promise<number> {
    const terminal = await this.db.queueEntry.findMany({
      where: { tenantId, sessionId, status: { in: [...TERMINAL_ENTRY_STATUSES] } },
      orderBy: { queueSequence: 'desc' },
      select: { id: true },
    })
    const stale = terminal.slice(keep)
    if (stale.length > 0) await this.db.queueEntry.deleteMany({ where: { id: { in: stale.map((r) => r.id) } } })
    return terminal.length - stale.length
  }
}
