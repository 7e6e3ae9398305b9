import { type Compilable, CompiledQuery, type QueryResult } from 'kysely'
import type { Sql } from './sql-dialects.js'

const NAME = Symbol('value name')
interface Placeholder {
  readonly [NAME]: string
}
const isPlaceholder = (value: unknown): value is Placeholder => typeof value === 'object' && value !== null && NAME in value

/** Stands for (while building) or gives (while binding) the value of a statement named `name`. */
export type ValueOf = (name: string) => unknown

interface Compiled {
  sql: string
  /** Each parameter of the SQL, in order: a named value to bind, or a value compiled in. */
  order: ({ name: string } | { value: unknown })[]
}

/** Inserts of more rows than this are compiled each time: their shapes are many, and rare. */
const MAX_CACHED_ROWS = 256

/** `row`'s columns, each standing for the value named after its row and column. */
export function placeholders<R extends object>(row: R, value: ValueOf, prefix = ''): R {
  return Object.fromEntries(Object.keys(row).map((column) => [column, value(prefix + column)])) as R
}

/** The value of `name` in rows bound by `placeholders(row, value, `${i}.`)`. */
function rowValue(rows: readonly object[]): ValueOf {
  return (name) => {
    const dot = name.indexOf('.')
    return (rows[Number(name.slice(0, dot))] as Record<string, unknown>)[name.slice(dot + 1)]
  }
}

/**
 * The run path's statements, built with Kysely and compiled once per shape: the SQL is kept
 * under the caller's key, and every later execution binds its values in the order the SQL takes
 * them, so no run pays for building and compiling its queries. A statement is built with a
 * placeholder for each named value; anything else it binds (a list of statuses, say) stays as
 * compiled. The key must name everything that changes the SQL: the columns and the row count.
 */
export class CompiledStatements {
  private readonly compiled = new Map<string, Compiled>()

  constructor(private readonly sql: Sql) {}

  async execute<Row>(key: string, build: (value: ValueOf) => Compilable, values: ValueOf, on: Sql = this.sql): Promise<QueryResult<Row>> {
    let compiled = this.compiled.get(key)
    if (!compiled) {
      const { sql, parameters } = build((name) => ({ [NAME]: name }) satisfies Placeholder).compile()
      compiled = { sql, order: parameters.map((p) => (isPlaceholder(p) ? { name: p[NAME] } : { value: p })) }
      this.compiled.set(key, compiled)
    }
    const parameters = compiled.order.map((o) => ('name' in o ? values(o.name) : o.value))
    return on.executeQuery<Row>(CompiledQuery.raw(compiled.sql, parameters))
  }

  /** Inserts `rows` (all with the same columns) into `table`, in `on` when given; compiled once per row count. */
  async insert<R extends object>(table: string, rows: readonly R[], build: (rows: R[]) => Compilable, on: Sql = this.sql): Promise<void> {
    if (rows.length === 0) return
    const values = rowValue(rows)
    const shaped = (value: ValueOf) => build(rows.map((row, i) => placeholders(row, value, `${i}.`)))
    if (rows.length > MAX_CACHED_ROWS) await on.executeQuery(shaped((name) => values(name)).compile())
    else await this.execute(`insert ${table} ${rows.length} ${Object.keys(rows[0]!).join(',')}`, shaped, values, on)
  }
}
