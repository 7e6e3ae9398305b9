import type { ServerResponse } from 'node:http'
import type { Plugin } from 'graphql-yoga'
import { PromptlineError, RateLimitedError, UnauthenticatedError, UnavailableError } from '../domain/errors.js'
import type { Logger } from '../domain/logger.js'
import type { KeyLimiter } from '../services/key-limits.js'
import type { KeyRing } from '../services/key-ring.js'
import { type OpenAIChatService, UnsupportedParameterError } from '../services/openai-chat.js'

/** OpenAI's status and error type for each of our codes; anything else is a server error. */
const OPENAI_ERRORS: Record<string, [status: number, type: string, code?: string]> = {
  INVALID_REQUEST: [400, 'invalid_request_error'],
  UNAUTHENTICATED: [401, 'invalid_request_error', 'invalid_api_key'],
  FORBIDDEN: [403, 'permission_error'],
  NOT_FOUND: [404, 'invalid_request_error', 'model_not_found'],
  RATE_LIMITED: [429, 'requests', 'rate_limit_exceeded'],
  BUDGET_EXCEEDED: [429, 'insufficient_quota', 'insufficient_quota'],
  QUEUE_FULL: [429, 'requests', 'rate_limit_exceeded'],
  UNAVAILABLE: [503, 'server_error'],
}

/** An error in OpenAI's shape (`{ error: { message, type, code, param } }`) with its status and Retry-After. */
function openAIError(error: PromptlineError, Response: typeof globalThis.Response): Response {
  const [status, type, code] = OPENAI_ERRORS[error.code] ?? [500, 'server_error']
  const unsupported = error instanceof UnsupportedParameterError
  const param = 'field' in error ? (error.field as string | null) : null
  const retryAfter =
    error instanceof RateLimitedError || error instanceof UnavailableError
      ? { 'retry-after': String(Math.ceil(error.retryAfterMs / 1000)) }
      : undefined
  const body = { error: { message: error.message, type, code: unsupported ? 'unsupported_parameter' : (code ?? null), param } }
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

/** Server-sent events of `chunks`, ended by `data: [DONE]`. */
function eventStream(chunks: AsyncIterable<unknown>): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder()
  const iterator = chunks[Symbol.asyncIterator]()
  return new ReadableStream({
    async pull(controller) {
      const next = await iterator.next()
      if (next.done) {
        controller.enqueue(encoder.encode('data: [DONE]\n\n'))
        controller.close()
      } else controller.enqueue(encoder.encode(`data: ${JSON.stringify(next.value)}\n\n`))
    },
    async cancel() {
      await iterator.return?.()
    },
  })
}

/**
 * The OpenAI API under `/v1`, beside GraphQL: `GET /v1/models` and `POST /v1/chat/completions`,
 * with the same keys (`Authorization: Bearer`) and limits; errors in OpenAI's shape.
 */
export function useOpenAIApi(chat: OpenAIChatService, keys: KeyRing, limiter: KeyLimiter, logger: Logger): Plugin {
  return {
    async onRequest({ request, url, endResponse, fetchAPI, serverContext }) {
      if (!url.pathname.startsWith('/v1/')) return
      const { Response } = fetchAPI
      try {
        const principal = await keys.authenticate(request.headers.get('authorization'))
        if (!principal) throw new UnauthenticatedError('a valid API key is required: send Authorization: Bearer <key>')
        await limiter.countRequests(principal, 1)
        if (url.pathname === '/v1/models' && request.method === 'GET') return endResponse(Response.json(await chat.models(principal)))
        if (url.pathname !== '/v1/chat/completions' || request.method !== 'POST') {
          return endResponse(
            Response.json(
              { error: { message: `no route ${request.method} ${url.pathname}`, type: 'invalid_request_error', code: null, param: null } },
              { status: 404 },
            ),
          )
        }
        const body: unknown = await request.json().catch(() => null)
        const answer = await chat.complete(principal, body, clientGone(request, serverContext))
        const headers = { 'x-promptline-run-id': answer.runId }
        if ('completion' in answer) return endResponse(Response.json(answer.completion, { headers }))
        endResponse(
          new Response(eventStream(answer.chunks), {
            headers: { ...headers, 'content-type': 'text/event-stream', 'cache-control': 'no-cache' },
          }),
        )
      } catch (error) {
        if (error instanceof PromptlineError) return endResponse(openAIError(error, Response))
        logger.error('an OpenAI API request failed', { path: url.pathname, error: (error as Error).message })
        endResponse(
          Response.json({ error: { message: 'Unexpected error.', type: 'server_error', code: null, param: null } }, { status: 500 }),
        )
      }
    },
  }
}
