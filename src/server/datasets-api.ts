import type { Plugin } from 'graphql-yoga'
import { ForbiddenError, InvalidRequestError, NotFoundError, PromptlineError, UnauthenticatedError } from '../domain/errors.js'
import type { DatasetService } from '../services/dataset-service.js'
import type { KeyLimiter } from '../services/key-limits.js'
import type { KeyRing } from '../services/key-ring.js'

const ITEMS_PATH = /^\/datasets\/([^/]+)\/items$/
const NDJSON = 'application/x-ndjson'
/** The largest JSON Lines import. */
const MAX_IMPORT_BYTES = 32 * 1024 * 1024

const STATUS: Record<string, number> = {
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  RATE_LIMITED: 429,
  UNAVAILABLE: 503,
  STORAGE_FULL: 507,
}

/** The body as text, or null past `limit` bytes. */
async function textCapped(request: Request, limit: number): Promise<string | null> {
  if (Number(request.headers.get('content-length') ?? 0) > limit) return null
  const text = await request.text()
  return Buffer.byteLength(text) > limit ? null : text
}

/** Lines from an async source as a byte stream. */
function streamOf(lines: AsyncGenerator<string>, ReadableStreamOf: typeof ReadableStream): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder()
  return new ReadableStreamOf({
    async pull(controller) {
      const next = await lines.next()
      if (next.done) controller.close()
      else controller.enqueue(encoder.encode(next.value))
    },
    async cancel() {
      await lines.return(undefined)
    },
  })
}

/**
 * `POST /datasets/{id}/items` (a JSON Lines body, `application/x-ndjson`: one item a line) adds
 * them as a new version and answers it (201); `GET /datasets/{id}/items?version=` answers a
 * version's items as JSON Lines (the newest without `version`). Errors as `{ error: { code, message } }`.
 */
export function useDatasetLines(datasets: DatasetService, keys: KeyRing, limiter: KeyLimiter): Plugin {
  return {
    async onRequest({ request, url, endResponse, fetchAPI }) {
      const match = ITEMS_PATH.exec(url.pathname)
      if (!match) return
      const datasetId = decodeURIComponent(match[1]!)
      try {
        const principal = await keys.authenticate(request.headers.get('authorization'))
        if (!principal) throw new UnauthenticatedError('a valid API key is required: send Authorization: Bearer <key>')
        await limiter.countRequests(principal, 1)
        if (request.method === 'GET') {
          const asked = url.searchParams.get('version')
          const version = asked === null ? null : Number(asked)
          const lines = datasets.exportLines(principal.tenantId, datasetId, version)
          // the first line (or the dataset's absence) decides the status before anything is sent
          const first = await lines.next()
          const rest = (async function* () {
            if (!first.done) yield first.value
            yield* lines
          })()
          return endResponse(new fetchAPI.Response(streamOf(rest, fetchAPI.ReadableStream), { headers: { 'content-type': NDJSON } }))
        }
        if (request.method !== 'POST') return endResponse(new fetchAPI.Response(null, { status: 405, headers: { allow: 'GET, POST' } }))
        if (principal.role === 'read') throw new ForbiddenError('a read key may not add dataset items')
        if (!(request.headers.get('content-type') ?? '').toLowerCase().startsWith(NDJSON)) {
          throw InvalidRequestError.at('content-type', `send ${NDJSON}: one item a line`)
        }
        const body = await textCapped(request, MAX_IMPORT_BYTES)
        if (body === null) throw InvalidRequestError.at('body', `is larger than ${MAX_IMPORT_BYTES} bytes`)
        const version = await datasets.importLines(principal.tenantId, datasetId, body)
        endResponse(fetchAPI.Response.json({ datasetId, version }, { status: 201 }))
      } catch (error) {
        if (!(error instanceof PromptlineError)) throw error
        const status = error instanceof NotFoundError ? 404 : (STATUS[error.code] ?? 400)
        endResponse(fetchAPI.Response.json({ error: { code: error.code, message: error.message } }, { status }))
      }
    },
  }
}
