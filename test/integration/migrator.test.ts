import { createHash } from 'node:crypto'
import { afterEach, describe, expect, it } from 'vitest'
import { type Database, openDatabase } from '../../src/store/database.js'
import { listMigrations, type MigrationFile, migrate } from '../../src/store/migrator.js'
import { createTestDatabase, providers, type TestDatabase } from '../helpers/databases.js'

const migrationFile = (name: string, sql: string): MigrationFile => ({
  name,
  sql,
  checksum: createHash('sha256').update(sql).digest('hex'),
})

/** What Prisma writes for SQLite to add a column to a table: a whole-table rebuild. */
async function rebuildMigration(database: Database, table: string): Promise<string> {
  const [row] = await database.db.$queryRawUnsafe<{ sql: string }[]>(
    `SELECT sql FROM sqlite_master WHERE type = 'table' AND name = '${table}'`,
  )
  const sql = row!.sql
  const columns = (await database.db.$queryRawUnsafe<{ name: string }[]>(`PRAGMA table_info("${table}")`))
    .map((c) => `"${c.name}"`)
    .join(', ')
  const created = sql
    .replace(`CREATE TABLE "${table}"`, `CREATE TABLE "new_${table}"`)
    .replace(/,\s*PRIMARY KEY/, ',\n    "archived" BOOLEAN NOT NULL DEFAULT false,\n    PRIMARY KEY')
  return `-- RedefineTables
PRAGMA defer_foreign_keys=ON;
PRAGMA foreign_keys=OFF;
${created};
INSERT INTO "new_${table}" (${columns}) SELECT ${columns} FROM "${table}";
DROP TABLE "${table}";
ALTER TABLE "new_${table}" RENAME TO "${table}";
PRAGMA foreign_keys=ON;
PRAGMA defer_foreign_keys=OFF;
`
}

describe.each(providers)('the start-up migrator (%s)', (provider) => {
  const opened: Database[] = []
  let testDb: TestDatabase
  const open = async () => {
    const database = await openDatabase(testDb.url)
    opened.push(database)
    return database
  }
  afterEach(async () => {
    for (const database of opened.splice(0)) await database.close()
    await testDb?.drop()
  })

  it('applies the committed migrations once and records them like the Prisma CLI', async () => {
    testDb = await createTestDatabase(provider)
    const database = await open()
    const committed = listMigrations(provider)
    expect(await migrate(database)).toEqual(committed.map((m) => m.name))
    expect(await migrate(database)).toEqual([])
    const rows = await database.db.$queryRawUnsafe<{ migration_name: string; checksum: string; applied_steps_count: number | bigint }[]>(
      'SELECT migration_name, checksum, applied_steps_count FROM "_prisma_migrations" ORDER BY migration_name',
    )
    expect(rows.map((r) => [r.migration_name, r.checksum, Number(r.applied_steps_count)])).toEqual(
      committed.map((m) => [m.name, m.checksum, 1]),
    )
  })

  it('refuses to start when an applied migration was edited', async () => {
    testDb = await createTestDatabase(provider)
    const database = await open()
    const [first] = listMigrations(provider)
    await migrate(database, [first!])
    await expect(migrate(database, [migrationFile(first!.name, `${first!.sql}\n-- edited`)])).rejects.toThrow(
      /was changed after it was applied/,
    )
  })

  // SQLite needs no test here: better-sqlite3 waits for a lock synchronously, so two clients in
  // one process would deadlock each other; across processes SQLite's own lock serializes them.
  it.runIf(provider === 'postgresql')('runs concurrent starters without applying anything twice', async () => {
    testDb = await createTestDatabase(provider)
    const [a, b] = [await open(), await open()]
    const results = await Promise.all([migrate(a), migrate(b)])
    expect(results.flat().sort()).toEqual(listMigrations(provider).map((m) => m.name))
  })

  it.runIf(provider === 'sqlite')('keeps child rows when a migration rebuilds their parent table', async () => {
    testDb = await createTestDatabase(provider)
    const database = await open()
    await migrate(database)
    const { db } = database
    await db.session.create({ data: { tenantId: 't', id: 's' } })
    await db.message.createMany({
      data: Array.from({ length: 50 }, (_, i) => ({
        id: `m${i}`,
        tenantId: 't',
        sessionId: 's',
        position: i,
        role: 'user',
        content: `${i}`,
      })),
    })
    await migrate(database, [
      ...listMigrations(provider),
      migrationFile('99999999999999_rebuild_session', await rebuildMigration(database, 'Session')),
    ])
    expect((await db.$queryRawUnsafe<{ name: string }[]>('PRAGMA table_info("Session")')).map((c) => c.name)).toContain('archived')
    expect(await db.message.count()).toBe(50)
    // foreign keys are back on afterwards: deleting the session cascades
    await db.session.delete({ where: { tenantId_id: { tenantId: 't', id: 's' } } })
    expect(await db.message.count()).toBe(0)
  })
})
