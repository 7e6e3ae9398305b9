import { type Usage, usageOf } from '../domain/records.js'
import type { CachedAnswer } from '../domain/response-cache.js'
import type { Db } from './database.js'
import { jsonValue } from './json-columns.js'

type Stored = Omit<CachedAnswer, 'sourceRunId' | 'sourceUsage' | 'createdAt'>

/** What a put keeps, and for how long. */
export interface ResponseCachePut {
  tenantId: string
  key: string
  answer: CachedAnswer
  expiresAt: Date
  /** The tenant's entries are trimmed to this many, oldest first. */
  maxEntries: number
}

/** The exact response cache: completed answers by the hash of what decided them, per tenant, bounded. */
export class ResponseCacheStore {
  constructor(private readonly db: Db) {}

  /** The answer kept for `key`, unless it expired by `now`. */
  async find(tenantId: string, key: string, now: Date): Promise<CachedAnswer | null> {
    const row = await this.db.responseCacheEntry.findUnique({ where: { tenantId_key: { tenantId, key } } })
    if (!row || row.expiresAt <= now) return null
    return {
      ...(row.answer as Stored),
      sourceRunId: row.sourceRunId,
      sourceUsage: usageOf(row.sourceUsage as Partial<Usage>),
      createdAt: row.createdAt.toISOString(),
    }
  }

  /** Keeps an answer (a later one for the same key replaces it), then drops the tenant's expired and oldest entries past the bound. */
  async put({ tenantId, key, answer, expiresAt, maxEntries }: ResponseCachePut): Promise<void> {
    const { sourceRunId, sourceUsage, createdAt: _, ...stored } = answer
    const data = {
      sourceRunId,
      answer: jsonValue(stored),
      sourceUsage: jsonValue(sourceUsage),
      bytes: JSON.stringify(stored).length,
      createdAt: new Date(),
      expiresAt,
    }
    await this.db.responseCacheEntry.upsert({
      where: { tenantId_key: { tenantId, key } },
      create: { tenantId, key, ...data },
      update: data,
    })
    await this.db.responseCacheEntry.deleteMany({ where: { tenantId, expiresAt: { lte: new Date() } } })
    const overflow = await this.db.responseCacheEntry.findMany({
      where: { tenantId },
      orderBy: { createdAt: 'desc' },
      skip: maxEntries,
      select: { key: true },
    })
    if (overflow.length > 0) await this.db.responseCacheEntry.deleteMany({ where: { tenantId, key: { in: overflow.map((r) => r.key) } } })
  }
}
