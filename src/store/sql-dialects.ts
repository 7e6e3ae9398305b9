import {
  type CompiledQuery,
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
import { type LaneTurn, statementKind } from './sqlite-lane.js'

/** The store's typed statements (Kysely, typed from the Prisma schema by prisma-kysely). */
export type Sql = Kysely<DB>

/** Statements on the connection in a turn of its lane: one statement, or a whole transaction. */
class SqliteLaneConnection implements DatabaseConnection {
  constructor(
    private readonly connection: SqliteConnection,
    readonly turn: LaneTurn,
  ) {}

  executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    return driverChecked(
      (async () => {
        const statement = this.connection.prepared(query.sql)
        const values = query.parameters.map(sqliteValue)
        this.turn.statement(statementKind(statement))
        try {
          if (statement.reader) return { rows: statement.raw(false).all(values) as R[] }
          return { rows: [], numAffectedRows: BigInt(statement.run(values).changes) }
        } catch (error) {
          this.turn.failed()
          throw error
        }
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
    return new SqliteLaneConnection(this.connection, await this.connection.lane.enter())
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    laneTurn(connection).begin()
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    laneTurn(connection).commit()
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    laneTurn(connection).rollback()
  }

  /** Answers once the turn's writes are durable: its group's COMMIT. */
  releaseConnection(connection: DatabaseConnection): Promise<void> {
    return driverChecked(laneTurn(connection).leave())
  }

  async destroy(): Promise<void> {}
}

const laneTurn = (connection: DatabaseConnection) => (connection as SqliteLaneConnection).turn

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
