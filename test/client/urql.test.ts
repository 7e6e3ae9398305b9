import { readFileSync } from 'node:fs'
import { Client, fetchExchange, gql, subscriptionExchange } from '@urql/core'
import { cacheExchange } from '@urql/exchange-graphcache'
import { createClient as createSseClient } from 'graphql-sse'
import { createClient as createWsClient } from 'graphql-ws'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { pipe, subscribe } from 'wonka'
import WebSocket from 'ws'
import { PROJECT_ROOT } from '../../src/config.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

// The README's walk-through through urql with graphcache, subscriptions over graphql-ws or SSE.
const possibleTypes = JSON.parse(readFileSync(`${PROJECT_ROOT}/schema/possible-types.json`, 'utf8'))

const UPSERT = gql`
  mutation Upsert($id: ID!) {
    upsertPrompt(input: { id: $id, messages: [{ role: USER, content: "hi" }] }) {
      __typename
      ... on UpsertPromptPayload { prompt { id version } }
      ... on Error { code message }
    }
  }
`
const SESSION = gql`
  query Session($id: ID!) {
    session(id: $id) { id queue(includeTerminal: true) { id queueId status } }
  }
`
const ENQUEUE = gql`
  mutation Enqueue($input: EnqueuePromptInput!) {
    enqueuePrompt(input: $input) {
      __typename
      ... on EnqueuePromptPayload { entry { id queueId status } }
      ... on Error { code message }
    }
  }
`
const WATCH = gql`
  subscription Watch($sessionId: ID!) {
    sessionEvents(sessionId: $sessionId, afterSequence: 0) {
      __typename
      sequence
      ... on QueueEntryEvent { entry { id queueId status } }
      ... on TokenDeltaEvent { text }
      ... on RunFinishedEvent { run { id status output } }
    }
  }
`

type Forward = Parameters<typeof subscriptionExchange>[0]['forwardSubscription']

describe.each(['graphql-ws', 'graphql-sse'] as const)('urql with graphcache, subscriptions over %s', (transport) => {
  let t: TestServer
  let urql: Client
  let dispose: () => unknown

  beforeAll(async () => {
    t = await startTestServer({ provider: 'sqlite' })
    let forwardSubscription: Forward
    if (transport === 'graphql-ws') {
      const ws = createWsClient({ url: `${t.http.url.replace('http', 'ws')}/graphql`, webSocketImpl: WebSocket })
      dispose = () => ws.dispose()
      forwardSubscription = (request) => ({
        subscribe: (sink) => ({ unsubscribe: ws.subscribe({ ...request, query: request.query ?? '' }, sink) }),
      })
    } else {
      const sse = createSseClient({ url: `${t.http.url}/graphql/stream` })
      dispose = () => sse.dispose()
      forwardSubscription = (request) => ({
        subscribe: (sink) => ({ unsubscribe: sse.subscribe({ ...request, query: request.query ?? '' }, sink) }),
      })
    }
    urql = new Client({
      url: `${t.http.url}/graphql`,
      // urql sends queries as GET: a GET without a custom header (Authorization counts) is refused as a possible CSRF
      fetchOptions: { headers: { 'x-graphql-yoga-csrf': '1' } },
      exchanges: [cacheExchange({ possibleTypes }), fetchExchange, subscriptionExchange({ forwardSubscription })],
    })
  })
  afterAll(async () => {
    await dispose?.()
    await t?.stop({ dropDatabase: true })
  })

  it("answers an error union with the error's fields", async () => {
    const { data } = await urql.mutation(UPSERT, { id: 'not valid!' }).toPromise()
    expect(data.upsertPrompt).toMatchObject({ __typename: 'InvalidRequestError', code: 'INVALID_REQUEST' })
  })

  it('streams the tokens, and the cached session queue shows the entry COMPLETED', async () => {
    const sessionId = `urql-${transport}`
    await urql
      .mutation(gql`mutation($id: ID!) { createSession(input: { id: $id, defaultProfileId: "fake-echo" }) { __typename } }`, {
        id: sessionId,
      })
      .toPromise()
    const queued = await urql.query(SESSION, { id: sessionId }).toPromise()
    expect(queued.data.session.queue).toEqual([])

    const tokens: string[] = []
    let finished: { status: string; output: string } | null = null
    const { unsubscribe } = pipe(
      urql.subscription(WATCH, { sessionId }),
      subscribe((result) => {
        const event = result.data?.sessionEvents
        if (event?.__typename === 'TokenDeltaEvent') tokens.push(event.text)
        if (event?.__typename === 'RunFinishedEvent') finished = event.run
      }),
    )
    await new Promise((r) => setTimeout(r, 200))
    const input = { sessionId, promptId: 'chat', input: 'urql hears tokens', overrides: { extra: { tokenDelayMs: 50 } } }
    const { data } = await urql.mutation(ENQUEUE, { input }).toPromise()
    const entryId = data.enqueuePrompt.entry.id
    // the session's queue as fetched while the entry was still in line or running
    const live = await urql.query(SESSION, { id: sessionId }, { requestPolicy: 'network-only' }).toPromise()
    expect(live.data.session.queue.map((e: { id: string; status: string }) => [e.id, e.status === 'COMPLETED'])).toEqual([[entryId, false]])
    await expect.poll(() => finished, { timeout: 10_000 }).toMatchObject({ status: 'COMPLETED', output: 'urql hears tokens' })
    unsubscribe()
    expect(tokens.join('')).toBe('urql hears tokens')

    const cached = await urql.query(SESSION, { id: sessionId }, { requestPolicy: 'cache-only' }).toPromise()
    expect(cached.data.session.queue).toEqual([{ id: entryId, queueId: entryId, status: 'COMPLETED' }])
  })
})
