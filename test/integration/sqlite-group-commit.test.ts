import { statSync } from 'node:fs'
import Sqlite from 'better-sqlite3'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { type Database, openDatabase } from '../../src/store/database.js'
import { migrate } from '../../src/store/migrator.js'
import { createTestDatabase, type TestDatabase } from '../helpers/databases.js'

// Concurrent writes on the one SQLite connection share a COMMIT (src/store/sqlite-lane.ts). What a
// caller must still see: an answer only once its write is committed, and a failure that undoes
// its own writes and no one else's. The WAL is checkpointed by a thread (src/store/sqlite-checkpointer.ts).
describe('writes on SQLite: concurrent ones committed together, the WAL checkpointed aside', () => {
  let file: TestDatabase
  let database: Database
  /** A second connection to the file: it sees only what was committed. */
  let observer: Sqlite.Database
  beforeEach(async () => {
    file = await createTestDatabase('sqlite')
    database = await openDatabase(file.url)
    await migrate(database)
    observer = new Sqlite(file.url.slice('file:'.length), { readonly: true })
  })
  afterEach(async () => {
    observer.close()
    await database.close()
    await file.drop()
  })

  const now = () => new Date()
  const committed = (id: string) => observer.prepare('SELECT id FROM Session WHERE tenantId = ? AND id = ?').get('t', id) !== undefined
  const row = (id: string) => ({ tenantId: 't', id, createdAt: now(), updatedAt: now() })

  /** 60 writes at once, a third each of Kysely statements, Kysely transactions and Prisma writes. */
  const writes = (ids: string[], fail: (id: string) => boolean) =>
    ids.map(async (id, i) => {
      if (i % 3 === 0) await database.sql.insertInto('Session').values(row(id)).execute()
      else if (i % 3 === 1)
        await database.sql.transaction().execute(async (tx) => {
          await tx.insertInto('Session').values(row(id)).execute()
          await tx.updateTable('Session').set({ title: 'written' }).where('id', '=', id).execute()
          if (fail(id)) throw new Error(`${id} gives up`)
        })
      else
        await database.db.$transaction(async (tx) => {
          await tx.session.create({ data: { tenantId: 't', id } })
          if (fail(id)) throw new Error(`${id} gives up`)
        })
      return { id, committedWhenAnswered: committed(id) }
    })

  it('answers each of 60 concurrent writes only once another connection can read it', async () => {
    const ids = Array.from({ length: 60 }, (_, i) => `s${i}`)
    const answers = await Promise.all(writes(ids, () => false))
    expect(answers.filter((a) => !a.committedWhenAnswered)).toEqual([])
  })

  it('a transaction that fails among concurrent ones undoes its own writes and keeps every other', async () => {
    const ids = Array.from({ length: 60 }, (_, i) => `s${i}`)
    const failing = new Set(['s1', 's2', 's31', 's32'])
    const outcomes = await Promise.allSettled(writes(ids, (id) => failing.has(id)))
    const refused = ids.filter((_, i) => outcomes[i]!.status === 'rejected')
    expect(refused).toEqual([...failing])
    expect(ids.filter((id) => !committed(id))).toEqual([...failing])
    const titles = observer.prepare("SELECT COUNT(*) AS n FROM Session WHERE title = 'written'").get() as { n: number }
    expect(titles.n).toBe(ids.filter((id, i) => i % 3 === 1 && !failing.has(id)).length)
  })

  it('a statement refused by a constraint among concurrent writes fails alone', async () => {
    await database.sql.insertInto('Session').values(row('taken')).execute()
    const ids = Array.from({ length: 30 }, (_, i) => (i === 12 ? 'taken' : `s${i}`))
    const outcomes = await Promise.allSettled(ids.map((id) => database.sql.insertInto('Session').values(row(id)).execute()))
    expect(ids.filter((_, i) => outcomes[i]!.status === 'rejected')).toEqual(['taken'])
    expect(ids.filter((id) => !committed(id))).toEqual([])
  })

  it('copies committed pages into the database file while it writes, long before the WAL holds 1,000 pages', async () => {
    const path = file.url.slice('file:'.length)
    const before = statSync(path).size
    await Promise.all(
      Array.from({ length: 500 }, (_, i) =>
        database.sql
          .insertInto('Session')
          .values(row(`s${i}`))
          .execute(),
      ),
    )
    // SQLite's own checkpoint would wait for 1,000 pages; these writes are a few dozen
    expect(statSync(`${path}-wal`).size).toBeLessThan(1000 * 4096)
    await vi.waitFor(() => expect(statSync(path).size).toBeGreaterThan(before), { timeout: 10_000, interval: 50 })
  })
})
