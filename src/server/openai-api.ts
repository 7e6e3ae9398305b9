import type { ServerResponse } from 'node:http'
import type { Plugin } from 'graphql-yoga'
import type { Principal } from '../domain/access.js'
import { NotFoundError, PromptlineError, RateLimitedError, UnauthenticatedError, UnavailableError } from '../domain/errors.js'
import type { Logger } from '../domain/logger.js'
import { RequestTiming } from '../domain/request-timing.js'
import type { CatalogService } from '../services/catalog-service.js'
import type { KeyLimiter } from '../services/key-limits.js'
import type { KeyRing } from '../services/key-ring.js'
import type { OpenAIChatService } from '../services/openai-chat.js'
import type { OpenAIResponsesService, ResponseAnswer } from '../services/openai-responses.js'
import { listModels, UnsupportedParameterError } from '../services/openai-shapes.js'
import type { PrometheusMetrics } from './metrics.js'

/** OpenAI's status and error type for each of our codes; anything else is a server error. */
const OPENAI_ERRORS: Record<string, [status: number, type: string, code?: string]> = {
  INVALID_REQUEST: [400, 'invalid_request_error'],
  PROFILE_REQUIRED: [400, 'invalid_request_error'],
  RENDER: [400, 'invalid_request_error'],
  // a profile whose vendor key the server lacks: the message names the variable to set; a 4xx so
  // that SDKs do not retry what only configuration fixes
  CREDENTIALS: [400, 'invalid_request_error'],
  TOOL_RESULT_REJECTED: [400, 'invalid_request_error'],
  FILE_TOO_LARGE: [413, 'invalid_request_error'],
  SESSION_BUSY: [409, 'invalid_request_error'],
  UNAUTHENTICATED: [401, 'invalid_request_error', 'invalid_api_key'],
  FORBIDDEN: [403, 'permission_error'],
  NOT_FOUND: [404, 'invalid_request_error'],
  RATE_LIMITED: [429, 'requests', 'rate_limit_exceeded'],
  BUDGET_EXCEEDED: [429, 'insufficient_quota', 'insufficient_quota'],
  QUEUE_FULL: [429, 'requests', 'rate_limit_exceeded'],
  UNAVAILABLE: [503, 'server_error'],
}

/** OpenAI's code for an error: its own where it has one, else ours in lower case. */
function codeOf(error: PromptlineError, mapped: string | undefined): string {
  if (error instanceof UnsupportedParameterError) return 'unsupported_parameter'
  if (error instanceof NotFoundError) return ['profile', 'prompt', 'model'].includes(error.kind) ? 'model_not_found' : 'not_found'
  return mapped ?? error.code.toLowerCase()
}

/** An error in OpenAI's shape (`{ error: { message, type, code, param } }`) with its status and Retry-After. */
function openAIError(error: PromptlineError, Response: typeof globalThis.Response): Response {
  const [status, type, code] = OPENAI_ERRORS[error.code] ?? [500, 'server_error']
  const param = 'field' in error ? (error.field as string | null) : null
  const retryAfter =
    error instanceof RateLimitedError || error instanceof UnavailableError
      ? { 'retry-after': String(Math.ceil(error.retryAfterMs / 1000)) }
      : undefined
  const body = { error: { message: error.message, type, code: codeOf(error, code), param } }
  return Response.json(body, { status, headers: retryAfter })
}

/**
 * Aborts when the client goes away before its answer is sent whole: the node response closing
 * unfinished (yoga's request signal does not follow the socket), or the request's own signal.
 */
function clientGone(request: Request, serverContext: unknown): AbortSignal {
  const gone = new AbortController()
  const response = (serverContext as { res?: ServerResponse }).res
  response?.once('close', () => {
    if (!response.writableFinished) gone.abort()
  })
  // the request's signal is a ponyfill's on some Node versions, which AbortSignal.any refuses
  request.signal.addEventListener('abort', () => gone.abort(), { once: true })
  return gone.signal
}

/** Server-sent events: each chunk as `data:` (with its `event:` name when it has a type), then `data: [DONE]` when asked. */
function eventStream(chunks: AsyncIterable<unknown>, done: boolean): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder()
  const iterator = chunks[Symbol.asyncIterator]()
  return new ReadableStream({
    async pull(controller) {
      const next = await iterator.next()
      if (next.done) {
        if (done) controller.enqueue(encoder.encode('data: [DONE]\n\n'))
        controller.close()
        return
      }
      const type = (next.value as { type?: unknown }).type
      const name = typeof type === 'string' ? `event: ${type}\n` : ''
      controller.enqueue(encoder.encode(`${name}data: ${JSON.stringify(next.value)}\n\n`))
    },
    async cancel() {
      await iterator.return?.()
    },
  })
}

const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' }

/** The OpenAI API's services, by what they answer. */
export interface OpenAIServices {
  chat: OpenAIChatService
  responses: OpenAIResponsesService
  catalog: CatalogService
}

/** What a route is given besides the request: its client leaving, where its time goes, the Response class. */
interface RouteContext {
  signal: AbortSignal
  timing: RequestTiming
  Response: typeof globalThis.Response
}

type Route = (principal: Principal, request: Request, url: URL, context: RouteContext) => Promise<Response>

const RESPONSE_PATH = /^\/v1\/responses\/([^/]+)(\/cancel|\/input_items)?$/

