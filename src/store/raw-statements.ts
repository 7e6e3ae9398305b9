import type { Prisma } from '@db/client'
import {
  type Compilable,
  DummyDriver,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
} from 'kysely'
import type { DB } from '../generated/kysely/tables.js'
import type { Db, Provider } from './database.js'

/** Prisma's client or an open transaction of it. */
export type RawExecutor = Pick<Db, '$executeRaw'>
type RawReader = Pick<Db, '$queryRaw'>

/**
 * The store's raw statements, for the few writes Prisma's typed API makes too costly: Kysely,
 * typed from the Prisma schema (prisma-kysely), only builds and compiles them; they run through
 * Prisma's tagged-template raw path on its own client or transaction, every value bound.
 */
export class RawStatements {
  /** Kysely as a query builder: it has no connection of its own. */
  readonly query: Kysely<DB>

  constructor(readonly provider: Provider) {
    const postgres = provider === 'postgresql'
    this.query = new Kysely<DB>({
      dialect: {
        createAdapter: () => (postgres ? new PostgresAdapter() : new SqliteAdapter()),
        createDriver: () => new DummyDriver(),
        createIntrospector: (db) => (postgres ? new PostgresIntrospector(db) : new SqliteIntrospector(db)),
        createQueryCompiler: () => (postgres ? new PostgresQueryCompiler() : new SqliteQueryCompiler()),
      },
    })
  }

  /** A built statement to run on `client` (sent when awaited, or in a batch transaction); resolves to the rows it changed. */
  execute(client: RawExecutor, statement: Compilable): Prisma.PrismaPromise<number> {
    const { strings, parameters } = this.template(statement)
    return client.$executeRaw(strings, ...parameters)
  }

  /** A built query's rows, as the driver returns them (counts and sums may be bigints or strings). */
  select<Row>(client: RawReader, statement: Compilable): Prisma.PrismaPromise<Row[]> {
    const { strings, parameters } = this.template(statement)
    return client.$queryRaw<Row[]>(strings, ...parameters)
  }

  private template(statement: Compilable) {
    const { sql, parameters } = statement.compile()
    // Kysely's placeholders, in order: the text between them is the template Prisma binds the values into
    const strings = sql.split(this.provider === 'postgresql' ? /\$\d+/ : /\?/)
    return { strings: Object.assign(strings, { raw: strings }) as unknown as TemplateStringsArray, parameters }
  }
}
