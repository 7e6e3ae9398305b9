import {
  type ArgType,
  type ColumnType,
  ColumnTypeEnum,
  DriverAdapterError,
  type Error as MappedDriverError,
  type SqlDriverAdapter,
  type SqlDriverAdapterFactory,
  type SqlQuery,
  type SqlResultSet,
  type Transaction,
} from '@prisma/driver-adapter-utils'
import type Sqlite from 'better-sqlite3'
import { type SqliteConnection, sqliteTime, sqliteValue } from './sqlite-connection.js'
import { type LaneTurn, statementKind } from './sqlite-lane.js'

const ADAPTER_NAME = 'promptline-sqlite'

/** Column types by SQLite's declared type, as Prisma's SQLite migrations declare them. */
const DECLARED: Record<string, ColumnType> = {
  INTEGER: ColumnTypeEnum.Int32,
  INT: ColumnTypeEnum.Int32,
  BIGINT: ColumnTypeEnum.Int64,
  REAL: ColumnTypeEnum.Double,
  FLOAT: ColumnTypeEnum.Double,
  DOUBLE: ColumnTypeEnum.Double,
  DECIMAL: ColumnTypeEnum.Numeric,
  TEXT: ColumnTypeEnum.Text,
  DATETIME: ColumnTypeEnum.DateTime,
  DATE: ColumnTypeEnum.Date,
  BOOLEAN: ColumnTypeEnum.Boolean,
  JSONB: ColumnTypeEnum.Json,
  BLOB: ColumnTypeEnum.Bytes,
}

/** A computed column has no declared type: its first non-null value tells. */
function inferred(rows: unknown[][], column: number): ColumnType {
  for (const row of rows) {
    const value = row[column]
    if (value === null) continue
    if (typeof value === 'string') return ColumnTypeEnum.Text
    if (typeof value === 'bigint') return ColumnTypeEnum.Int64
    if (typeof value === 'number') return ColumnTypeEnum.UnknownNumber
    return ColumnTypeEnum.Bytes
  }
  return ColumnTypeEnum.Int32
}

/** A value as the engine expects it for its column's type. */
function cell(value: unknown, type: ColumnType): unknown {
  if (typeof value === 'number') {
    if (type === ColumnTypeEnum.DateTime) return new Date(value).toISOString()
    if ((type === ColumnTypeEnum.Int32 || type === ColumnTypeEnum.Int64) && !Number.isInteger(value)) return Math.trunc(value)
  }
  if (typeof value === 'bigint') return Number.isSafeInteger(Number(value)) ? Number(value) : value.toString()
  return value
}

/** An argument as better-sqlite3 binds it. */
function bound(arg: unknown, type: ArgType | undefined): unknown {
  if (typeof arg !== 'string') return sqliteValue(arg)
  switch (type?.scalarType) {
    case 'int':
      return Number.parseInt(arg, 10)
    case 'float':
    case 'decimal':
      return Number.parseFloat(arg)
    case 'bigint':
      return BigInt(arg)
    case 'datetime':
      return sqliteTime(new Date(arg))
    case 'bytes':
      return Buffer.from(arg, 'base64')
    default:
      return arg
  }
}

/** better-sqlite3's error in the terms Prisma maps to its codes (P2002 for a unique index, …). */
function mapped(error: { code: string; message: string }): MappedDriverError {
  const columns = () => error.message.split('constraint failed: ')[1]?.split(', ')
  const base = { originalCode: error.code, originalMessage: error.message }
  switch (error.code) {
    case 'SQLITE_CONSTRAINT_UNIQUE':
    case 'SQLITE_CONSTRAINT_PRIMARYKEY': {
      const names = columns()
      const fields = names?.map((name) => name.split('.').pop()!)
      return { ...base, kind: 'UniqueConstraintViolation', constraint: fields && { fields }, table: names?.[0]?.split('.')[0] }
    }
    case 'SQLITE_CONSTRAINT_NOTNULL': {
      const fields = columns()?.map((name) => name.split('.').pop()!)
      return { ...base, kind: 'NullConstraintViolation', constraint: fields && { fields } }
    }
    case 'SQLITE_CONSTRAINT_FOREIGNKEY':
    case 'SQLITE_CONSTRAINT_TRIGGER':
      return { ...base, kind: 'ForeignKeyConstraintViolation', constraint: { foreignKey: {} } }
    default:
      if (error.code.startsWith('SQLITE_BUSY')) return { ...base, kind: 'SocketTimeout' }
      return { ...base, kind: 'sqlite', extendedCode: 1, message: error.message }
  }
}

