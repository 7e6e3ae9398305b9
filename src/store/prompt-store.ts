import type { Prisma } from '@db/client'
import type { Db } from './database.js'
import { driverChecked, isUniqueViolation } from './errors.js'

export interface PromptRow {
  tenantId: string
  id: string
  version: number
  definitionHash: string
  /** As stored; the catalog validates it on the way out. */
  definition: unknown
  description: string | null
  updatedAt: Date
}

const select = {
  tenantId: true,
  id: true,
  version: true,
  definitionHash: true,
  definition: true,
  description: true,
  updatedAt: true,
} satisfies Prisma.PromptSelect

/** One stored version of a prompt: its definition as saved, never changed. */
export interface PromptVersionRow {
  tenantId: string
  promptId: string
  version: number
  definitionHash: string
  definition: unknown
  authorKeyId: string | null
  createdAt: Date
}

const versionSelect = {
  tenantId: true,
  promptId: true,
  version: true,
  definitionHash: true,
  definition: true,
  authorKeyId: true,
  createdAt: true,
} satisfies Prisma.PromptVersionSelect

/** Prompt definitions per tenant, with an append-only version history. */
export class PromptStore {
  constructor(private readonly db: Db) {}

  find(tenantIds: string[], id: string): Promise<PromptRow[]> {
    return this.db.prompt.findMany({ where: { tenantId: { in: tenantIds }, id }, select })
  }

  /** Rows of any of the tenants with id > afterId, by id; an id may appear once per tenant. */
  list(tenantIds: string[], afterId: string | null, take: number): Promise<PromptRow[]> {
    return this.db.prompt.findMany({
      where: { tenantId: { in: tenantIds }, ...(afterId !== null ? { id: { gt: afterId } } : {}) },
      orderBy: [{ id: 'asc' }, { tenantId: 'asc' }],
      take,
      select,
    })
  }

  /**
   * Saves a definition. An unchanged hash keeps the version (only the description may change);
   * a new one gets max(current, floorVersion) + 1 and a history row.
   */
  async save(input: {
    tenantId: string
    id: string
    description: string | null
    definition: object
    definitionHash: string
    floorVersion: number
    authorKeyId: string | null
  }): Promise<PromptRow> {
    const { tenantId, id, description, definitionHash, authorKeyId } = input
    const definition = input.definition as Prisma.InputJsonValue
    for (let attempt = 0; ; attempt++) {
      try {
        return await driverChecked(
          this.db.$transaction(async (tx) => {
            const current = await tx.prompt.findUnique({ where: { tenantId_id: { tenantId, id } }, select })
            if (current && current.definitionHash === definitionHash) {
              if (current.description === description) return current
              return tx.prompt.update({ where: { tenantId_id: { tenantId, id } }, data: { description }, select })
            }
            const version = Math.max(current?.version ?? 0, input.floorVersion) + 1
            await tx.promptVersion.create({ data: { tenantId, promptId: id, version, definitionHash, definition, authorKeyId } })
            return tx.prompt.upsert({
              where: { tenantId_id: { tenantId, id } },
              create: { tenantId, id, version, definitionHash, definition, description },
              update: { version, definitionHash, definition, description },
              select,
            })
          }),
        )
      } catch (err) {
        // Two writers raced for the same next version: the loser reads again and retries.
        if (attempt < 3 && isUniqueViolation(err)) continue
        throw err
      }
    }
  }

  /** Versions of a prompt id under any of the tenants, newest first, below `beforeVersion`. */
  versions(tenantIds: string[], id: string, beforeVersion: number | null, take: number): Promise<PromptVersionRow[]> {
    return this.db.promptVersion.findMany({
      where: { tenantId: { in: tenantIds }, promptId: id, ...(beforeVersion !== null && { version: { lt: beforeVersion } }) },
      orderBy: [{ version: 'desc' }, { tenantId: 'asc' }],
      take,
      select: versionSelect,
    })
  }

  /** One version of a prompt id, under any of the tenants (a version number may be stored once per tenant). */
  version(tenantIds: string[], id: string, version: number): Promise<PromptVersionRow[]> {
    return this.db.promptVersion.findMany({ where: { tenantId: { in: tenantIds }, promptId: id, version }, select: versionSelect })
  }

  async delete(tenantId: string, id: string): Promise<boolean> {
    const { count } = await this.db.prompt.deleteMany({ where: { tenantId, id } })
    return count > 0
  }

  /** Removes a tenant's prompts that are not in `keepIds` (history stays). */
  async deleteExcept(tenantId: string, keepIds: string[]): Promise<number> {
    const { count } = await this.db.prompt.deleteMany({ where: { tenantId, id: { notIn: keepIds } } })
    return count
  }

  /** The highest version a prompt id ever had for a tenant, deleted or not. */
  async latestVersion(tenantId: string, id: string): Promise<number> {
    const row = await this.db.promptVersion.findFirst({
      where: { tenantId, promptId: id },
      orderBy: { version: 'desc' },
      select: { version: true },
    })
    return row?.version ?? 0
  }
}
