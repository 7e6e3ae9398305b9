import type { Prisma } from '@db/client'
import type { MessageRecord, SessionRecord } from '../domain/records.js'
import type { Db } from './database.js'

const sessionSelect = {
  tenantId: true,
  id: true,
  title: true,
  defaultProfileId: true,
  metadata: true,
  keepHistory: true,
  createdAt: true,
  updatedAt: true,
} satisfies Prisma.SessionSelect

type SessionRow = Prisma.SessionGetPayload<{ select: typeof sessionSelect }>
const toSession = (row: SessionRow): SessionRecord => ({
  ...row,
  createdAt: row.createdAt.toISOString(),
  updatedAt: row.updatedAt.toISOString(),
})

const messageSelect = {
  id: true,
  sessionId: true,
  position: true,
  role: true,
  content: true,
  runId: true,
  interrupted: true,
  createdAt: true,
} satisfies Prisma.MessageSelect

/** Where a page of sessions starts: after this (createdAt, id), newest first. */
export interface SessionCursor {
  createdAt: string
  id: string
}

/** Sessions and their conversation history. */
export class SessionStore {
  constructor(private readonly db: Db) {}

  async find(tenantId: string, id: string): Promise<SessionRecord | null> {
    const row = await this.db.session.findUnique({ where: { tenantId_id: { tenantId, id } }, select: sessionSelect })
    return row && toSession(row)
  }

  async create(input: {
    tenantId: string
    id: string
    title: string | null
    defaultProfileId: string | null
    metadata: unknown
    keepHistory: boolean
  }): Promise<SessionRecord> {
    const row = await this.db.session.create({
      data: {
        tenantId: input.tenantId,
        id: input.id,
        title: input.title,
        defaultProfileId: input.defaultProfileId,
        metadata: (input.metadata ?? undefined) as Prisma.InputJsonValue | undefined,
        keepHistory: input.keepHistory,
      },
      select: sessionSelect,
    })
    return toSession(row)
  }

  /** Newest first. */
  async list(tenantId: string, after: SessionCursor | null, take: number): Promise<SessionRecord[]> {
    const rows = await this.db.session.findMany({
      where: {
        tenantId,
        ...(after && {
          OR: [{ createdAt: { lt: new Date(after.createdAt) } }, { createdAt: new Date(after.createdAt), id: { lt: after.id } }],
        }),
      },
      orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
      take,
      select: sessionSelect,
    })
    return rows.map(toSession)
  }

  /** Deletes the session with its messages and queue entries; runs and events stay as records. */
  async delete(tenantId: string, id: string): Promise<boolean> {
    const { count } = await this.db.session.deleteMany({ where: { tenantId, id } })
    return count > 0
  }

  /** The conversation so far, oldest first. */
  async messages(tenantId: string, sessionId: string): Promise<MessageRecord[]> {
    const rows = await this.db.message.findMany({ where: { tenantId, sessionId }, orderBy: { position: 'asc' }, select: messageSelect })
    return rows.map((m) => ({ ...m, role: m.role as MessageRecord['role'], createdAt: m.createdAt.toISOString() }))
  }

  /** The highest event sequence reserved for the session. */
  async sequenceCeiling(tenantId: string, id: string): Promise<number> {
    const row = await this.db.session.findUnique({ where: { tenantId_id: { tenantId, id } }, select: { sequenceCeiling: true } })
    return row?.sequenceCeiling ?? 0
  }

  /** Raises (never lowers) the reserved sequence ceiling. */
  async raiseSequenceCeiling(tenantId: string, id: string, ceiling: number): Promise<void> {
    await this.db.session.updateMany({ where: { tenantId, id, sequenceCeiling: { lt: ceiling } }, data: { sequenceCeiling: ceiling } })
  }
}
