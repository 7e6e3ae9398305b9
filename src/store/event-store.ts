import type { Prisma } from '@db/client'
import { sql } from 'kysely'
import type { SessionEvent } from '../domain/events.js'
import type { Db } from './database.js'
import type { RawExecutor, RawStatements } from './raw-statements.js'

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
 * Kysely: Prisma compiles a new plan for every `createMany` (it caches none), which cost 9× this
 * statement for ten rows and grows with the row count.
 */
export class EventStore {
  constructor(
    private readonly db: Db,
    private readonly raw: RawStatements,
  ) {}

  /** Writes a batch in one statement, on `client` (an open transaction) when given. */
  async append(events: readonly SessionEvent[], client: RawExecutor = this.db): Promise<void> {
    if (events.length > 0) await this.insert(events, client)
  }

  /** The statement that writes a non-empty batch, unsent: for a batch transaction of Prisma's. */
  insert(events: readonly SessionEvent[], client: RawExecutor = this.db): Prisma.PrismaPromise<number> {
    const postgres = this.raw.provider === 'postgresql'
    const rows = events.map(({ tenantId, sessionId, sequence, runId, at, type, ...payload }) => {
      const json = JSON.stringify(payload)
      return { tenantId, sessionId, sequence, runId, type, at: new Date(at), payload: postgres ? sql`CAST(${json} AS jsonb)` : json }
    })
    return this.raw.execute(client, this.raw.query.insertInto('RunEvent').values(rows))
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
