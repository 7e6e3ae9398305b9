import { readFileSync } from 'node:fs'
import { ApolloClient, gql, HttpLink, InMemoryCache, split } from '@apollo/client'
import { GraphQLWsLink } from '@apollo/client/link/subscriptions'
import { getMainDefinition } from '@apollo/client/utilities'
import { createClient } from 'graphql-ws'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { PROJECT_ROOT } from '../../src/config.js'
import { startTestServer, type TestServer } from '../helpers/server.js'
import * as walk from './walk-through.js'

// The README's walk-through through Apollo Client 4: HTTP for queries and mutations, graphql-ws
// for subscriptions, possibleTypes from the committed file.
const possibleTypes = JSON.parse(readFileSync(`${PROJECT_ROOT}/schema/possible-types.json`, 'utf8'))

const PREPARE = gql(walk.PREPARE)
const UPSERT = gql(walk.UPSERT)
const CREATE_SESSION = gql(walk.CREATE_SESSION)
const ENQUEUE = gql(walk.ENQUEUE)
const WATCH = gql(walk.WATCH)
const ENTRY = gql`
  fragment CachedEntry on QueueEntry { id status }
`

describe('Apollo Client 4 with a split link', () => {
  let t: TestServer
  let apollo: ApolloClient
  let socket: ReturnType<typeof createClient>

  beforeAll(async () => {
    t = await startTestServer({ provider: 'sqlite' })
    socket = createClient({ url: `${t.http.url.replace('http', 'ws')}/graphql`, webSocketImpl: WebSocket })
    const link = split(
      ({ query }) => {
        const definition = getMainDefinition(query)
        return definition.kind === 'OperationDefinition' && definition.operation === 'subscription'
      },
      new GraphQLWsLink(socket),
      new HttpLink({ uri: `${t.http.url}/graphql` }),
    )
    apollo = new ApolloClient({ link, cache: new InMemoryCache({ possibleTypes }) })
  })
  afterAll(async () => {
    apollo?.stop()
    await socket?.dispose()
    await t?.stop({ dropDatabase: true })
  })

  it('runs a query', async () => {
    const { data } = await apollo.query<{ preparePrompt: { messages: { role: string; content: string }[] } }>({ query: PREPARE })
    expect(data!.preparePrompt.messages.at(-1)).toMatchObject({ role: 'USER', content: 'hi' })
  })

  it("keeps an error union's fields through the cache", async () => {
    const { data } = await apollo.mutate<{ upsertPrompt: { __typename: string; code?: string; message?: string } }>({
      mutation: UPSERT,
      variables: { id: 'not valid!' },
    })
    expect(data!.upsertPrompt).toMatchObject({ __typename: 'InvalidRequestError', code: 'INVALID_REQUEST' })
    expect(data!.upsertPrompt.message).toContain('id')
  })

  it('streams the tokens of a subscription, and the cached queue entry ends COMPLETED', async () => {
    await apollo.mutate({ mutation: CREATE_SESSION, variables: { id: 'apollo' } })
    const tokens: string[] = []
    const finished = new Promise<{ status: string; output: string }>((resolve, reject) => {
      apollo
        .subscribe<{ sessionEvents: { __typename: string; text?: string; run?: { status: string; output: string } } }>({
          query: WATCH,
          variables: { sessionId: 'apollo' },
        })
        .subscribe({
          next: ({ data }) => {
            const event = data!.sessionEvents
            if (event.__typename === 'TokenDeltaEvent') tokens.push(event.text!)
            if (event.__typename === 'RunFinishedEvent') resolve(event.run!)
          },
          error: reject,
        })
    })
    const { data } = await apollo.mutate<{ enqueuePrompt: { entry: { id: string; status: string } } }>({
      mutation: ENQUEUE,
      variables: { input: { sessionId: 'apollo', promptId: 'chat', input: 'apollo hears tokens' } },
    })
    const entry = data!.enqueuePrompt.entry

    expect(await finished).toMatchObject({ __typename: 'Run', status: 'COMPLETED', output: 'apollo hears tokens' })
    expect(tokens.join('')).toBe('apollo hears tokens')
    // the entry's QueueEntryEvents updated the entry the mutation put in the cache, by its id
    await expect
      .poll(() =>
        apollo.cache.readFragment<{ status: string }>({
          id: apollo.cache.identify({ __typename: 'QueueEntry', id: entry.id }),
          fragment: ENTRY,
        }),
      )
      .toMatchObject({ status: 'COMPLETED' })
  })
})
