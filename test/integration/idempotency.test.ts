import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { EnqueuePromptDocument, RunPromptDocument, SessionDocument } from '../generated/graphql.js'
import { providers } from '../helpers/databases.js'
import { createSession, waitForEntry } from '../helpers/flow.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

// A client that retries a timed-out admission must never run the prompt twice.
describe.each(providers)('idempotent admission (%s)', (provider) => {
  let t: TestServer
  beforeAll(async () => {
    t = await startTestServer({ provider })
  })
  afterAll(() => t?.stop({ dropDatabase: true }))

  const enqueue = async (sessionId: string, input: string, idempotencyKey: string) => {
    const { data } = await t.request(EnqueuePromptDocument, { input: { sessionId, input, idempotencyKey } })
    return data!.enqueuePrompt
  }
  const modelCallsWith = (text: string) => t.model.requests.filter((r) => r.messages.at(-1)?.content === text).length
  const queueLength = async (id: string) => (await t.request(SessionDocument, { id, includeTerminal: true })).data!.session!.queue.length

  it('answers a retry with the entry it admitted and runs the prompt once', async () => {
    const s = await createSession(t, 'retry')
    const first = await enqueue(s, 'only once', 'key-1')
    const second = await enqueue(s, 'only once', 'key-1')
    if (first.__typename !== 'EnqueuePromptPayload' || second.__typename !== 'EnqueuePromptPayload') throw new Error('refused')
    expect(second.entry.queueId).toBe(first.entry.queueId)
    await waitForEntry(t, s, first.entry.queueId, ['COMPLETED'])
    expect((await enqueue(s, 'only once', 'key-1')).__typename).toBe('EnqueuePromptPayload')
    expect(modelCallsWith('only once')).toBe(1)
    expect(await queueLength(s)).toBe(1)
  })

  it('admits one entry when the same key arrives many times at once', async () => {
    const s = await createSession(t, 'race')
    const answers = await Promise.all(Array.from({ length: 8 }, () => enqueue(s, 'raced', 'key-race')))
    const ids = new Set(answers.map((a) => (a.__typename === 'EnqueuePromptPayload' ? a.entry.queueId : a.__typename)))
    expect([...ids]).toHaveLength(1)
    await waitForEntry(t, s, [...ids][0]!, ['COMPLETED'])
    expect(modelCallsWith('raced')).toBe(1)
    expect(await queueLength(s)).toBe(1)
  })

  it('refuses the same key with a different request, naming the key, and writes nothing', async () => {
    const s = await createSession(t, 'mismatch')
    await enqueue(s, 'the first request', 'key-2')
    const other = await enqueue(s, 'another request', 'key-2')
    expect(other).toMatchObject({ __typename: 'InvalidRequestError', field: 'input.idempotencyKey' })
    expect(await queueLength(s)).toBe(1)
  })

  it('answers a retried runPrompt with the finished run at once', async () => {
    const s = await createSession(t, 'run-retry')
    const input = { sessionId: s, input: 'run me', idempotencyKey: 'key-3' }
    const first = (await t.request(RunPromptDocument, { input })).data!.runPrompt
    const started = performance.now()
    const again = (await t.request(RunPromptDocument, { input, timeoutMs: 10_000 })).data!.runPrompt
    expect(performance.now() - started).toBeLessThan(5_000)
    if (first.__typename !== 'RunPromptPayload' || again.__typename !== 'RunPromptPayload') throw new Error('refused')
    expect(again.run).toMatchObject({ id: first.run!.id, status: 'COMPLETED', output: 'run me' })
    expect(modelCallsWith('run me')).toBe(1)
  })

  it('lets a key admit anew once its time to live has passed', async () => {
    let later = 0
    const short = await startTestServer({ provider, app: { limits: { idempotencyTtlMs: 60_000 }, clock: () => Date.now() + later } })
    try {
      const s = await createSession(short, 'expiry')
      const admit = async () => {
        const { data } = await short.request(EnqueuePromptDocument, {
          input: { sessionId: s, input: 'again later', idempotencyKey: 'key-4' },
        })
        if (data!.enqueuePrompt.__typename !== 'EnqueuePromptPayload') throw new Error('refused')
        return data!.enqueuePrompt.entry
      }
      const first = await admit()
      await waitForEntry(short, s, first.queueId, ['COMPLETED'])
      expect((await admit()).queueId).toBe(first.queueId)
      later = 61_000
      expect((await admit()).queueId).not.toBe(first.queueId)
    } finally {
      await short.stop({ dropDatabase: true })
    }
  })
})
