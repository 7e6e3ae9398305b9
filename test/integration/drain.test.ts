import type { ChildProcess } from 'node:child_process'
import { afterEach, describe, expect, it } from 'vitest'
import { openStore } from '../../src/store/store.js'
import { CreateSessionDocument, EnqueuePromptDocument, QueueEntryDocument, RunDocument } from '../generated/graphql.js'
import { createTestDatabase, providers, type TestDatabase } from '../helpers/databases.js'
import { waitForEntry, words } from '../helpers/flow.js'
import { post, releaseAll, startServerProcess } from '../helpers/process.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

describe.each(providers)('SIGTERM (%s)', (provider) => {
  let database: TestDatabase | undefined
  let child: ChildProcess | undefined
  let server: TestServer | undefined
  afterEach(() => releaseAll(child, server, database))

  it('drains: /readyz says so, the running prompt finishes, the queued one waits for the next start, exit 0', async () => {
    database = await createTestDatabase(provider)
    const started = await startServerProcess(database.url, { PROMPTLINE_SHUTDOWN_GRACE_MS: '20000' })
    child = started.child
    const { url } = started
    expect(await (await fetch(`${url}/readyz`)).json()).toEqual({ status: 'ready' })
    await post(url, CreateSessionDocument, { input: { id: 'drain', defaultProfileId: 'fake-echo' } })
    const enqueue = async (input: string, tokenDelayMs: number) => {
      const result = (
        await post(url, EnqueuePromptDocument, { input: { sessionId: 'drain', input, overrides: { extra: { tokenDelayMs } } } })
      ).enqueuePrompt
      if (result.__typename !== 'EnqueuePromptPayload') throw new Error(result.__typename)
      return result.entry.queueId
    }
    const running = await enqueue(words(40), 25)
    const queued = await enqueue('after the restart', 0)
    while ((await post(url, QueueEntryDocument, { sessionId: 'drain', queueId: running })).queueEntry?.status !== 'RUNNING');

    const exited = new Promise<number | null>((resolve) => child!.once('exit', resolve))
    child.kill('SIGTERM')
    // still listening while it drains, but no longer ready
    let ready = await fetch(`${url}/readyz`)
    while (ready.status === 200) ready = await fetch(`${url}/readyz`)
    expect(ready.status).toBe(503)
    expect(await ready.json()).toEqual({ status: 'unavailable', reason: 'draining' })
    expect((await fetch(`${url}/healthz`)).status).toBe(200)
    expect(await exited).toBe(0)
    child = undefined
    const store = await openStore(database.url)
    expect(await store.entries.find('local', 'drain', queued)).toMatchObject({ status: 'QUEUED', runId: null })
    await store.close()

    server = await startTestServer({ provider, database })
    const finished = await waitForEntry(server, 'drain', running, ['COMPLETED', 'FAILED', 'CANCELLED'])
    expect(finished.status).toBe('COMPLETED')
    expect((await server.request(RunDocument, { id: finished.runId! })).data!.run!.output).toBe(words(40))
    await waitForEntry(server, 'drain', queued, ['COMPLETED'])
  }, 60_000)
})

describe('LOG_FORMAT=json', () => {
  let database: TestDatabase | undefined
  let child: ChildProcess | undefined
  afterEach(() => releaseAll(child, undefined, database))

  it('makes every line the server prints, on stdout and stderr, from start to exit, a JSON object', async () => {
    database = await createTestDatabase('sqlite')
    const started = await startServerProcess(database.url, { LOG_FORMAT: 'json', LOG_LEVEL: 'debug' })
    child = started.child
    await post(started.url, CreateSessionDocument, { input: { id: 'logged', defaultProfileId: 'fake-echo' } })
    await post(started.url, EnqueuePromptDocument, { input: { sessionId: 'logged', input: 'hello' } })
    const exited = new Promise<number | null>((resolve) => child!.once('exit', resolve))
    child.kill('SIGTERM')
    expect(await exited).toBe(0)
    child = undefined
    const lines = started
      .output()
      .split('\n')
      .filter((line) => line !== '')
    expect(lines.length).toBeGreaterThan(3)
    for (const line of lines) expect(JSON.parse(line)).toMatchObject({ level: expect.any(String), message: expect.any(String) })
    expect(lines.some((line) => line.includes('GraphiQL at'))).toBe(true)
  }, 60_000)
})
