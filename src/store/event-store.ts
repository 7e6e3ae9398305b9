import type { Prisma } from '@db/client'
import type { SessionEvent } from '../domain/events.js'
import type { Db } from './database.js'
import type { RunPathStatements } from './run-path-statements.js'
import type { Sql } from './sql-dialects.js'

const select = {
  tenantId: true,
  sessionId: true,
  sequence: true,
  runId: true,
  type: true,
  payload: true,
  at: true,
} satisfies Prisma.RunEventSelect
type Row = Prisma.RunEventGetPayload<{ select: typeof select }>

const toEvent = (row: Row): SessionEvent =>
  ({
    ...(row.payload as object),
    type: row.type,
    tenantId: row.tenantId,
    sessionId: row.sessionId,
    sequence: row.sequence,
    runId: row.runId,
    at: row.at.toISOString(),
  }) as SessionEvent

/**
 * The persisted event log of session streams. Its rows go in with one multi-row INSERT built by
 * Kysely, compiled once per row count and run on the driver.
 */
export class EventStore {
  constructor(
    private readonly db: Db,
    private readonly statements: RunPathStatements,
  ) {}

  /** Writes a batch in one statement, in `on` (an open transaction) when given. */
  append(events: readonly SessionEvent[], on?: Sql): Promise<void> {
    return this.statements.insertEvents(events, on)
  }

  /** Events of a session after `afterSequence`, in order, at most `limit`. */
  async after(tenantId: string, sessionId: string, afterSequence: number, limit: number): Promise<SessionEvent[]> {
    const rows = await this.db.runEvent.findMany({
      where: { tenantId, sessionId, sequence: { gt: afterSequence } },
      orderBy: { sequence: 'asc' },
      take: limit,
      select,
    })
    return rows.map(toEvent)
  }

  /** Events of one run after `afterSequence`, in order, at most `limit`. */
  async forRun(tenantId: string, runId: string, afterSequence: number, limit: number): Promise<SessionEvent[]> {
    const rows = await this.db.runEvent.findMany({
      where: { tenantId, runId, sequence: { gt: afterSequence } },
      orderBy: { sequence: 'asc' },
      take: limit,
      select,
    })
    return rows.map(toEvent)
  }

  async maxSequence(tenantId: string, sessionId: string): Promise<number> {
    const row = await this.db.runEvent.findFirst({
      where: { tenantId, sessionId },
      orderBy: { sequence: 'desc' },
      select: { sequence: true },
    })
    return row?.sequence ?? 0
  }
}
