import type { Prisma } from '@db/client'
import type { ContentPart } from '../domain/content-parts.js'
import type { MessageRecord, SessionFork, SessionRecord } from '../domain/records.js'
import type { Db } from './database.js'
import { uniqueChecked } from './errors.js'
import { parsedColumn } from './json-columns.js'
import { sessionForkColumn, toolCallsColumn } from './record-json-columns.js'
import { json } from './run-path-rows.js'
import type { RunPathStatements } from './run-path-statements.js'
import type { Sql } from './sql-dialects.js'

/** Sessions a lease renewal names in one statement. */
const RENEW_BATCH = 200

const sessionSelect = {
  tenantId: true,
  id: true,
  title: true,
  defaultProfileId: true,
  metadata: true,
  keepHistory: true,
  webhookUrl: true,
  forkedFrom: true,
  createdAt: true,
  updatedAt: true,
} satisfies Prisma.SessionSelect

type SessionRow = Prisma.SessionGetPayload<{ select: typeof sessionSelect }>
const toSession = (row: SessionRow): SessionRecord => ({
  ...row,
  forkedFrom: parsedColumn(sessionForkColumn, row.forkedFrom, 'Session.forkedFrom', row.id),
  createdAt: row.createdAt.toISOString(),
  updatedAt: row.updatedAt.toISOString(),
})

