// urql for promptline: graphcache with possibleTypes (every cached object has an id), queries
// and mutations over HTTP, subscriptions over graphql-ws or over SSE (graphql-sse, either mode).
import { cacheExchange } from '@urql/exchange-graphcache'
import { Client, fetchExchange, subscriptionExchange } from '@urql/core'
import { createClient as createSseClient } from 'graphql-sse'
import { createClient as createWsClient } from 'graphql-ws'
import possibleTypes from '../schema/possible-types.json' with { type: 'json' }

type Forward = Parameters<typeof subscriptionExchange>[0]['forwardSubscription']
type Transport = Pick<ReturnType<typeof createWsClient>, 'subscribe'> | Pick<ReturnType<typeof createSseClient>, 'subscribe'>

const forwardTo =
  (transport: Transport): Forward =>
  (request) => ({
    subscribe: (sink) => ({ unsubscribe: transport.subscribe({ ...request, query: request.query ?? '' }, sink as never) }),
  })

export function createUrql(url = 'http://127.0.0.1:4000/graphql', options: { apiKey?: string; sse?: boolean } = {}) {
  const authorization = options.apiKey ? `Bearer ${options.apiKey}` : undefined
  // urql sends queries as GET: such a request must carry a custom header (Authorization counts) to pass CSRF prevention
  const headers: Record<string, string> = authorization ? { authorization } : { 'x-graphql-yoga-csrf': '1' }
  const transport = options.sse
    ? createSseClient({ url: `${url}/stream`, headers, singleConnection: true })
    : createWsClient({ url: url.replace(/^http/, 'ws'), connectionParams: { authorization } })
  return new Client({
    url,
    fetchOptions: { headers },
    exchanges: [cacheExchange({ possibleTypes }), fetchExchange, subscriptionExchange({ forwardSubscription: forwardTo(transport) })],
  })
}
// Resuming works as in apollo-client.ts: subscribe again with afterSequence = the last sequence seen.
