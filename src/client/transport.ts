import { type Client, createClient } from 'graphql-ws'
import { ConnectionError, PromptlineError } from './errors.js'

export interface TransportOptions {
  /** The GraphQL endpoint, e.g. `http://127.0.0.1:4000/graphql`; the WebSocket URL is derived from it. */
  url: string
  /** Sent as `Authorization: Bearer <apiKey>` over HTTP and in graphql-ws `connectionParams`. */
  apiKey?: string
  /** Defaults to the global fetch. */
  fetch?: typeof fetch
  /** A WebSocket class; defaults to the global one, or the `ws` package where there is none (Node 20). */
  webSocketImpl?: unknown
}

/** A typed operation: graphql-codegen's `documentMode: 'string'` documents are these (your own too). */
export interface OperationDocument<T, V> {
  /** Carries the types only (never set). */
  __apiType?: (variables: V) => T
  toString(): string
}

interface GraphQLResult<T> {
  data?: T | null
  errors?: { message: string; extensions?: Record<string, unknown> }[]
}

const describe = (error: unknown): string =>
  error instanceof Error
    ? error.message
    : typeof error === 'object' && error && 'code' in error
      ? `socket closed (${String(error.code)})`
      : String(error)

/** Queries and mutations over HTTP, subscriptions over one lazily opened graphql-ws socket. */
export class Transport {
  private socket: Promise<Client> | null = null

  constructor(private readonly options: TransportOptions) {}

  async request<T, V>(document: OperationDocument<T, V>, variables: V): Promise<T> {
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' }
    if (this.options.apiKey) headers.authorization = `Bearer ${this.options.apiKey}`
    let response: Response
    try {
      response = await (this.options.fetch ?? fetch)(this.options.url, {
        method: 'POST',
        headers,
        body: JSON.stringify({ query: document.toString(), variables }),
      })
    } catch (error) {
      throw new ConnectionError(`could not reach ${this.options.url}: ${describe(error)}`)
    }
    if (response.status >= 502) throw new ConnectionError(`${this.options.url} answered HTTP ${response.status}`)
    const body = (await response.json()) as GraphQLResult<T>
    if (body.errors?.length) throw PromptlineError.fromGraphQL(body.errors)
    return body.data as T
  }

  /**
   * One subscription: its results until the server completes it. Throws PromptlineError for a
   * GraphQL error and ConnectionError when the socket fails; ends early once `signal` aborts.
   * graphql-ws's own retry is off, since it would resend the first variables: resuming is the caller's.
   */
  async *subscribe<T, V>(document: OperationDocument<T, V>, variables: V, signal?: AbortSignal): AsyncGenerator<T> {
    const iterator = (await this.client()).iterate<T>({ query: document.toString(), variables: variables as Record<string, unknown> })
    const stop = () => void iterator.return?.()
    signal?.addEventListener('abort', stop, { once: true })
    try {
      for await (const result of iterator) {
        if (result.errors?.length) throw PromptlineError.fromGraphQL(result.errors)
        yield result.data as T
      }
    } catch (error) {
      if (error instanceof PromptlineError) throw error
      // graphql-ws rejects with the GraphQL errors of an `error` message, or with the socket's close
      if (Array.isArray(error)) throw PromptlineError.fromGraphQL(error)
      throw new ConnectionError(describe(error))
    } finally {
      signal?.removeEventListener('abort', stop)
      await iterator.return?.()
    }
  }

  private client(): Promise<Client> {
    this.socket ??= (async () => {
      const webSocketImpl = this.options.webSocketImpl ?? globalThis.WebSocket ?? (await import('ws')).default
      const authorization = this.options.apiKey ? `Bearer ${this.options.apiKey}` : undefined
      return createClient({
        url: this.options.url.replace(/^http/, 'ws'),
        webSocketImpl,
        connectionParams: authorization ? { authorization } : {},
        retryAttempts: 0,
        lazyCloseTimeout: 1_000,
      })
    })()
    return this.socket
  }

  async close(): Promise<void> {
    const socket = this.socket
    this.socket = null
    await (await socket)?.dispose()
  }
}
