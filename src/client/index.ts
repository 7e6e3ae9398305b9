// promptline/client: a typed client of the promptline GraphQL API, on fetch and graphql-ws.
import { backoffDelay, type RetryOptions, wait } from './backoff.js'
import { isTransient, PromptlineError } from './errors.js'
import {
  ClientAbortDocument,
  ClientApproveToolCallsDocument,
  ClientCancelDocument,
  ClientCreateSessionDocument,
  ClientEnqueueDocument,
  type ClientEntryFragment,
  type ClientEventFragment,
  ClientLastSequenceDocument,
  ClientRunEventsDocument,
  type ClientRunFragment,
  ClientRunPromptDocument,
  ClientSessionEventsDocument,
  ClientSteerDocument,
  ClientSubmitToolResultsDocument,
  type CreateSessionInput,
  type EnqueuePromptInput,
  type SteerPromptInput,
  type ToolCallDecisionInput,
  type ToolResultInput,
} from './generated/graphql.js'
import { RunStream } from './run-stream.js'
import { resumable } from './stream.js'
import { type OperationDocument, Transport, type TransportOptions } from './transport.js'

export type { RetryOptions } from './backoff.js'
export { ConnectionError, PromptlineError } from './errors.js'
export type {
  EnqueuePromptInput,
  ErrorCode,
  RunStatus,
  SteerPromptInput,
  ToolCallDecisionInput,
  ToolInput,
  ToolResultInput,
} from './generated/graphql.js'
export type { JsonValue } from './json.js'
export type { RunStream } from './run-stream.js'
export type { OperationDocument, TransportOptions as PromptlineClientOptions } from './transport.js'

/** A queue entry as the client returns it. */
export type QueueEntry = ClientEntryFragment
/** A run as the client returns it. */
export type Run = ClientRunFragment
/** One event of a session or run stream; narrow it by `__typename`. */
export type SessionEvent = ClientEventFragment

export interface StreamOptions {
  /**
   * Yield the events after this sequence. For a session the default is "from now" (its
   * `lastSequence`); for a run, its first event.
   */
  afterSequence?: number
  /** Stops the stream (the iterator ends). */
  signal?: AbortSignal
}

/** A mutation's payload, or its typed error thrown as a PromptlineError. */
function payload<T extends { __typename: string }>(result: T): Exclude<T, { code: unknown }> {
  if ('code' in result && 'message' in result) throw new PromptlineError(result.code as never, String(result.message), result.__typename)
  return result as Exclude<T, { code: unknown }>
}

export class PromptlineClient {
  private readonly transport: Transport
  private readonly retry: RetryOptions

  constructor(options: TransportOptions & { retry?: RetryOptions }) {
    this.transport = new Transport(options)
    this.retry = options.retry ?? {}
  }

  /** Opens a session (a server id when `input.id` is absent) and returns its id. */
  async createSession(input: CreateSessionInput = {}): Promise<string> {
    const result = await this.transport.request(ClientCreateSessionDocument, { input })
    return payload(result.createSession).session.id
  }

  /** Admits a prompt into its session's queue. Retried after a network failure under one idempotency key, so it is admitted once. */
  async enqueue(input: EnqueuePromptInput): Promise<QueueEntry> {
    const keyed = { ...input, idempotencyKey: input.idempotencyKey ?? crypto.randomUUID() }
    const result = await this.mutate(() => this.transport.request(ClientEnqueueDocument, { input: keyed }))
    return payload(result.enqueuePrompt).entry
  }

  /**
   * Enqueues a prompt and waits for its finished run, over HTTP. After `timeoutMs` (the server's
   * default when absent) the entry may still be in line or running: `run` is null if it had not started.
   */
  async runPrompt(input: EnqueuePromptInput, options: { timeoutMs?: number } = {}): Promise<{ entry: QueueEntry; run: Run | null }> {
    const keyed = { ...input, idempotencyKey: input.idempotencyKey ?? crypto.randomUUID() }
    const result = await this.mutate(() =>
      this.transport.request(ClientRunPromptDocument, { input: keyed, timeoutMs: options.timeoutMs ?? null }),
    )
    return payload(result.runPrompt)
  }

  /** Stops a run; its entry ends CANCELLED. `aborted` is false when it had already ended. */
  async abort(runId: string, reason?: string): Promise<{ aborted: boolean; run: Run }> {
    const result = await this.mutate(() => this.transport.request(ClientAbortDocument, { runId, reason: reason ?? null }))
    return payload(result.abortRun)
  }

  /** Cancels a queued (or running) entry. `cancelled` is false when it had already ended. */
  async cancel(sessionId: string, queueId: string): Promise<{ cancelled: boolean; entry: QueueEntry }> {
    const result = await this.mutate(() => this.transport.request(ClientCancelDocument, { sessionId, queueId }))
    return payload(result.cancelPrompt)
  }

