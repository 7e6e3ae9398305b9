import { mkdirSync } from 'node:fs'
import path from 'node:path'
import type { PrismaClient } from '@db/client'
import { SqliteLaneFactory } from './sqlite-lane.js'

/** The Prisma client type the store is written against; see tsconfig.sqlite.json. */
export type Db = PrismaClient
export type Provider = 'sqlite' | 'postgresql'

/** An open database; its owner calls `close()`. */
export interface Database {
  readonly db: Db
  readonly provider: Provider
  close(): Promise<void>
}

function providerOf(url: string): Provider {
  if (url.startsWith('file:')) return 'sqlite'
  if (/^postgres(ql)?:\/\//.test(url)) return 'postgresql'
  throw new Error(`unsupported database URL scheme (use file:… or postgresql://…)`)
}

export async function openDatabase(url: string): Promise<Database> {
  const provider = providerOf(url)
  let db: Db
  if (provider === 'sqlite') {
    const file = url.slice('file:'.length).split('?')[0]!
    if (file !== ':memory:') mkdirSync(path.dirname(path.resolve(file)), { recursive: true })
    const [{ PrismaClient }, { PrismaBetterSqlite3 }] = await Promise.all([
      import('../generated/sqlite/client.js'),
      import('@prisma/adapter-better-sqlite3'),
    ])
    db = new PrismaClient({ adapter: new SqliteLaneFactory(new PrismaBetterSqlite3({ url })) }) as unknown as Db
    // WAL + NORMAL: ~5x the write rate of the default journal, still crash-safe for commits.
    await db.$queryRawUnsafe('PRAGMA journal_mode=WAL')
    await db.$executeRawUnsafe('PRAGMA synchronous=NORMAL')
    await db.$executeRawUnsafe('PRAGMA busy_timeout=5000')
    await db.$executeRawUnsafe('PRAGMA foreign_keys=ON')
  } else {
    const [{ PrismaClient }, { PrismaPg }] = await Promise.all([import('../generated/pg/client.js'), import('@prisma/adapter-pg')])
    db = new PrismaClient({ adapter: new PrismaPg({ connectionString: url }) }) as unknown as Db
    await db.$connect()
  }
  return { db, provider, close: () => db.$disconnect() }
}
