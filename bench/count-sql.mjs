// Preloaded into the benchmarked server (node --import): counts the SQL statements it executes,
// at the driver (better-sqlite3), and among them the writes (INSERT, UPDATE, DELETE: not the
// transaction brackets), and answers the bench's 'sql' message over the IPC channel.
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const Database = require('better-sqlite3')
const probe = new Database(':memory:')
const Statement = Object.getPrototypeOf(probe.prepare('select 1'))
probe.close()

const WRITE = /^\s*(INSERT|UPDATE|DELETE)\b/i
let statements = 0
let writes = 0
const count = (sql) => {
  statements++
  if (WRITE.test(sql)) writes++
}
for (const method of ['run', 'get', 'all', 'iterate']) {
  const original = Statement[method]
  Statement[method] = function (...args) {
    count(this.source)
    return original.apply(this, args)
  }
}
const exec = Database.prototype.exec
Database.prototype.exec = function (sql, ...args) {
  count(sql)
  return exec.call(this, sql, ...args)
}

process.on('message', (message) => {
  if (message === 'sql') process.send({ sql: statements, writes })
})
// the IPC channel must not keep the server alive once it shuts down
process.channel?.unref()