/** The route of a method and path; null when none is. */
function routeOf(services: OpenAIServices, method: string, path: string): Route | null {
  const { chat, responses, catalog } = services
  if (method === 'GET' && path === '/v1/models')
    return async (principal, _r, _u, { Response }) => Response.json(await listModels(catalog, principal))
  if (method === 'POST' && path === '/v1/chat/completions') {
    return async (principal, request, _u, { signal, timing, Response }) => {
      const answer = await chat.complete(principal, await request.json().catch(() => null), signal, timing)
      const headers = { 'x-promptline-run-id': answer.runId }
      if ('completion' in answer) return Response.json(answer.completion, { headers })
      return new Response(eventStream(answer.chunks, true), { headers: { ...headers, ...SSE_HEADERS } })
    }
  }
  const respond = (answer: ResponseAnswer, Response: typeof globalThis.Response) => {
    const headers = answer.runId ? { 'x-promptline-run-id': answer.runId } : undefined
    if ('events' in answer) return new Response(eventStream(answer.events, false), { headers: { ...headers, ...SSE_HEADERS } })
    return Response.json(answer.response, { headers })
  }
  if (method === 'POST' && path === '/v1/responses') {
    return async (principal, request, _u, { signal, timing, Response }) =>
      respond(await responses.create(principal, await request.json().catch(() => null), signal, timing), Response)
  }
  const [, id, action] = RESPONSE_PATH.exec(path) ?? []
  if (!id) return null
  const responseId = decodeURIComponent(id)
  if (method === 'GET' && action === undefined) {
    return async (principal, _r, url, { Response }) => {
      const stream = url.searchParams.get('stream') === 'true'
      const after = Number(url.searchParams.get('starting_after') ?? -1)
      return respond(await responses.retrieve(principal, responseId, stream, Number.isInteger(after) ? after : -1), Response)
    }
  }
  if (method === 'POST' && action === '/cancel')
    return async (principal, _r, _u, { Response }) => Response.json(await responses.cancelResponse(principal, responseId))
  if (method === 'GET' && action === '/input_items') {
    return async (principal, _r, url, { Response }) =>
      Response.json(await responses.inputItems(principal, responseId, url.searchParams.get('order')))
  }
  return null
}

/** What admits an OpenAI API request: its key, the key's rate, and the instance's slots. */
export interface Admission {
  keys: KeyRing
  limiter: KeyLimiter
  /** Requests answered at once (RequestLimits.apiRequestsInFlight). */
  inFlight: number
}

/** How soon a request refused for want of a slot is told to try again. */
const BUSY_RETRY_MS = 1_000

/**
 * The server's own time on every answer: `x-promptline-overhead-ms` (the total less the vendor
 * calls') and `Server-Timing` by stage. A streamed answer's figures are those up to its headers.
 */
function timed(response: Response, timing: RequestTiming, metrics: PrometheusMetrics): Response {
  const overheadMs = timing.overheadMs()
  const stages = Object.entries(timing.stages).map(([stage, ms]) => `${stage};dur=${ms.toFixed(2)}`)
  if (timing.vendorMs > 0) stages.push(`vendor;dur=${timing.vendorMs.toFixed(2)}`)
  response.headers.set('x-promptline-overhead-ms', overheadMs.toFixed(2))
  response.headers.set('server-timing', stages.join(', '))
  metrics.requestTimed(overheadMs, timing.stages)
  return response
}

/**
 * The OpenAI API under `/v1`, beside GraphQL: models, chat completions and responses, with the
 * same keys (`Authorization: Bearer`) and limits; errors in OpenAI's shape.
 */
export function useOpenAIApi(services: OpenAIServices, admission: Admission, metrics: PrometheusMetrics, logger: Logger): Plugin {
  const { keys, limiter, inFlight } = admission
  let answering = 0
  return {
    async onRequest({ request, url, endResponse, fetchAPI, serverContext }) {
      if (!url.pathname.startsWith('/v1/')) return
      const { Response } = fetchAPI
      const timing = new RequestTiming()
      if (answering >= inFlight) {
        // read whole, so that its connection stays open for the client's next request (an
        // answer before its body would end the connection, src/server/http.ts)
        await request.arrayBuffer().catch(() => {})
        const message = `this instance is answering its ${inFlight} OpenAI API requests at once (PROMPTLINE_MAX_API_IN_FLIGHT); try again shortly`
        return endResponse(timed(openAIError(new UnavailableError(message, BUSY_RETRY_MS), Response), timing, metrics))
      }
      answering++
      // the request's slot is held until its answer is handed to the socket whole (a stream: until
      // it ends), or its client goes away
      const response = (serverContext as { res?: ServerResponse }).res
      let held = true
      const release = () => {
        if (held) answering--
        held = false
      }
      response?.once('finish', release).once('close', release)
      try {
        endResponse(timed(await answer(request, url, { signal: clientGone(request, serverContext), timing, Response }), timing, metrics))
      } finally {
        if (!response) release()
      }
    },
  }

  async function answer(request: Request, url: URL, context: RouteContext): Promise<Response> {
    const { Response } = context
    try {
      const principal = await keys.authenticate(request.headers.get('authorization'))
      if (!principal) throw new UnauthenticatedError('a valid API key is required: send Authorization: Bearer <key>')
      await limiter.countRequests(principal, 1)
      context.timing.authenticated()
      const route = routeOf(services, request.method, url.pathname)
      if (!route) {
        const error = { message: `no route ${request.method} ${url.pathname}`, type: 'invalid_request_error', code: null, param: null }
        return Response.json({ error }, { status: 404 })
      }
      return await route(principal, request, url, context)
    } catch (error) {
      if (error instanceof PromptlineError) return openAIError(error, Response)
      logger.error('an OpenAI API request failed', { path: url.pathname, error: (error as Error).message })
      return Response.json({ error: { message: 'Unexpected error.', type: 'server_error', code: null, param: null } }, { status: 500 })
    }
  }
}
