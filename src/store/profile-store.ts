import type { Prisma } from '@db/client'
import type { Db } from './database.js'

export interface ProfileRow {
  tenantId: string
  id: string
  /** As stored; the catalog validates it on the way out. */
  definition: unknown
  updatedAt: Date
}

const select = { tenantId: true, id: true, definition: true, updatedAt: true } satisfies Prisma.ProfileSelect

/** Profile definitions per tenant. */
export class ProfileStore {
  constructor(private readonly db: Db) {}

  find(tenantIds: string[], id: string): Promise<ProfileRow[]> {
    return this.db.profile.findMany({ where: { tenantId: { in: tenantIds }, id }, select })
  }

  list(tenantIds: string[]): Promise<ProfileRow[]> {
    return this.db.profile.findMany({ where: { tenantId: { in: tenantIds } }, orderBy: [{ id: 'asc' }, { tenantId: 'asc' }], select })
  }

  save(tenantId: string, id: string, definition: object): Promise<ProfileRow> {
    const data = definition as Prisma.InputJsonValue
    return this.db.profile.upsert({
      where: { tenantId_id: { tenantId, id } },
      create: { tenantId, id, definition: data },
      update: { definition: data },
      select,
    })
  }

  async delete(tenantId: string, id: string): Promise<boolean> {
    const { count } = await this.db.profile.deleteMany({ where: { tenantId, id } })
    return count > 0
  }

  async deleteExcept(tenantId: string, keepIds: string[]): Promise<number> {
    const { count } = await this.db.profile.deleteMany({ where: { tenantId, id: { notIn: keepIds } } })
    return count
  }
}
