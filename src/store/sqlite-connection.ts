import { mkdirSync } from 'node:fs'
import path from 'node:path'
import Sqlite from 'better-sqlite3'
import { LRUCache } from 'lru-cache'
import { SqliteCheckpointer } from './sqlite-checkpointer.js'
import { SqliteLane } from './sqlite-lane.js'

/** How the store writes a time into SQLite: ISO 8601 with an explicit offset, as Prisma writes and compares them. */
export const sqliteTime = (at: Date) => at.toISOString().replace('Z', '+00:00')

/** A value as SQLite binds it: times as the store writes them, booleans as 0 or 1, undefined as NULL. */
export function sqliteValue(value: unknown): unknown {
  if (value instanceof Date) return sqliteTime(value)
  if (typeof value === 'boolean') return value ? 1 : 0
  return value ?? null
}

/**
 * SQLite's one connection, shared by Prisma's client and the run path's statements: a second
 * connection's write would wait synchronously on the first's open transaction and block the
 * event loop. Every statement takes a turn of the `lane`, alone or as part of a transaction, so
 * no caller's rollback ever undoes another's write, and concurrent turns share a COMMIT. A
 * statement is prepared once and kept (prepare is most of a small statement's cost).
 */
export class SqliteConnection {
  private readonly statements = new LRUCache<string, Sqlite.Statement>({ max: 1_000 })
  readonly lane = new SqliteLane({
    run: (sql) => this.prepared(sql).run(),
    inTransaction: () => this.handle.inTransaction,
  })

  private constructor(
    private readonly handle: Sqlite.Database,
    private readonly checkpointer: SqliteCheckpointer | null,
  ) {}

  /** Opens the file of a `file:` URL (creating its folder), in WAL mode. */
  static open(url: string): SqliteConnection {
    const file = url.slice('file:'.length).split('?')[0]!
    if (file !== ':memory:') mkdirSync(path.dirname(path.resolve(file)), { recursive: true })
    const handle = new Sqlite(file)
    // WAL + NORMAL: ~5x the write rate of the default journal, still crash-safe for commits.
    handle.pragma('journal_mode = WAL')
    handle.pragma('synchronous = NORMAL')
    handle.pragma('busy_timeout = 5000')
    handle.pragma('foreign_keys = ON')
    if (file === ':memory:') return new SqliteConnection(handle, null)
    // the WAL is checkpointed by a thread of its own; should it end, by the connection again
    handle.pragma('wal_autocheckpoint = 0')
    return new SqliteConnection(
      handle,
      SqliteCheckpointer.start(file, () => handle.pragma('wal_autocheckpoint = 1000')),
    )
  }

  /** The statement for `sql`, prepared on its first use. */
  prepared(sql: string): Sqlite.Statement {
    let statement = this.statements.get(sql)
    if (!statement) {
      statement = this.handle.prepare(sql)
      this.statements.set(sql, statement)
    }
    return statement
  }

  /** Runs statements separated by semicolons (a migration's script). */
  script(sql: string): void {
    this.handle.exec(sql)
  }

  /** Closes the connection, the checkpointer's first: the last connection to close checkpoints the WAL whole. */
  async close(): Promise<void> {
    await this.checkpointer?.stop()
    this.statements.clear()
    this.handle.close()
  }
}
