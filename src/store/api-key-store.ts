import type { Prisma } from '@db/client'
import { z } from 'zod'
import type { AccessRole } from '../domain/access.js'
import { type ApiKeyRecord, BUDGET_PERIODS, type KeyPolicy } from '../domain/api-keys.js'
import type { Db } from './database.js'
import { nullableJson, parsedColumn } from './json-columns.js'

type Row = Prisma.ApiKeyGetPayload<object>

const idsColumn = z.array(z.string()).nullable()
const limitsColumn = z
  .object({ requestsPerMinute: z.number().nullable(), tokensPerMinute: z.number().nullable(), concurrentRuns: z.number().nullable() })
  .nullable()
const budgetColumn = z.object({ costUsd: z.number(), period: z.enum(BUDGET_PERIODS) }).nullable()

const ROLE_COLUMN: Record<AccessRole, string> = { read: 'READ', write: 'WRITE', admin: 'ADMIN' }
const roleOf = (column: string) => column.toLowerCase() as AccessRole

function toRecord(row: Row): ApiKeyRecord {
  return {
    id: row.id,
    tenantId: row.tenantId,
    name: row.name,
    prefix: row.prefix,
    role: roleOf(row.role),
    createdAt: row.createdAt.toISOString(),
    expiresAt: row.expiresAt?.toISOString() ?? null,
    revokedAt: row.revokedAt?.toISOString() ?? null,
    lastUsedAt: row.lastUsedAt?.toISOString() ?? null,
    allowedProfiles: parsedColumn(idsColumn, row.allowedProfiles, 'ApiKey.allowedProfiles', row.id),
    allowedPrompts: parsedColumn(idsColumn, row.allowedPrompts, 'ApiKey.allowedPrompts', row.id),
    limits: parsedColumn(limitsColumn, row.limits, 'ApiKey.limits', row.id),
    budget: parsedColumn(budgetColumn, row.budget, 'ApiKey.budget', row.id),
  }
}

/** The columns of a policy that an input sets; a field left undefined is not touched. */
function policyData(policy: Partial<KeyPolicy>) {
  return {
    ...(policy.limits !== undefined && { limits: nullableJson(policy.limits) }),
    ...(policy.budget !== undefined && { budget: nullableJson(policy.budget) }),
    ...(policy.allowedProfiles !== undefined && { allowedProfiles: nullableJson(policy.allowedProfiles) }),
    ...(policy.allowedPrompts !== undefined && { allowedPrompts: nullableJson(policy.allowedPrompts) }),
  }
}

/** A new key's row: its secret's hash, never the secret. */
export interface NewKey extends KeyPolicy {
  id: string
  tenantId: string
  name: string
  prefix: string
  role: AccessRole
  secretSha256: string
  expiresAt: Date | null
}

/** What may change of a key: fields left undefined stay. */
export type KeyChanges = Partial<KeyPolicy> & { name?: string; expiresAt?: Date | null }

/** API keys kept in the database, by tenant; a secret is found by its sha256 (current, or previous within its grace). */
export class ApiKeyStore {
  constructor(private readonly db: Db) {}

  async create(key: NewKey): Promise<ApiKeyRecord> {
    const { id, tenantId, name, prefix, role, secretSha256, expiresAt } = key
    const data = { id, tenantId, name, prefix, role: ROLE_COLUMN[role], secretSha256, expiresAt, ...policyData(key) }
    return toRecord(await this.db.apiKey.create({ data }))
  }

  async find(tenantId: string, id: string): Promise<ApiKeyRecord | null> {
    const row = await this.db.apiKey.findFirst({ where: { tenantId, id } })
    return row && toRecord(row)
  }

  /** The key a secret's sha256 names at `now`: its current secret, or its previous one within the grace; revoked and expired keys too (the caller judges). */
  async findBySecret(sha256: string, now: Date): Promise<ApiKeyRecord | null> {
    const row = await this.db.apiKey.findFirst({
      where: { OR: [{ secretSha256: sha256 }, { previousSha256: sha256, previousExpiresAt: { gt: now } }] },
    })
    return row && toRecord(row)
  }

  /** Newest first, after the key `after` names. */
  async list(tenantId: string, after: { createdAt: string; id: string } | null, take: number): Promise<ApiKeyRecord[]> {
    const at = after && new Date(after.createdAt)
    const rows = await this.db.apiKey.findMany({
      where: { tenantId, ...(at && { OR: [{ createdAt: { lt: at } }, { createdAt: at, id: { lt: after.id } }] }) },
      orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
      take,
    })
    return rows.map(toRecord)
  }

  /** Changes a key that is not revoked; null when there is none. */
  async update(tenantId: string, id: string, changes: KeyChanges): Promise<ApiKeyRecord | null> {
    const { name, expiresAt } = changes
    const data = { ...(name !== undefined && { name }), ...(expiresAt !== undefined && { expiresAt }), ...policyData(changes) }
    return this.changed(tenantId, id, data)
  }

  /** A new secret; the previous one keeps working until `graceEndsAt` (null: not at all). */
  rotate(tenantId: string, id: string, secret: { sha256: string; prefix: string }, graceEndsAt: Date | null) {
    return this.changed(tenantId, id, (row) => ({
      secretSha256: secret.sha256,
      prefix: secret.prefix,
      previousSha256: graceEndsAt ? row.secretSha256 : null,
      previousExpiresAt: graceEndsAt,
    }))
  }

  revoke(tenantId: string, id: string, at: Date) {
    return this.changed(tenantId, id, { revokedAt: at, previousSha256: null, previousExpiresAt: null })
  }

  /** Records a use; a key used often is written at most once per call here, by its caller's throttle. */
  async used(id: string, at: Date): Promise<void> {
    await this.db.apiKey.updateMany({ where: { id }, data: { lastUsedAt: at } })
  }

  /** Applies `data` (or what it makes of the row) to an unrevoked key in one transaction. */
  private async changed(
    tenantId: string,
    id: string,
    data: Prisma.ApiKeyUpdateInput | ((row: Row) => Prisma.ApiKeyUpdateInput),
  ): Promise<ApiKeyRecord | null> {
    return this.db.$transaction(async (tx) => {
      const row = await tx.apiKey.findFirst({ where: { tenantId, id, revokedAt: null } })
      if (!row) return null
      return toRecord(await tx.apiKey.update({ where: { id }, data: typeof data === 'function' ? data(row) : data }))
    })
  }
}
