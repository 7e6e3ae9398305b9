import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PROJECT_ROOT } from '../../src/config.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

describe('examples/', () => {
  let t: TestServer
  beforeAll(async () => {
    t = await startTestServer({ provider: 'sqlite' })
  })
  afterAll(() => t?.stop({ dropDatabase: true }))

  it('stream-session.ts prints the tokens of its run through promptline/client', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'examples/stream-session.ts'], {
      cwd: PROJECT_ROOT,
      env: { ...process.env, PROMPTLINE_URL: `${t.http.url}/graphql` },
    })
    expect(stdout).toBe('stream me, word by word')
  })

  it('tool-loop.ts runs the tool the model calls and prints the answer the same run gives with its result', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'examples/tool-loop.ts'], {
      cwd: PROJECT_ROOT,
      env: { ...process.env, PROMPTLINE_URL: `${t.http.url}/graphql` },
    })
    expect(JSON.parse(stdout)).toEqual({ city: 'Oslo', sky: 'clear', celsius: 18 })
  })
})
