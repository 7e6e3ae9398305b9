import type { SqlDriverAdapter, SqlDriverAdapterFactory, Transaction } from '@prisma/driver-adapter-utils'
import { Mutex } from 'async-mutex'

/**
 * Puts every statement on SQLite's one connection in one lane. Prisma's better-sqlite3 adapter
 * locks only while a transaction starts: a statement issued while another caller's transaction
 * is open runs inside it, and that transaction's rollback undoes a write already acknowledged.
 * Here a statement outside a transaction waits until the open one has committed or rolled back,
 * and a transaction waits for the statement before it, so no caller ever writes into another's.
 */
export class SqliteLaneFactory implements SqlDriverAdapterFactory {
  readonly provider = 'sqlite'
  readonly adapterName: string

  constructor(private readonly inner: SqlDriverAdapterFactory) {
    this.adapterName = inner.adapterName
  }

  async connect(): Promise<SqlDriverAdapter> {
    return inLane(await this.inner.connect())
  }
}

function inLane(adapter: SqlDriverAdapter): SqlDriverAdapter {
  const lane = new Mutex()
  return {
    provider: adapter.provider,
    adapterName: adapter.adapterName,
    queryRaw: (query) => lane.runExclusive(() => adapter.queryRaw(query)),
    executeRaw: (query) => lane.runExclusive(() => adapter.executeRaw(query)),
    executeScript: (script) => lane.runExclusive(() => adapter.executeScript(script)),
    async startTransaction(isolationLevel) {
      const leave = await lane.acquire()
      try {
        return holdingLane(await adapter.startTransaction(isolationLevel), leave)
      } catch (error) {
        leave()
        throw error
      }
    },
    dispose: () => adapter.dispose(),
  }
}

/** The transaction, keeping the lane until it commits or rolls back. */
function holdingLane(tx: Transaction, leave: () => void): Transaction {
  const ending = (end: () => Promise<void>) => () => end().finally(leave)
  return {
    provider: tx.provider,
    adapterName: tx.adapterName,
    options: tx.options,
    queryRaw: (query) => tx.queryRaw(query),
    executeRaw: (query) => tx.executeRaw(query),
    commit: ending(() => tx.commit()),
    rollback: ending(() => tx.rollback()),
    ...(tx.createSavepoint && { createSavepoint: (name: string) => tx.createSavepoint!(name) }),
    ...(tx.rollbackToSavepoint && { rollbackToSavepoint: (name: string) => tx.rollbackToSavepoint!(name) }),
    ...(tx.releaseSavepoint && { releaseSavepoint: (name: string) => tx.releaseSavepoint!(name) }),
  }
}
