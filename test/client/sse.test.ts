import { createClient } from 'graphql-sse'
import { createPromptlineClient } from 'promptline/client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sha256Hex } from '../../src/domain/hash.js'
import { createSession, enqueue } from '../helpers/flow.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

const WATCH = `subscription Watch($sessionId: ID!) {
  sessionEvents(sessionId: $sessionId, afterSequence: 0) {
    __typename
    sequence
    ... on TokenDeltaEvent { text }
    ... on RunFinishedEvent { run { status output } }
  }
}`

type Event = { __typename: string; sequence: number; text?: string; run?: { status: string; output: string } }

describe.each([
  ['single connection', true],
  ['distinct connections', false],
])('GraphQL over SSE, %s mode (graphql-sse on /graphql/stream)', (_mode, singleConnection) => {
  let t: TestServer
  beforeAll(async () => {
    t = await startTestServer({ provider: 'sqlite' })
  })
  afterAll(() => t?.stop({ dropDatabase: true }))

  it('streams a session: its tokens, then the finished run', async () => {
    const sessionId = await createSession(t, singleConnection ? 'sse-single' : 'sse-distinct')
    await enqueue(t, { sessionId, input: 'streamed over server sent events' })
    const client = createClient({ url: `${t.http.url}/graphql/stream`, singleConnection, retryAttempts: 0 })
    const events: Event[] = []
    try {
      for await (const result of client.iterate<{ sessionEvents: Event }>({ query: WATCH, variables: { sessionId } })) {
        expect(result.errors).toBeUndefined()
        events.push(result.data!.sessionEvents)
        if (result.data!.sessionEvents.__typename === 'RunFinishedEvent') break
      }
    } finally {
      client.dispose()
    }
    const text = events.flatMap((e) => (e.__typename === 'TokenDeltaEvent' ? [e.text] : [])).join('')
    expect(text).toBe('streamed over server sent events')
    expect(events.at(-1)!.run).toEqual({ status: 'COMPLETED', output: 'streamed over server sent events' })
  })

  it('answers a query on the same endpoint', async () => {
    const client = createClient({ url: `${t.http.url}/graphql/stream`, singleConnection, retryAttempts: 0 })
    try {
      const results = []
      for await (const result of client.iterate<{ backends: { id: string }[] }>({ query: '{ backends { id } }' })) results.push(result)
      expect(results).toHaveLength(1)
      expect(results[0]!.data!.backends.map((b) => b.id)).toContain('fake')
    } finally {
      client.dispose()
    }
  })
})

describe('with API keys: SSE and promptline/client carry the key', () => {
  const KEY = 'sse-client-key-0123456789'
  let t: TestServer
  beforeAll(async () => {
    t = await startTestServer({
      provider: 'sqlite',
      apiKey: KEY,
      app: { apiKeys: [{ sha256: sha256Hex(KEY), tenantId: 'acme', role: 'write' }] },
    })
  })
  afterAll(() => t?.stop({ dropDatabase: true }))

  it('serves graphql-sse (single connection) to a key, and refuses it without one', async () => {
    const query = '{ backends { id } }'
    const keyed = createClient({
      url: `${t.http.url}/graphql/stream`,
      singleConnection: true,
      retryAttempts: 0,
      headers: { authorization: `Bearer ${KEY}` },
    })
    const anonymous = createClient({ url: `${t.http.url}/graphql/stream`, singleConnection: true, retryAttempts: 0 })
    try {
      for await (const result of keyed.iterate<{ backends: unknown[] }>({ query })) expect(result.data!.backends.length).toBeGreaterThan(0)
      const refused = (async () => {
        for await (const result of anonymous.iterate({ query })) return result
      })()
      await expect(refused).rejects.toBeTruthy()
    } finally {
      keyed.dispose()
      anonymous.dispose()
    }
  })

  it('streams a run for promptline/client with its key, and answers a typed error without one', async () => {
    const client = createPromptlineClient({ url: `${t.http.url}/graphql`, apiKey: KEY })
    const anonymous = createPromptlineClient({ url: `${t.http.url}/graphql`, retry: { maxAttempts: 1 } })
    try {
      const sessionId = await client.createSession({ defaultProfileId: 'fake-echo' })
      const { entry, run } = await client.runPrompt({ sessionId, input: 'keyed words' })
      expect(run).toMatchObject({ status: 'COMPLETED', output: 'keyed words' })
      const replayed = client.streamRun(entry.runId!)
      expect(await replayed.done()).toMatchObject({ id: entry.runId, status: 'COMPLETED' })
      await expect(anonymous.enqueue({ sessionId, input: 'no key' })).rejects.toMatchObject({ code: 'UNAUTHENTICATED' })
      await expect(client.cancel(sessionId, 'no-such-entry')).rejects.toMatchObject({ code: 'NOT_FOUND', typename: 'NotFoundError' })
    } finally {
      await client.close()
      await anonymous.close()
    }
  })
})
