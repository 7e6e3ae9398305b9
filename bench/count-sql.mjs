// Preloaded into the benchmarked server (node --import): counts the SQL statements it executes,
// at the driver (better-sqlite3), and answers the bench's 'sql' message over the IPC channel.
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const Database = require('better-sqlite3')
const probe = new Database(':memory:')
const Statement = Object.getPrototypeOf(probe.prepare('select 1'))
probe.close()

let statements = 0
for (const method of ['run', 'get', 'all', 'iterate']) {
  const original = Statement[method]
  Statement[method] = function (...args) {
    statements++
    return original.apply(this, args)
  }
}
const exec = Database.prototype.exec
Database.prototype.exec = function (...args) {
  statements++
  return exec.apply(this, args)
}

process.on('message', (message) => {
  if (message === 'sql') process.send({ sql: statements })
})
// the IPC channel must not keep the server alive once it shuts down
process.channel?.unref()
