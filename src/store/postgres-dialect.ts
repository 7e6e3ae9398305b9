import { createHash } from 'node:crypto'
import { Kysely, PostgresDialect, type PostgresPool, type PostgresPoolClient } from 'kysely'
import pg from 'pg'
import type { DB } from '../generated/kysely/tables.js'
import { driverChecked } from './errors.js'
import type { Sql } from './sql-dialects.js'

// PostgreSQL's driver and dialect, loaded only when the database is PostgreSQL.

/** Prisma's DateTime columns are `timestamp(3)` without a zone, written in UTC: read them as UTC. */
const TIMESTAMP_OID = 1114
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === TIMESTAMP_OID
      ? (text: string) => new Date(`${text.replace(' ', 'T')}Z`)
      : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
}

/** A statement with few enough values is prepared once per connection; a long multi-row insert is left unnamed, so their variety stays bounded. */
const MAX_NAMED_PARAMETERS = 100
const names = new Map<string, string>()
function statementName(sql: string): string {
  let name = names.get(sql)
  if (!name) {
    name = `k${createHash('sha1').update(sql).digest('hex').slice(0, 20)}`
    names.set(sql, name)
  }
  return name
}

/** A pooled client that names its statements, so the server parses and plans each once per connection. */
function preparing(client: pg.PoolClient): PostgresPoolClient {
  const query = (sql: string, parameters: readonly unknown[]) =>
    driverChecked(
      client.query({
        ...(parameters.length <= MAX_NAMED_PARAMETERS && { name: statementName(sql) }),
        text: sql,
        // times go as UTC text: the driver would send a Date in the process's zone
        values: parameters.map((value) => (value instanceof Date ? value.toISOString() : value)),
      }),
    )
  return { query, release: (destroy?: boolean) => client.release(destroy) } as unknown as PostgresPoolClient
}

/**
 * A pool whose connections' errors never end the process: when the server closes a connection (a
 * restart, a dropped database), pg emits the error on the pool for an idle one and on the client
 * for one checked out between statements (a transaction's); with no listener either would be
 * thrown. The statement under way fails on its own, the pool drops the connection when it is
 * released, and the next statement opens another.
 */
export function survivingPool(config: pg.PoolConfig): pg.Pool {
  const pool = new pg.Pool(config)
  pool.on('error', () => {})
  pool.on('connect', (client) => client.on('error', () => {}))
  return pool
}

/** Statements on a pool of their own on the PostgreSQL server; `destroy()` ends it. */
export function postgresSql(connectionString: string): Sql {
  const pool = survivingPool({ connectionString, types })
  const preparingPool: PostgresPool = { connect: async () => preparing(await driverChecked(pool.connect())), end: () => pool.end() }
  return new Kysely<DB>({ dialect: new PostgresDialect({ pool: preparingPool }) })
}
