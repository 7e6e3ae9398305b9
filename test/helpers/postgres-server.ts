import { execFile } from 'node:child_process'
import { chownSync, mkdtempSync, rmSync } from 'node:fs'
import { userInfo } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { freePort } from './redis-server.js'

const run = promisify(execFile)

/** A PostgreSQL server of a test's own (initdb, pg_ctl), on a free port, that the test may stop and start again. */
export interface OwnPostgres {
  /** Its `postgres` database: the server is the test's alone, so promptline may use it. */
  readonly url: string
  /** Stops it as an operator restarting it would (`pg_ctl stop -m fast`: sessions cut, nothing lost). */
  stop(): Promise<void>
  /** Starts it again on the same port, with what it had. */
  start(): Promise<void>
  /** Stops it and deletes its files. */
  remove(): Promise<void>
}

// PostgreSQL refuses to run as root: as root (CI), its files and processes are the postgres user's
const asPostgres = (command: string, args: string[]) =>
  userInfo().uid === 0 ? run('runuser', ['-u', 'postgres', '--', command, ...args]) : run(command, args)

export async function startOwnPostgres(): Promise<OwnPostgres> {
  const dir = mkdtempSync(path.join('/tmp', 'promptline-pg-'))
  if (userInfo().uid === 0) {
    const { stdout } = await run('id', ['-u', 'postgres'])
    const { stdout: group } = await run('id', ['-g', 'postgres'])
    chownSync(dir, Number(stdout), Number(group))
  }
  const data = path.join(dir, 'data')
  await asPostgres('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8'])
  const port = await freePort()
  // the socket beside its files; nothing durable is needed of a test's server
  const options = `-p ${port} -c listen_addresses=127.0.0.1 -k ${dir} -c fsync=off -c full_page_writes=off`
  const start = () => asPostgres('pg_ctl', ['-D', data, '-o', options, '-l', path.join(dir, 'log'), '-w', 'start'])
  const stop = () => asPostgres('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop'])
  await start()
  let running = true
  return {
    url: `postgresql://postgres@127.0.0.1:${port}/postgres`,
    async stop() {
      if (running) await stop()
      running = false
    },
    async start() {
      if (!running) await start()
      running = true
    },
    async remove() {
      if (running) await stop()
      running = false
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
