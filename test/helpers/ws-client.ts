import type { TypedDocumentNode } from '@graphql-typed-document-node/core'
import { print } from 'graphql'
import { type Client, createClient } from 'graphql-ws'
import WebSocket from 'ws'
import type { GraphQLResponse } from './app.js'

/** A graphql-ws client on a real socket, with no retries so failures surface at once; `apiKey` goes in connectionParams. */
export function wsClient(httpUrl: string, apiKey?: string): Client {
  return createClient({
    url: `${httpUrl.replace(/^http/, 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    retryAttempts: 0,
    lazy: true,
    connectionParams: apiKey === undefined ? undefined : { authorization: `Bearer ${apiKey}` },
  })
}

/** Runs one operation and collects every result it yields until it completes. */
export async function collect<T, V>(client: Client, document: TypedDocumentNode<T, V>, variables?: V): Promise<GraphQLResponse<T>[]> {
  const results: GraphQLResponse<T>[] = []
  for await (const result of client.iterate({ query: print(document), variables: variables as Record<string, unknown> })) {
    results.push(result as GraphQLResponse<T>)
  }
  return results
}
