import type { ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { openStore } from '../../src/store/store.js'
import { FakeVendorServer } from '../fixtures/fake-vendor.js'
import {
  CreateSessionDocument,
  EnqueuePromptDocument,
  QueueEntryDocument,
  RunToolsDocument,
  type RunToolsQuery,
  SessionToolHistoryDocument,
  SubmitToolResultsDocument,
} from '../generated/graphql.js'
import { vendorCatalog } from '../helpers/catalog-dir.js'
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

let openai: FakeVendorServer
let anthropic: FakeVendorServer
/** The server processes' catalog and keys: the fake backend, and OpenAI's and Anthropic's APIs faked on 127.0.0.1. */
let vendorEnv: Record<string, string>
beforeAll(async () => {
  openai = await FakeVendorServer.start('openai')
  anthropic = await FakeVendorServer.start('anthropic')
  const catalog = vendorCatalog(openai, anthropic)
  vendorEnv = { PROMPTLINE_CATALOG: catalog, OA_KEY: 'sk-oa-test', AN_KEY: 'sk-an-test' }
})
afterAll(async () => {
  await openai?.close()
  await anthropic?.close()
})

const VENDORS = [
  ['OpenAI', 'oa-plain', () => openai],
  ['Anthropic', 'an-plain', () => anthropic],
] as const

/** Creates a session on `url` and enqueues a prompt the profile's model answers with a call of get_weather. */
async function waitingRun(url: string, sessionId: string, profileId = 'fake-echo'): Promise<Run> {
  await post(url, CreateSessionDocument, { input: { id: sessionId, defaultProfileId: profileId } })
  const input = {
    sessionId,
    input: 'use get_weather for Oslo',
    tools: [WEATHER],
    overrides: { extra: { toolArguments: { city: 'Oslo' } } },
  }
  const admitted = (await post(url, EnqueuePromptDocument, { input })).enqueuePrompt
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

  it.each(VENDORS)(
    '%s: goes on after kill -9 of its server: the restarted server takes the results and completes the same run',
    async (_v, profileId, vendor) => {
      vendor().script({ tokens: [], toolCalls: [{ name: 'get_weather', arguments: '{"city": "Oslo"}' }] })
      database = await createTestDatabase(provider)
      const first = await startServerProcess(database.url, vendorEnv)
      children.push(first.child)
      const waiting = await waitingRun(first.url, 'crash-tools', profileId)
      const [call] = waiting.pendingToolCalls
      expect(call).toMatchObject({ name: 'get_weather', arguments: { city: 'Oslo' } })
      await killHard(first.child)

      const second = await startServerProcess(database.url, vendorEnv)
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
      // the restarted server sent the vendor the call and its result, paired
      expect(JSON.stringify(vendor().requests.at(-1)!.body.messages)).toContain(call!.callId)
    },
  )

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
    anthropic.script({ tokens: [], toolCalls: [{ name: 'get_weather', arguments: '{"city": "Oslo"}' }] })
    const env = { ...vendorEnv, REDIS_URL: process.env.REDIS_URL!, PROMPTLINE_REDIS_PREFIX: `test-${randomBytes(6).toString('hex')}:` }
    const [a, b] = await Promise.all([startServerProcess(database.url, env), startServerProcess(database.url, env)])
    children.push(a.child, b.child)
    const waiting = await waitingRun(a.url, 'two-tools', 'an-plain')
    const [call] = waiting.pendingToolCalls
    const submitted = (
      await post(b.url, SubmitToolResultsDocument, { input: { runId: waiting.id, results: [{ callId: call!.callId, output: 'fog' }] } })
    ).submitToolResults
    expect(submitted).toMatchObject({ __typename: 'SubmitToolResultsPayload', run: { id: waiting.id } })
    const done = await runUntil(b.url, waiting.id, ['COMPLETED', 'FAILED', 'ABORTED'])
    expect(done).toMatchObject({ status: 'COMPLETED', output: 'fog' })
  })
})
