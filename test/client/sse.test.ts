import { createClient } from 'graphql-sse'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
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
