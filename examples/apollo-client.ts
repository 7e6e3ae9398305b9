// Apollo Client 4 for promptline: HTTP for queries and mutations, graphql-ws for subscriptions,
// possibleTypes so `... on Error` matches in the cache, and the resume pattern for a session stream.
import { ApolloClient, gql, HttpLink, InMemoryCache, split } from '@apollo/client'
import { GraphQLWsLink } from '@apollo/client/link/subscriptions'
import { getMainDefinition } from '@apollo/client/utilities'
import { createClient } from 'graphql-ws'
import possibleTypes from '../schema/possible-types.json' with { type: 'json' }

export function createApollo(url = 'http://127.0.0.1:4000/graphql', apiKey?: string) {
  const authorization = apiKey ? `Bearer ${apiKey}` : undefined
  // retry forever: a refused connection during a restart is worth another try too
  const socket = createClient({ url: url.replace(/^http/, 'ws'), connectionParams: { authorization }, retryAttempts: Infinity, shouldRetry: () => true })
  const link = split(
    ({ query }) => {
      const definition = getMainDefinition(query)
      return definition.kind === 'OperationDefinition' && definition.operation === 'subscription'
    },
    new GraphQLWsLink(socket),
    new HttpLink({ uri: url, headers: authorization ? { authorization } : {} }),
  )
  // every cached object has an id (QueueEntry included), so the default keyFields apply
  return new ApolloClient({ link, cache: new InMemoryCache({ possibleTypes }) })
}

const WATCH = gql`
  subscription Watch($sessionId: ID!, $afterSequence: Int) {
    sessionEvents(sessionId: $sessionId, afterSequence: $afterSequence) {
      __typename
      sequence
      ... on QueueEntryEvent { entry { id status position } }
      ... on TokenDeltaEvent { text }
    }
  }
`

/**
 * Resuming: graphql-ws resends a subscription's first variables after a reconnect, so subscribe
 * anew with the last sequence seen instead, and drop anything at or below it.
 */
export function watchSession(apollo: ApolloClient, sessionId: string, onEvent: (event: { __typename: string; sequence: number }) => void) {
  let last = 0
  let current: { unsubscribe(): void } | null = null
  const subscribe = () => {
    current = apollo.subscribe<{ sessionEvents: { __typename: string; sequence: number } }>({ query: WATCH, variables: { sessionId, afterSequence: last } }).subscribe({
      next: ({ data }) => {
        const event = data?.sessionEvents
        if (!event || event.sequence <= last) return
        last = event.sequence
        onEvent(event)
      },
      error: () => setTimeout(subscribe, 1_000),
      complete: () => setTimeout(subscribe, 1_000),
    })
  }
  subscribe()
  return () => current?.unsubscribe()
}
