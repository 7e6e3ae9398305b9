import type { PrismaClient } from '@db/client'
import { driverChecked } from './errors.js'
import { type Sql, sqliteSql } from './sql-dialects.js'
import { SqliteConnection } from './sqlite-connection.js'
import { SqliteAdapterFactory } from './sqlite-prisma-adapter.js'

/** The Prisma client type the store is written against; see tsconfig.sqlite.json. */
export type Db = PrismaClient
export type Provider = 'sqlite' | 'postgresql'

/**
 * An open database; its owner calls `close()`. Prisma's typed client serves everything off the
 * run path; the run path's statements are Kysely's (`sql`), run on the driver with prepared
 * statements kept: on SQLite, on the same connection as Prisma's, in the same lane.
 */
export interface Database {
  readonly db: Db
  readonly sql: Sql
  readonly provider: Provider
  close(): Promise<void>
}

function providerOf(url: string): Provider {
  if (url.startsWith('file:')) return 'sqlite'
  if (/^postgres(ql)?:\/\//.test(url)) return 'postgresql'
  throw new Error(`unsupported database URL scheme (use file:… or postgresql://…)`)
}

/** Every Prisma statement, raw ones and those in transactions too, throws the domain's errors for an unreachable database or a full disk. */
const domainErrors = {
  query: { $allOperations: ({ args, query }: { args: unknown; query: (args: unknown) => Promise<unknown> }) => driverChecked(query(args)) },
}

export async function openDatabase(url: string): Promise<Database> {
  const provider = providerOf(url)
  if (provider === 'sqlite') {
    const connection = SqliteConnection.open(url)
    const { PrismaClient } = await import('../generated/sqlite/client.js')
    const db = new PrismaClient({ adapter: new SqliteAdapterFactory(connection) }).$extends(domainErrors) as unknown as Db
    const sql = sqliteSql(connection)
    return {
      db,
      sql,
      provider,
      async close() {
        await db.$disconnect()
        await sql.destroy()
        // the lane's last statement has run once every caller above has been answered
        await connection.lane.exclusive(() => connection.close())
      },
    }
  }
  const [{ PrismaClient }, { PrismaPg }, { postgresSql, survivingPool }] = await Promise.all([
    import('../generated/pg/client.js'),
    import('@prisma/adapter-pg'),
    import('./postgres-dialect.js'),
  ])
  const adapter = new PrismaPg(survivingPool({ connectionString: url }), { disposeExternalPool: true })
  const db = new PrismaClient({ adapter }).$extends(domainErrors) as unknown as Db
  await db.$connect()
  const sql = postgresSql(url)
  return {
    db,
    sql,
    provider,
    async close() {
      await Promise.all([db.$disconnect(), sql.destroy()])
    },
  }
}
