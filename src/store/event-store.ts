import type { Prisma } from '@db/client'
import type { SessionEvent } from '../domain/events.js'
import type { Db } from './database.js'
import { jsonValue } from './json-columns.js'

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

/** Rows of the event log, as one multi-row insert writes them. */
export const eventRows = (events: readonly SessionEvent[]) =>
  events.map(
    ({ tenantId, sessionId, sequence, runId, at, type, ...payload }) =>
      ({
        tenantId,
        sessionId,
        sequence,
        runId,
        type,
        at: new Date(at),
        payload: jsonValue(payload),
      }) satisfies Prisma.RunEventCreateManyInput,
  )

/** The persisted event log of session streams. */
export class EventStore {
  constructor(private readonly db: Db) {}

  /** Writes a batch in one multi-row insert. */
  async append(events: readonly SessionEvent[]): Promise<void> {
    await this.db.runEvent.createMany({ data: eventRows(events) })
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