const messageSelect = {
  id: true,
  sessionId: true,
  position: true,
  role: true,
  content: true,
  parts: true,
  toolCalls: true,
  toolCallId: true,
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
  constructor(
    private readonly db: Db,
    private readonly sql: Sql,
    private readonly statements: RunPathStatements,
  ) {}

  async find(tenantId: string, id: string): Promise<SessionRecord | null> {
    const row = await this.db.session.findUnique({ where: { tenantId_id: { tenantId, id } }, select: sessionSelect })
    return row && toSession(row)
  }

  /** Inserts a new session (with the history it starts with, in one transaction); a taken id fails as a UniqueViolation. */
  async create(input: {
    tenantId: string
    id: string
    title: string | null
    defaultProfileId: string | null
    metadata: unknown
    keepHistory: boolean
    webhookUrl: string | null
    forkedFrom: SessionFork | null
    /** Event sequences reserved with the row. */
    sequenceCeiling: number
    /** The creating instance holds the session from the start (none: nobody holds it yet). */
    leaseOwner?: string
    leaseExpiresAt?: Date
    /** A conversation it starts with (a fork's), written with it. */
    history?: readonly MessageRecord[]
  }): Promise<SessionRecord> {
    const at = new Date()
    const {
      sequenceCeiling,
      leaseOwner = null,
      leaseExpiresAt = null,
      history = [],
      ...session
    } = { ...input, metadata: input.metadata ?? null }
    const row = {
      ...session,
      metadata: session.metadata === null ? null : json(session.metadata),
      forkedFrom: session.forkedFrom === null ? null : json(session.forkedFrom),
      sequenceCeiling,
      leaseOwner,
      leaseExpiresAt,
      createdAt: at,
      updatedAt: at,
    }
    const insert = (on: Sql) => on.insertInto('Session').values(row).execute()
    if (history.length === 0) await uniqueChecked(insert(this.sql))
    else {
      await uniqueChecked(
        this.sql.transaction().execute(async (tx) => {
          await insert(tx)
          await this.statements.insertMessages(session.tenantId, history, tx)
        }),
      )
    }
    return { ...session, createdAt: at.toISOString(), updatedAt: at.toISOString() }
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

  /** Deletes the session with its event log (its entries and messages go by cascade; runs stay). */
  async delete(tenantId: string, id: string): Promise<boolean> {
    const [, { count }] = await this.db.$transaction([
      this.db.runEvent.deleteMany({ where: { tenantId, sessionId: id } }),
      this.db.session.deleteMany({ where: { tenantId, id } }),
    ])
    return count > 0
  }

  /** The conversation so far, oldest first. */
  async messages(tenantId: string, sessionId: string): Promise<MessageRecord[]> {
    const rows = await this.db.message.findMany({ where: { tenantId, sessionId }, orderBy: { position: 'asc' }, select: messageSelect })
    return rows.map((m) => ({
      ...m,
      role: m.role as MessageRecord['role'],
      parts: (m.parts as ContentPart[] | null) ?? [],
      toolCalls: parsedColumn(toolCallsColumn, m.toolCalls, 'Message.toolCalls', m.id) ?? [],
      createdAt: m.createdAt.toISOString(),
    }))
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

  /** Lowers the reserved sequence ceiling from `from` to `to`, only if nobody raised it since. */
  async lowerSequenceCeiling(tenantId: string, id: string, from: number, to: number): Promise<void> {
    await this.db.session.updateMany({ where: { tenantId, id, sequenceCeiling: from }, data: { sequenceCeiling: to } })
  }

  /**
   * Takes the session's lease for `owner` unless another instance holds one, one that has not
   * expired when `takeOver`; returns who holds it afterwards (`owner` when taken), or null for no
   * such session.
   */
  async claimLease(tenantId: string, id: string, owner: string, ttlMs: number, takeOver: boolean): Promise<string | null> {
    const now = new Date()
    await this.db.session.updateMany({
      where: { tenantId, id, OR: [{ leaseOwner: null }, { leaseOwner: owner }, ...(takeOver ? [{ leaseExpiresAt: { lt: now } }] : [])] },
      data: { leaseOwner: owner, leaseExpiresAt: new Date(now.getTime() + ttlMs) },
    })
    const row = await this.db.session.findUnique({ where: { tenantId_id: { tenantId, id } }, select: { leaseOwner: true } })
    return row?.leaseOwner ?? null
  }

  /** Who holds the session's lease and until when, as written; null when there is no such session. */
  async leaseOf(tenantId: string, id: string): Promise<{ owner: string | null; expiresAt: Date | null } | null> {
    const row = await this.db.session.findUnique({
      where: { tenantId_id: { tenantId, id } },
      select: { leaseOwner: true, leaseExpiresAt: true },
    })
    return row && { owner: row.leaseOwner, expiresAt: row.leaseExpiresAt }
  }

  /**
   * Extends the leases of `sessions` that `owner` still holds, expired ones too (nobody took them:
   * a takeover names its new owner); returns those (any other is lost).
   */
  async renewLeases(
    owner: string,
    ttlMs: number,
    sessions: readonly { tenantId: string; id: string }[],
  ): Promise<{ tenantId: string; id: string }[]> {
    const expiresAt = new Date(Date.now() + ttlMs)
    const still: { tenantId: string; id: string }[] = []
    // in batches: a statement takes a bounded number of parameters (SQLite's 32,766; Prisma may
    // split fewer), and a busy instance holds thousands of sessions
    for (let from = 0; from < sessions.length; from += RENEW_BATCH) {
      const these = { OR: sessions.slice(from, from + RENEW_BATCH).map(({ tenantId, id }) => ({ tenantId, id })) }
      await this.db.session.updateMany({ where: { ...these, leaseOwner: owner }, data: { leaseExpiresAt: expiresAt } })
      still.push(...(await this.db.session.findMany({ where: { ...these, leaseOwner: owner }, select: { tenantId: true, id: true } })))
    }
    return still
  }

  /** Gives up `owner`'s leases (a draining instance hands its sessions on). */
  async releaseLeases(owner: string): Promise<void> {
    await this.db.session.updateMany({ where: { leaseOwner: owner }, data: { leaseOwner: null, leaseExpiresAt: null } })
  }

  /**
   * Sessions whose owner's lease expired (or was released) while prompts wait in them, up to
   * `take` (all without); with `heldBy`, also those that instance holds (a restarted instance's
   * own, left by its earlier run).
   */
  orphaned(
    now: Date,
    { take, heldBy = null }: { take?: number; heldBy?: string | null },
  ): Promise<{ tenantId: string; id: string; leaseOwner: string | null }[]> {
    return this.db.session.findMany({
      where: {
        OR: [{ leaseOwner: null }, { leaseExpiresAt: { lt: now } }, ...(heldBy === null ? [] : [{ leaseOwner: heldBy }])],
        entries: { some: { status: { in: ['QUEUED', 'SCHEDULED', 'STARTING', 'RUNNING'] } } },
      },
      select: { tenantId: true, id: true, leaseOwner: true },
      take,
    })
  }
}
