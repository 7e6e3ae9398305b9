import type { ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { afterEach, describe, expect, it } from 'vitest'
import { openStore } from '../../src/store/store.js'
import {
  CreateSessionDocument,
  EnqueuePromptDocument,
  QueueEntryDocument,
  RunToolsDocument,
  type RunToolsQuery,
  SessionToolHistoryDocument,
  SubmitToolResultsDocument,
} from '../generated/graphql.js'
import { createTestDatabase, providers, type TestDatabase } from '../helpers/databases.js'
import { killHard, post, startServerProcess } from '../helpers/process.js'

const WEATHER = { name: 'get_weather', inputSchema: { type: 'object', properties: { city: { type: 'string' } } } }

type Run = NonNullable<RunToolsQuery['run']>

/** Polls a server until the run is in one of `statuses`. */
async function runUntil(url: string, runId: string, statuses: string[], timeoutMs = 20_000): Promise<Run> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const run = (await post(url, RunToolsDocument, { id: runId })).run
    if (run && statuses.includes(run.status)) return run
    if (Date.now() > deadline) throw new Error(`run ${runId} stayed ${run?.status}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}

/** Creates a session on `url` and enqueues a prompt the fake backend answers with a call of get_weather. */
async function waitingRun(url: string, sessionId: string): Promise<Run> {
  await post(url, CreateSessionDocument, { input: { id: sessionId, defaultProfileId: 'fake-echo' } })
  const admitted = (
    await post(url, EnqueuePromptDocument, {
      input: { sessionId, input: 'use get_weather for Oslo', tools: [WEATHER], overrides: { extra: { toolArguments: { city: 'Oslo' } } } },
    })
  ).enqueuePrompt
  if (admitted.__typename !== 'EnqueuePromptPayload') throw new Error(`not admitted: ${JSON.stringify(admitted)}`)
  const deadline = Date.now() + 20_000
  for (;;) {
    const runId = (await post(url, QueueEntryDocument, { sessionId, queueId: admitted.entry.queueId })).queueEntry?.runId
    if (runId) return runUntil(url, runId, ['REQUIRES_ACTION'])
    if (Date.now() > deadline) throw new Error('the entry never started')
    await new Promise((r) => setTimeout(r, 25))
  }
}

describe.each(providers)('a run waiting for tool results across a crash (%s)', (provider) => {
  let database: TestDatabase | undefined
  let children: ChildProcess[] = []
  afterEach(async () => {
    for (const child of children) await killHard(child)
    children = []
    await database?.drop()
  })

  it('goes on after kill -9 of its server: the restarted server takes the results and completes the same run', async () => {
    database = await createTestDatabase(provider)
    const first = await startServerProcess(database.url)
    children.push(first.child)
    const waiting = await waitingRun(first.url, 'crash-tools')
    const [call] = waiting.pendingToolCalls
    expect(call).toMatchObject({ name: 'get_weather', arguments: { city: 'Oslo' } })
    await killHard(first.child)

    const second = await startServerProcess(database.url)
    children.push(second.child)
    expect((await runUntil(second.url, waiting.id, ['REQUIRES_ACTION'])).pendingToolCalls).toEqual(waiting.pendingToolCalls)
    const submitted = (
      await post(second.url, SubmitToolResultsDocument, {
        input: { runId: waiting.id, results: [{ callId: call!.callId, output: 'snow' }] },
      })
    ).submitToolResults
    expect(submitted.__typename).toBe('SubmitToolResultsPayload')
    const done = await runUntil(second.url, waiting.id, ['COMPLETED', 'FAILED', 'ABORTED'])
    expect(done).toMatchObject({ status: 'COMPLETED', output: 'snow', terminalReason: 'COMPLETED' })
    const history = (await post(second.url, SessionToolHistoryDocument, { id: 'crash-tools' })).session!.messages
    expect(history.map((m) => [m.role, m.content])).toEqual([
      ['USER', 'use get_weather for Oslo'],
      ['ASSISTANT', ''],
      ['TOOL', 'snow'],
      ['ASSISTANT', 'snow'],
    ])
  })

  it('is left waiting by a graceful shutdown (SIGTERM), in the store, and the next start takes its results', async () => {
    database = await createTestDatabase(provider)
    const first = await startServerProcess(database.url)
    children.push(first.child)
    const waiting = await waitingRun(first.url, 'drain-tools')
    const exited = new Promise<number | null>((resolve) => first.child.once('exit', resolve))
    first.child.kill('SIGTERM')
    expect(await exited).toBe(0)
    const store = await openStore(database.url)
    try {
      expect((await store.runs.find('local', waiting.id))?.status).toBe('REQUIRES_ACTION')
    } finally {
      await store.close()
    }
    const second = await startServerProcess(database.url)
    children.push(second.child)
    const [call] = waiting.pendingToolCalls
    await post(second.url, SubmitToolResultsDocument, { input: { runId: waiting.id, results: [{ callId: call!.callId, output: 'calm' }] } })
    expect(await runUntil(second.url, waiting.id, ['COMPLETED', 'FAILED', 'ABORTED'])).toMatchObject({
      status: 'COMPLETED',
      output: 'calm',
    })
  })
})

describe.skipIf(!(process.env.DATABASE_URL && process.env.REDIS_URL))('a run waiting for tool results, two instances', () => {
  let database: TestDatabase | undefined
  const children: ChildProcess[] = []
  afterEach(async () => {
    for (const child of children.splice(0)) await killHard(child)
    await database?.drop()
  })

  it('takes results submitted to the instance that does not hold the session, and completes there', async () => {
    database = await createTestDatabase('postgresql')
    const env = { REDIS_URL: process.env.REDIS_URL!, PROMPTLINE_REDIS_PREFIX: `test-${randomBytes(6).toString('hex')}:` }
    const [a, b] = await Promise.all([startServerProcess(database.url, env), startServerProcess(database.url, env)])
    children.push(a.child, b.child)
    const waiting = await waitingRun(a.url, 'two-tools')
    const [call] = waiting.pendingToolCalls
    const submitted = (
      await post(b.url, SubmitToolResultsDocument, { input: { runId: waiting.id, results: [{ callId: call!.callId, output: 'fog' }] } })
    ).submitToolResults
    expect(submitted).toMatchObject({ __typename: 'SubmitToolResultsPayload', run: { id: waiting.id } })
    const done = await runUntil(b.url, waiting.id, ['COMPLETED', 'FAILED', 'ABORTED'])
    expect(done).toMatchObject({ status: 'COMPLETED', output: 'fog' })
  })
})