/** Runs `work`, turning a driver error into the adapter error Prisma understands. */
function guarded<T>(work: () => T): T {
  try {
    return work()
  } catch (error) {
    const driver = error as { code?: unknown; message?: unknown }
    if (typeof driver.code === 'string' && typeof driver.message === 'string') {
      throw new DriverAdapterError(mapped(driver as { code: string; message: string }))
    }
    throw error
  }
}

/** Statements on the connection in a turn of its lane (the caller holds it). */
class Queryable {
  readonly provider = 'sqlite'
  readonly adapterName = ADAPTER_NAME

  constructor(protected readonly connection: SqliteConnection) {}

  protected inTurn<T>(turn: LaneTurn, statement: Sqlite.Statement, work: () => T): T {
    turn.statement(statementKind(statement))
    try {
      return guarded(work)
    } catch (error) {
      turn.failed()
      throw error
    }
  }

  protected query(turn: LaneTurn, query: SqlQuery): SqlResultSet {
    const statement = guarded(() => this.connection.prepared(query.sql))
    return this.inTurn(turn, statement, () => {
      const args = query.args.map((arg, i) => bound(arg, query.argTypes[i]))
      if (!statement.reader) {
        statement.run(args)
        return { columnNames: [], columnTypes: [], rows: [] }
      }
      const columns = statement.columns()
      const rows = statement.raw(true).all(args) as unknown[][]
      const columnTypes = columns.map((c, i) => (c.type ? DECLARED[c.type.toUpperCase()] : undefined) ?? inferred(rows, i))
      return {
        columnNames: columns.map((c) => c.name),
        columnTypes,
        rows: rows.map((row) => row.map((value, i) => cell(value, columnTypes[i]!))),
      }
    })
  }

  protected execute(turn: LaneTurn, query: SqlQuery): number {
    const statement = guarded(() => this.connection.prepared(query.sql))
    return this.inTurn(turn, statement, () => statement.run(query.args.map((arg, i) => bound(arg, query.argTypes[i]))).changes)
  }
}

/** One transaction: a turn of the lane, held until Prisma has sent its COMMIT or ROLLBACK and ends it. */
class SqliteTransaction extends Queryable implements Transaction {
  readonly options = { usePhantomQuery: false }

  constructor(
    connection: SqliteConnection,
    private readonly turn: LaneTurn,
  ) {
    super(connection)
  }

  async queryRaw(query: SqlQuery): Promise<SqlResultSet> {
    return this.query(this.turn, query)
  }

  async executeRaw(query: SqlQuery): Promise<number> {
    // Prisma ends its transaction with statements of its own: they end the turn's part of the group
    if (query.sql === 'COMMIT') guarded(() => this.turn.commit())
    else if (query.sql === 'ROLLBACK') guarded(() => this.turn.rollback())
    else return this.execute(this.turn, query)
    return 0
  }

  /** Answers once the transaction's writes are durable: its group's COMMIT. */
  commit(): Promise<void> {
    return this.turn.leave()
  }

  async rollback(): Promise<void> {
    await this.turn.leave()
  }
}

/** Prisma's driver adapter on the one connection, a turn of its lane a statement. */
class SqliteAdapter extends Queryable implements SqlDriverAdapter {
  async queryRaw(query: SqlQuery): Promise<SqlResultSet> {
    return this.alone((turn) => this.query(turn, query))
  }

  async executeRaw(query: SqlQuery): Promise<number> {
    return this.alone((turn) => this.execute(turn, query))
  }

  executeScript(script: string): Promise<void> {
    return this.connection.lane.exclusive(() => guarded(() => this.connection.script(script)))
  }

  async startTransaction(): Promise<Transaction> {
    const turn = await this.connection.lane.enter()
    try {
      guarded(() => turn.begin())
      return new SqliteTransaction(this.connection, turn)
    } catch (error) {
      await turn.leave()
      throw error
    }
  }

  async dispose(): Promise<void> {}

  private async alone<T>(work: (turn: LaneTurn) => T): Promise<T> {
    const turn = await this.connection.lane.enter()
    try {
      return work(turn)
    } finally {
      await turn.leave()
    }
  }
}

/**
 * Prisma's documented driver-adapter interface over the store's one SQLite connection, so the
 * typed API and the run path's statements share its lane and its prepared statements. The
 * connection's owner closes it; Prisma's disconnect does not.
 */
export class SqliteAdapterFactory implements SqlDriverAdapterFactory {
  readonly provider = 'sqlite'
  readonly adapterName = ADAPTER_NAME

  constructor(private readonly connection: SqliteConnection) {}

  async connect(): Promise<SqlDriverAdapter> {
    return new SqliteAdapter(this.connection)
  }
}
