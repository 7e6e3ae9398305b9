import { type Client, gql } from '@urql/core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { pipe, subscribe } from 'wonka'
import WebSocket from 'ws'
import { createUrql } from '../../examples/urql-client.js'
import { startTestServer, type TestServer } from '../helpers/server.js'
import * as walk from './walk-through.js'

// The README's walk-through through urql with graphcache, subscriptions over graphql-ws or SSE.

const SESSION = gql`
  query Session($id: ID!) {
    session(id: $id) { id queue(includeTerminal: true) { id queueId status } }
  }
`
const UPSERT = gql(walk.UPSERT)
const CREATE_SESSION = gql(walk.CREATE_SESSION)
const ENQUEUE = gql(walk.ENQUEUE)
const WATCH = gql(walk.WATCH)

describe.each(['graphql-ws', 'graphql-sse'] as const)(
  'urql with graphcache (examples/urql-client.ts), subscriptions over %s',
  (transport) => {
    let t: TestServer
    let urql: Client

    beforeAll(async () => {
      t = await startTestServer({ provider: 'sqlite' })
      // the example is written for browsers; Node 20 has no global WebSocket
      globalThis.WebSocket ??= WebSocket as never
      urql = createUrql(`${t.http.url}/graphql`, { sse: transport === 'graphql-sse' })
    })
    afterAll(() => t?.stop({ dropDatabase: true }))

    it("answers an error union with the error's fields", async () => {
      const { data } = await urql.mutation(UPSERT, { id: 'not valid!' }).toPromise()
      expect(data.upsertPrompt).toMatchObject({ __typename: 'InvalidRequestError', code: 'INVALID_REQUEST' })
    })

    it('streams the tokens, and the cached session queue shows the entry COMPLETED', async () => {
      const sessionId = `urql-${transport}`
      await urql.mutation(CREATE_SESSION, { id: sessionId }).toPromise()
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
      expect(live.data.session.queue.map((e: { id: string; status: string }) => [e.id, e.status === 'COMPLETED'])).toEqual([
        [entryId, false],
      ])
      await expect.poll(() => finished, { timeout: 10_000 }).toMatchObject({ status: 'COMPLETED', output: 'urql hears tokens' })
      unsubscribe()
      expect(tokens.join('')).toBe('urql hears tokens')

      const cached = await urql.query(SESSION, { id: sessionId }, { requestPolicy: 'cache-only' }).toPromise()
      expect(cached.data.session.queue).toEqual([{ id: entryId, queueId: entryId, status: 'COMPLETED' }])
    })
  },
)