  /** Sends user text into a running generation; `steerId` (yours) makes a retry harmless. */
  async steer(
    input: Omit<SteerPromptInput, 'steerId'> & { steerId?: string },
  ): Promise<{ steerId: string; queueId: string; runId: string }> {
    const keyed = { ...input, steerId: input.steerId ?? crypto.randomUUID() }
    const result = await this.mutate(() => this.transport.request(ClientSteerDocument, { input: keyed }))
    return payload(result.steerPrompt)
  }

  /**
   * Gives a run waiting for tool results (a ToolCallsRequestedEvent, or `run.pendingToolCalls`)
   * some or all of them. Retried after a network failure under one idempotency key, so they are
   * taken once; a refusal is thrown as a PromptlineError (TOOL_RESULT_REJECTED).
   */
  async submitToolResults(runId: string, results: ToolResultInput[], options: { idempotencyKey?: string } = {}): Promise<Run> {
    const input = { runId, results, idempotencyKey: options.idempotencyKey ?? crypto.randomUUID() }
    const result = await this.mutate(() => this.transport.request(ClientSubmitToolResultsDocument, { input }))
    return payload(result.submitToolResults).run
  }

  /**
   * Approves or declines calls of MCP tools a run waits to have approved (`pendingToolCalls` with
   * `approvalRequired`). Retried after a network failure under one idempotency key, so they are
   * taken once; a refusal is thrown as a PromptlineError (TOOL_RESULT_REJECTED).
   */
  async approveToolCalls(runId: string, decisions: ToolCallDecisionInput[], options: { idempotencyKey?: string } = {}): Promise<Run> {
    const input = { runId, decisions, idempotencyKey: options.idempotencyKey ?? crypto.randomUUID() }
    const result = await this.mutate(() => this.transport.request(ClientApproveToolCallsDocument, { input }))
    return payload(result.approveToolCalls).run
  }

  /**
   * Any query of your own, typed by its document (graphql-codegen with `documentMode: 'string'`),
   * retried after transient failures; a GraphQL error is thrown as a PromptlineError.
   */
  query<T, V>(document: OperationDocument<T, V>, variables: V): Promise<T> {
    return this.mutate(() => this.transport.request(document, variables))
  }

  /**
   * Any subscription of your own, typed by its document, until the server completes it or `signal`
   * aborts. It is not resumed: a dropped socket throws ConnectionError (the session and run streams
   * below resume by themselves).
   */
  subscribe<T, V>(document: OperationDocument<T, V>, variables: V, signal?: AbortSignal): AsyncIterable<T> {
    return this.transport.subscribe(document, variables, signal)
  }

  /** Every event of a session, resumed without gap or duplicate after any disconnect or restart. */
  streamSession(sessionId: string, options: StreamOptions = {}): AsyncIterable<SessionEvent> {
    return resumable<SessionEvent>(
      {
        start: async () =>
          options.afterSequence ??
          (await this.mutate(() => this.transport.request(ClientLastSequenceDocument, { sessionId }))).session?.lastSequence ??
          0,
        open: (afterSequence, signal) =>
          this.events(ClientSessionEventsDocument, { sessionId, afterSequence }, signal, (data) => data.sessionEvents),
        isLast: () => false,
      },
      this.retry,
      options.signal,
    )
  }

  /** One run's events from its start (or `afterSequence`), resumed like a session's; ends with the run, whose end `done()` gives. */
  streamRun(runId: string, options: StreamOptions = {}): RunStream {
    const events = resumable<SessionEvent>(
      {
        start: async () => options.afterSequence ?? null,
        open: (afterSequence, signal) => this.events(ClientRunEventsDocument, { runId, afterSequence }, signal, (data) => data.runEvents),
        isLast: (event) => event.__typename === 'RunFinishedEvent',
      },
      this.retry,
      options.signal,
    )
    return new RunStream(events)
  }

  private async *events<T, V>(
    document: OperationDocument<T, V>,
    variables: V,
    signal: AbortSignal | undefined,
    eventOf: (data: T) => SessionEvent,
  ): AsyncGenerator<SessionEvent> {
    for await (const data of this.transport.subscribe(document, variables, signal)) yield eventOf(data)
  }

  /** Closes the WebSocket. */
  close(): Promise<void> {
    return this.transport.close()
  }

  /** A request retried after transient failures, a few times (mutations are idempotent by key). */
  private async mutate<T>(send: () => Promise<T>): Promise<T> {
    const attempts = Math.min(this.retry.maxAttempts ?? 5, 5)
    for (let attempt = 0; ; attempt++) {
      try {
        return await send()
      } catch (error) {
        if (!isTransient(error) || attempt + 1 >= attempts) throw error
        await wait(backoffDelay(attempt, this.retry))
      }
    }
  }
}

/** A client of the promptline server at `options.url` (its /graphql endpoint). */
export const createPromptlineClient = (options: TransportOptions & { retry?: RetryOptions }): PromptlineClient =>
  new PromptlineClient(options)
