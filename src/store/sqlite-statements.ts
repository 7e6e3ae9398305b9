import type BetterSqlite3 from 'better-sqlite3'
import { TextKeyedCache } from '../domain/bounded-cache.js'
import type { RawExecutor } from './raw-writer.js'

/** As Prisma's better-sqlite3 adapter stores them, so its reads parse what we write. */
function toSqlite(value: unknown): unknown {
  if (value === undefined || value === null) return null
  if (typeof value === 'boolean') return value ? 1 : 0
  if (value instanceof Date) return value.toISOString().replace('Z', '+00:00')
  return value
}

/**
 * The store's run-path statements (the raw writer's) straight on the better-sqlite3 connection
 * Prisma's adapter opened: each SQL text is prepared once and reused, and no statement pays
 * Prisma's per-query machinery. It is the same connection, so inside a Prisma transaction these
 * statements are part of it.
 */
export function sqliteStatements(driver: BetterSqlite3.Database): RawExecutor {
  const prepared = new TextKeyedCache<BetterSqlite3.Statement>(1024 * 1024)
  const statement = (sql: string) => {
    let found = prepared.get(sql)
    if (!found) {
      found = driver.prepare(sql)
      prepared.set(sql, found)
    }
    return found
  }
  const settle = <T>(run: () => T): Promise<T> => {
    try {
      return Promise.resolve(run())
    } catch (error) {
      return Promise.reject(error)
    }
  }
  return {
    $executeRawUnsafe: (sql, ...values) => settle(() => statement(sql).run(...values.map(toSqlite)).changes),
    returning: (sql, ...values) => settle(() => statement(sql).all(...values.map(toSqlite)) as Record<string, unknown>[]),
  }
}
