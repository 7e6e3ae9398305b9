import { createHash, randomUUID } from 'node:crypto'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Database } from './database.js'

/** prisma/migrations/<provider>, two folders above this file in src/ and in dist/. */
const MIGRATIONS_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../prisma/migrations')
const PRISMA_LOCK_ID = 72707369 // the Prisma CLI's advisory lock id

const CREATE_TABLE = {
  sqlite: `CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
    "id" TEXT PRIMARY KEY NOT NULL, "checksum" TEXT NOT NULL, "finished_at" DATETIME,
    "migration_name" TEXT NOT NULL, "logs" TEXT, "rolled_back_at" DATETIME,
    "started_at" DATETIME NOT NULL DEFAULT current_timestamp, "applied_steps_count" INTEGER UNSIGNED NOT NULL DEFAULT 0)`,
  postgresql: `CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
    "id" VARCHAR(36) PRIMARY KEY NOT NULL, "checksum" VARCHAR(64) NOT NULL, "finished_at" TIMESTAMPTZ,
    "migration_name" VARCHAR(255) NOT NULL, "logs" TEXT, "rolled_back_at" TIMESTAMPTZ,
    "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(), "applied_steps_count" INTEGER NOT NULL DEFAULT 0)`,
}

interface AppliedRow {
  migration_name: string
  checksum: string
  finished_at: unknown
  rolled_back_at: unknown
}

export interface MigrationFile {
  name: string
  sql: string
  checksum: string
}

export function listMigrations(provider: Database['provider'], root = MIGRATIONS_ROOT): MigrationFile[] {
  const dir = path.join(root, provider)
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && existsSync(path.join(dir, e.name, 'migration.sql')))
    .map((e) => e.name)
    .sort()
    .map((name) => {
      const sql = readFileSync(path.join(dir, name, 'migration.sql'), 'utf8')
      return { name, sql, checksum: createHash('sha256').update(sql).digest('hex') }
    })
}

/** Prisma's generated SQL ends every statement with `;` at a line end. */
function splitStatements(sql: string): string[] {
  return sql
    .split(/;\s*$/m)
    .map((s) => s.replace(/^\s*--.*$/gm, '').trim())
    .filter(Boolean)
}

type Tx = Parameters<Parameters<Database['db']['$transaction']>[0]>[0]

/**
 * Runs `work` in a transaction that first takes the migration lock, so concurrent starters
 * queue instead of racing: PostgreSQL's advisory lock (the CLI's id), or on SQLite a write
 * lock taken up front (a read first would make the later write fail with SQLITE_BUSY).
 */
async function inMigrationLock<T>({ db, provider }: Database, work: (tx: Tx) => Promise<T>): Promise<T> {
  // SQLite rebuilds tables to alter them; with foreign keys on, DROP TABLE inside the
  // transaction would cascade-delete child rows, and the pragma is a no-op inside one.
  if (provider === 'sqlite') await db.$executeRawUnsafe('PRAGMA foreign_keys=OFF')
  try {
    return await db.$transaction(
      async (tx) => {
        if (provider === 'postgresql') await tx.$queryRawUnsafe(`SELECT pg_advisory_xact_lock(${PRISMA_LOCK_ID})::text AS locked`)
        else await tx.$executeRawUnsafe('UPDATE "_prisma_migrations" SET "logs" = "logs" WHERE 0 = 1')
        const result = await work(tx)
        if (provider === 'sqlite') {
          const broken = await tx.$queryRawUnsafe<unknown[]>('PRAGMA foreign_key_check')
          if (broken.length > 0) throw new Error(`migration leaves ${broken.length} rows with broken foreign keys`)
        }
        return result
      },
      { maxWait: 30_000, timeout: 120_000 },
    )
  } finally {
    if (provider === 'sqlite') await db.$executeRawUnsafe('PRAGMA foreign_keys=ON')
  }
}

/**
 * Applies the committed migration SQL at start, recording each in `_prisma_migrations` with the
 * CLI's layout so Prisma's own tools agree with the history. Returns the names it applied.
 */
export async function migrate(database: Database, migrations = listMigrations(database.provider)): Promise<string[]> {
  const { db, provider } = database
  const param = (n: number) => (provider === 'sqlite' ? '?' : `$${n}`)
  // SQLite serializes the CREATE itself; PostgreSQL races on it unless it is under the lock
  if (provider === 'sqlite') await db.$executeRawUnsafe(CREATE_TABLE.sqlite)
  else
    await db.$transaction(async (tx) => {
      await tx.$queryRawUnsafe(`SELECT pg_advisory_xact_lock(${PRISMA_LOCK_ID})::text AS locked`)
      await tx.$executeRawUnsafe(CREATE_TABLE.postgresql)
    })

  const applied: string[] = []
  for (const migration of migrations) {
    const done = await inMigrationLock(database, async (tx) => {
      const rows = await tx.$queryRawUnsafe<AppliedRow[]>(
        `SELECT migration_name, checksum, finished_at, rolled_back_at FROM "_prisma_migrations" WHERE migration_name = ${param(1)}`,
        migration.name,
      )
      const live = rows.filter((r) => r.rolled_back_at == null)
      if (live.some((r) => r.finished_at == null)) {
        throw new Error(`migration ${migration.name} was started but never finished: repair the database, then mark it rolled back`)
      }
      if (live.length > 0) {
        if (live[0]!.checksum !== migration.checksum) {
          throw new Error(
            `migration ${migration.name} was changed after it was applied: restore prisma/migrations/${provider}/${migration.name}`,
          )
        }
        return false
      }
      for (const statement of splitStatements(migration.sql)) await tx.$executeRawUnsafe(statement)
      await tx.$executeRawUnsafe(
        `INSERT INTO "_prisma_migrations" (id, checksum, migration_name, finished_at, started_at, applied_steps_count)
         VALUES (${param(1)}, ${param(2)}, ${param(3)}, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP, 1)`,
        randomUUID(),
        migration.checksum,
        migration.name,
      )
      return true
    })
    if (done) applied.push(migration.name)
  }
  return applied
}

/** The committed migrations the database has not applied (a newer release's, say). */
export async function pendingMigrations(database: Database, migrations = listMigrations(database.provider)): Promise<string[]> {
  const rows = await database.db.$queryRawUnsafe<{ migration_name: string }[]>(
    `SELECT migration_name FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL`,
  )
  const applied = new Set(rows.map((r) => r.migration_name))
  return migrations.map((m) => m.name).filter((name) => !applied.has(name))
}
