import type { TypedDocumentNode } from '@graphql-typed-document-node/core'
import { print } from 'graphql'
import type { Client } from 'graphql-ws'
import { createLogger } from '../../src/domain/logger.js'
import { FakeModelClient } from '../../src/providers/fake-client.js'
import type { GenerateRequest, ModelClient } from '../../src/providers/model-client.js'
import { type App, type AppOptions, createApp } from '../../src/server/app.js'
import { type HttpServer, startHttpServer } from '../../src/server/http.js'
import { DEFAULT_CATALOG, type GraphQLResponse } from './app.js'
import { createTestDatabase, type TestDatabase } from './databases.js'
import { wsClient } from './ws-client.js'

/** The fake backend, recording every request it is sent (what the model really saw). */
class RecordingFakeClient implements ModelClient {
  readonly requests: GenerateRequest[] = []
  /** Model calls streaming now, and the most there ever were at once. */
  inFlight = 0
  maxInFlight = 0
  private readonly fake = new FakeModelClient()
  async *generate(request: GenerateRequest, signal: AbortSignal) {
    this.requests.push({ ...request, messages: request.messages.map((m) => ({ ...m })) })
    this.maxInFlight = Math.max(this.maxInFlight, ++this.inFlight)
    try {
      yield* this.fake.generate(request, signal)
    } finally {
      this.inFlight--
    }
  }
}

/** `Type#sequence` of each event, for failure messages. */
function summarize(results: GraphQLResponse<unknown>[]): string {
  return results
    .map((r) => {
      if (r.errors) return `error:${r.errors[0]?.extensions?.code}`
      const event = Object.values(r.data as Record<string, { __typename?: string; sequence?: number }>)[0]
      return `${event?.__typename}#${event?.sequence}`
    })
    .join(' ')
}

/** A live subscription's results, gathered as they arrive. */
export class Subscription<T> {
  readonly results: GraphQLResponse<T>[] = []
  completed = false
  error: unknown = null
  private waiters: (() => void)[] = []
  readonly unsubscribe: () => void

  constructor(client: Client, document: TypedDocumentNode<T, unknown>, variables: Record<string, unknown>) {
    this.unsubscribe = client.subscribe<T>(
      { query: print(document), variables },
      {
        next: (result) => {
          this.results.push(result as GraphQLResponse<T>)
          this.wake()
        },
        error: (error) => {
          this.error = error
          this.wake()
        },
        complete: () => {
          this.completed = true
          this.wake()
        },
      },
    )
  }

  private wake() {
    for (const wake of this.waiters.splice(0)) wake()
  }

  /** Resolves once `predicate` holds for the gathered results (or fails after `timeoutMs`). */
  async until(predicate: (results: GraphQLResponse<T>[]) => boolean, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs
    while (!predicate(this.results)) {
      if (this.error) throw new Error(`subscription failed: ${JSON.stringify(this.error)}`)
      if (Date.now() > deadline) throw new Error(`timed out; got ${summarize(this.results)}`)
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve)
        setTimeout(resolve, 50)
      })
    }
  }

  done(timeoutMs?: number): Promise<void> {
    return this.until(() => this.completed, timeoutMs)
  }
}

export interface TestServer {
  app: App
  http: HttpServer
  database: TestDatabase
  model: RecordingFakeClient
  client: Client
  /** Runs one query or mutation over graphql-ws and returns its result (as `client`, the default one unless given). */
  request<T, V>(document: TypedDocumentNode<T, V>, variables?: V, client?: Client): Promise<GraphQLResponse<T>>
  /** Another graphql-ws client, authenticated with `apiKey`; closed by `stop`. */
  clientWith(apiKey: string): Client
  subscribe<T, V>(document: TypedDocumentNode<T, V>, variables: V, client?: Client): Subscription<T>
  /** Stops the listener and the app; keeps the database unless `dropDatabase`. */
  stop(options?: { dropDatabase?: boolean }): Promise<void>
}

/** A real listening server on port 0 with a graphql-ws client, on a fresh (or the given) database. */
export async function startTestServer(options: {
  provider: TestDatabase['provider']
  database?: TestDatabase
  app?: Partial<AppOptions>
  /** Environment variables the server may read keys from. */
  secrets?: Record<string, string>
  /** Collects every log line (debug level) when given. */
  logLines?: string[]
  /** The API key of the default client, for a server with keys. */
  apiKey?: string
}): Promise<TestServer> {
  const database = options.database ?? (await createTestDatabase(options.provider))
  const model = new RecordingFakeClient()
  const secrets = options.secrets ?? {}
  const logger = options.logLines
    ? createLogger('debug', (line) => options.logLines!.push(line))
    : createLogger(process.env.TEST_LOG_LEVEL === 'debug' ? 'debug' : process.env.TEST_LOG_LEVEL === 'error' ? 'error' : 'silent')
  const app = await createApp(
    {
      databaseUrl: database.url,
      catalogDir: DEFAULT_CATALOG,
      shutdownGraceMs: 0,
      ...options.app,
      clients: { FAKE: model, ...options.app?.clients },
    },
    (name) => secrets[name],
    logger,
  )
  const http = await startHttpServer(app, '127.0.0.1', 0)
  const client = wsClient(http.url, options.apiKey)
  const clients = [client]
  return {
    app,
    http,
    database,
    model,
    client,
    clientWith(apiKey) {
      const created = wsClient(http.url, apiKey)
      clients.push(created)
      return created
    },
    async request(document, variables, through = client) {
      let result: GraphQLResponse<never> | undefined
      for await (const next of through.iterate({ query: print(document), variables: variables as Record<string, unknown> }))
        result = next as never
      return result!
    },
    subscribe(document, variables, subscriber = client) {
      if (!clients.includes(subscriber)) clients.push(subscriber)
      return new Subscription(subscriber, document as never, variables as Record<string, unknown>)
    },
    async stop(stopOptions) {
      for (const c of clients) await c.dispose()
      await http.stop()
      await app.close()
      if (stopOptions?.dropDatabase) await database.drop()
    },
  }
}
