import type { Db } from './database.js'

export interface SessionRow {
  tenantId: string
  id: string
  title: string | null
  defaultProfileId: string | null
  createdAt: Date
}

export interface MessageRow {
  role: string
  content: string
}

/** Sessions and their conversation history. */
export class SessionStore {
  constructor(private readonly db: Db) {}

  find(tenantId: string, id: string): Promise<SessionRow | null> {
    return this.db.session.findUnique({
      where: { tenantId_id: { tenantId, id } },
      select: { tenantId: true, id: true, title: true, defaultProfileId: true, createdAt: true },
    })
  }

  create(input: { tenantId: string; id: string; title?: string | null; defaultProfileId?: string | null }): Promise<SessionRow> {
    return this.db.session.create({
      data: { tenantId: input.tenantId, id: input.id, title: input.title ?? null, defaultProfileId: input.defaultProfileId ?? null },
      select: { tenantId: true, id: true, title: true, defaultProfileId: true, createdAt: true },
    })
  }

  /** The conversation so far, oldest first. */
  messages(tenantId: string, sessionId: string): Promise<MessageRow[]> {
    return this.db.message.findMany({
      where: { tenantId, sessionId },
      orderBy: { position: 'asc' },
      select: { role: true, content: true },
    })
  }

  async appendMessages(tenantId: string, sessionId: string, messages: MessageRow[]): Promise<void> {
    await this.db.$transaction(async (tx) => {
      const last = await tx.message.findFirst({ where: { tenantId, sessionId }, orderBy: { position: 'desc' }, select: { position: true } })
      let position = last?.position ?? 0
      await tx.message.createMany({
        data: messages.map((m) => ({ id: crypto.randomUUID(), tenantId, sessionId, position: ++position, role: m.role, content: m.content })),
      })
    })
  }
}
