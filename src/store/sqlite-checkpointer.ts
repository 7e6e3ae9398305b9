import { once } from 'node:events'
import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'

const EVERY_MS = 250

// Plain CommonJS, so the thread runs the same from dist/ and under the tests' loader. A checkpoint
// that fails (the disk full) is tried again at the next tick: the WAL keeps every commit meanwhile.
const THREAD = `
const { parentPort, workerData } = require('node:worker_threads')
const Sqlite = require(workerData.driver)
const db = new Sqlite(workerData.file, { fileMustExist: true })
db.pragma('busy_timeout = 5000')
const timer = setInterval(() => {
  try {
    db.pragma('wal_checkpoint(PASSIVE)')
  } catch {}
}, workerData.everyMs)
parentPort.once('message', () => {
  clearInterval(timer)
  db.close()
  parentPort.close()
})
`

/**
 * Checkpoints a WAL-mode file from a thread of its own, every 250 ms. SQLite's automatic
 * checkpoint runs inside the COMMIT that crosses 1,000 pages of WAL, on the event loop, where it
 * is about half of the commits' time under load (docs/performance.md). A PASSIVE checkpoint
 * never waits for the writer nor blocks it. If the thread ends, `lost` is told, once.
 */
export class SqliteCheckpointer {
  private constructor(private readonly thread: Worker) {}

  static start(file: string, lost: () => void): SqliteCheckpointer {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3')
    const thread = new Worker(THREAD, { eval: true, workerData: { driver, file, everyMs: EVERY_MS } })
    let told = false
    const tell = () => {
      if (!told) lost()
      told = true
    }
    thread.once('error', tell)
    thread.once('exit', tell)
    // the server's lifetime is the connection's, not the thread's
    thread.unref()
    return new SqliteCheckpointer(thread)
  }

  /** Ends the thread once its connection is closed. */
  async stop(): Promise<void> {
    this.thread.removeAllListeners('error').removeAllListeners('exit')
    const exited = once(this.thread, 'exit')
    this.thread.postMessage('stop')
    await exited
  }
}
