import { spawn } from 'node:child_process'
import { afterAll, describe, expect, it } from 'vitest'
import { PROJECT_ROOT } from '../../src/config.js'
import { createTestDatabase, type TestDatabase } from '../helpers/databases.js'
import { killHard, startServerProcess } from '../helpers/process.js'

/** Runs a node script of the repository to its exit: its exit code and what it wrote to stderr. */
function runToExit(args: string[], env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, args, {
    cwd: PROJECT_ROOT,
    env: { ...process.env, LOG_LEVEL: 'error', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk))
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stderr })))
}

describe('starting the server', () => {
  let database: TestDatabase | undefined
  afterAll(() => database?.drop())

  it('says a bad variable in one line and exits 1, from npm start', async () => {
    const { code, stderr } = await runToExit(['scripts/start.mjs'], { PORT: 'abc' })
    expect(code).toBe(1)
    expect(stderr).toBe("promptline: PORT must be a port number, 0 to 65535 (got 'abc')\n")
  })

  it('says a port in use in one line, without a stack, and exits 1', async () => {
    database = await createTestDatabase('sqlite')
    const first = await startServerProcess(database.url)
    try {
      const port = new URL(first.url).port
      const { code, stderr } = await runToExit(['--import', 'tsx', 'src/main.ts'], { DATABASE_URL: database.url, PORT: port })
      expect(code).toBe(1)
      expect(stderr).toBe(
        `promptline: port ${port} on 127.0.0.1 is in use (another promptline?): stop that process or set PORT to a free port\n`,
      )
    } finally {
      await killHard(first.child)
    }
  })
})
