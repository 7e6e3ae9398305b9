import { createHash } from 'node:crypto'
import {
  CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  Kysely,
  PostgresDialect,
  type PostgresPool,
  type PostgresPoolClient,
  type QueryResult,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
} from 'kysely'
import pg from 'pg'
import type { DB } from '../generated/kysely/tables.js'
import { driverChecked } from './errors.js'
import { type SqliteConnection, sqliteValue } from './sqlite-connection.js'

/** The store's typed statements (Kysely, typed from the Prisma schema by prisma-kysely). */
export type Sql = Kysely<DB>

/** Statements on the connection in its lane: one lane turn a statement, or a whole transaction. */
class SqliteLaneConnection implements DatabaseConnection {
  constructor(
    private readonly connection: SqliteConnection,
    readonly leave: () => void,
  ) {}

  executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    return driverChecked(
      (async () => {
        const statement = this.connection.prepared(query.sql)
        const values = query.parameters.map(sqliteValue)
        if (statement.reader) return { rows: statement.raw(false).all(values) as R[] }
        return { rows: [], numAffectedRows: BigInt(statement.run(values).changes) }
      })(),
    )
  }

  // biome-ignore lint/correctness/useYield: the store never streams a query
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('the store does not stream queries')
  }
}

class SqliteLaneDriver implements Driver {
  constructor(private readonly connection: SqliteConnection) {}

  async init(): Promise<void> {}

  async acquireConnection(): Promise<SqliteLaneConnection> {
    return new SqliteLaneConnection(this.connection, await this.connection.lane.acquire())
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('BEGIN'))
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('COMMIT'))
  }

  async rollbackTransaction(): Promise<void> {
    // the caller holds the lane: this is the transaction it opened
    this.connection.rollback()
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    ;(connection as SqliteLaneConnection).leave()
  }

  async destroy(): Promise<void> {}
}

function sqliteDialect(connection: SqliteConnection): Dialect {
  return {
    createAdapter: () => new SqliteAdapter(),
    createDriver: () => new SqliteLaneDriver(connection),
    createIntrospector: (db) => new SqliteIntrospector(db),
    createQueryCompiler: () => new SqliteQueryCompiler(),
  }
}

/** Statements on the store's one SQLite connection, in the lane Prisma's adapter takes too. */
export const sqliteSql = (connection: SqliteConnection): Sql => new Kysely<DB>({ dialect: sqliteDialect(connection) })

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
