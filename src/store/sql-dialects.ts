import {
  CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  Kysely,
  type QueryResult,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
} from 'kysely'
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
