import type { EventEncoder } from '@ag-ui/encoder'
import type { Plugin } from 'graphql-yoga'
import { PromptlineError, UnauthenticatedError } from '../domain/errors.js'
import type { Logger } from '../domain/logger.js'
import { onFirstUse } from '../domain/on-first-use.js'
import type { EventCursor, SequencedEvent } from '../services/ag-ui-events.js'
import type { AgUiRunService } from '../services/ag-ui-runs.js'
import type { KeyLimiter } from '../services/key-limits.js'
import type { KeyRing } from '../services/key-ring.js'

/** HTTP statuses of the refusals a client can act on; anything else is a server error. */
const STATUS: Partial<Record<string, number>> = {
  INVALID_REQUEST: 400,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  RATE_LIMITED: 429,
  BUDGET_EXCEEDED: 429,
  QUEUE_FULL: 429,
  // what the request or the server's configuration must change: the message says what
  PROFILE_REQUIRED: 400,
  RENDER: 400,
  CREDENTIALS: 400,
  TOOL_RESULT_REJECTED: 400,
  SESSION_BUSY: 409,
  UNAVAILABLE: 503,
}

/** AG-UI's encoder, loaded on the first run asked for (a start that serves no AG-UI client loads none of it). */
const encoding = onFirstUse(() => import('@ag-ui/encoder'))

/** `Last-Event-ID`: `<sequence>-<index>` as sent, or a bare sequence (every event of it). */
function cursorOf(header: string | null): EventCursor | null {
  const parsed = header === null ? null : /^(\d{1,15})(?:-(\d{1,6}))?$/.exec(header)
  if (!parsed) return null
  return { sequence: Number(parsed[1]), index: parsed[2] === undefined ? Number.POSITIVE_INFINITY : Number(parsed[2]) }
}

/**
 * Server-sent events, each encoded by AG-UI's encoder, with its `id:` (also in its metadata as
 * `promptlineEventId`, for clients that do not show SSE ids).
 */
function sse(events: AsyncIterable<SequencedEvent>, encoder: EventEncoder): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder()
  const iterator = events[Symbol.asyncIterator]()
  return new ReadableStream({
    async pull(controller) {
      const next = await iterator.next()
      if (next.done) return controller.close()
      const { id, event } = next.value
      if (id === null) return controller.enqueue(bytes.encode(encoder.encodeSSE(event)))
      controller.enqueue(
        bytes.encode(`id: ${id}\n${encoder.encodeSSE({ ...event, metadata: { ...event.metadata, promptlineEventId: id } })}`),
      )
    },
    async cancel() {
      await iterator.return?.()
    },
  })
}

/**
 * AG-UI at `POST /ag-ui`: a `RunAgentInput` in, its run's events out as SSE; the same keys and
 * limits as GraphQL. `Last-Event-ID` resumes a stream after that event.
 */
export function useAgUi(agUi: AgUiRunService, keys: KeyRing, limiter: KeyLimiter, logger: Logger): Plugin {
  return {
    async onRequest({ request, url, endResponse, fetchAPI }) {
      if (url.pathname !== '/ag-ui') return
      const { Response } = fetchAPI
      try {
        const principal = await keys.authenticate(request.headers.get('authorization'))
        if (!principal) throw new UnauthenticatedError('a valid API key is required: send Authorization: Bearer <key>')
        await limiter.countRequests(principal, 1)
        if (request.method !== 'POST') return endResponse(Response.json({ error: 'POST a RunAgentInput' }, { status: 405 }))
        const after = cursorOf(request.headers.get('last-event-id'))
        const { EventEncoder } = await encoding()
        const events = await agUi.run(principal, await request.json().catch(() => null), after)
        endResponse(
          new Response(sse(events, new EventEncoder()), { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' } }),
        )
      } catch (error) {
        if (!(error instanceof PromptlineError)) logger.error('an AG-UI request failed', { error: (error as Error).message })
        const known = error instanceof PromptlineError
        const status = (known && STATUS[error.code]) || 500
        endResponse(
          Response.json({ error: known ? error.message : 'Unexpected error.', code: known ? error.code : 'INTERNAL' }, { status }),
        )
      }
    },
  }
}
