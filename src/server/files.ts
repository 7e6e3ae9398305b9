import type { Plugin } from 'graphql-yoga'
import {
  FileTooLargeError,
  InvalidRequestError,
  PromptlineError,
  RateLimitedError,
  UnauthenticatedError,
  UnavailableError,
} from '../domain/errors.js'
import type { FileService } from '../services/file-service.js'
import type { KeyLimiter } from '../services/key-limits.js'
import type { KeyRing } from '../services/key-ring.js'

// room for the multipart framing around the file
const FRAMING_BYTES = 64 * 1024

const STATUS: Record<string, number> = {
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  FILE_TOO_LARGE: 413,
  INVALID_REQUEST: 400,
  STORAGE_FULL: 507,
  RATE_LIMITED: 429,
  UNAVAILABLE: 503,
}

/** Retry-After (whole seconds) for an error that says when to ask again. */
const retryAfter = (error: PromptlineError): Record<string, string> =>
  error instanceof RateLimitedError || error instanceof UnavailableError
    ? { 'retry-after': String(Math.max(1, Math.ceil(error.retryAfterMs / 1000))) }
    : {}

/** The body's bytes, or null as soon as they pass `limit` (the rest is left unread). */
async function readCapped(body: ReadableStream<Uint8Array> | null, limit: number): Promise<Buffer<ArrayBuffer> | null> {
  const chunks: Uint8Array[] = []
  let size = 0
  if (body === null) return Buffer.alloc(0)
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength
    if (size > limit) return null
    chunks.push(chunk)
  }
  return Buffer.concat(chunks)
}

/** The `file` field of a multipart/form-data body. */
async function formFile(body: Buffer<ArrayBuffer>, contentType: string, Response: typeof globalThis.Response): Promise<File> {
  if (!contentType.toLowerCase().startsWith('multipart/form-data')) {
    throw InvalidRequestError.at('file', 'send multipart/form-data with the file in a field named file')
  }
  const form = await new Response(body, { headers: { 'content-type': contentType } }).formData().catch(() => {
    throw InvalidRequestError.at('file', 'the multipart body does not parse')
  })
  const file = form.get('file')
  if (typeof file === 'string' || file === null) throw InvalidRequestError.at('file', 'the body has no file field named file')
  return file
}

/**
 * `POST /files`: a multipart upload of one `file` field, with a key that may write; answers 201
 * `{ fileId, sha256, mediaType, bytes }` once the file is durable. Its own size cap, apart from
 * the GraphQL body cap: a body past it is refused (413) as it crosses it, and nothing is kept.
 */
export function useFileUploads(files: FileService, keys: KeyRing, limiter: KeyLimiter): Plugin {
  const limit = files.limits.maxFileBytes
  return {
    async onRequest({ request, url, endResponse, fetchAPI }) {
      if (url.pathname !== '/files') return
      const fail = (error: PromptlineError) =>
        endResponse(
          fetchAPI.Response.json(
            { error: { code: error.code, message: error.message } },
            { status: STATUS[error.code] ?? 400, headers: retryAfter(error) },
          ),
        )
      if (request.method !== 'POST') return endResponse(new fetchAPI.Response(null, { status: 405, headers: { allow: 'POST' } }))
      try {
        const principal = await keys.authenticate(request.headers.get('authorization'))
        if (!principal) throw new UnauthenticatedError('a valid API key is required: send Authorization: Bearer <key>')
        await limiter.countRequests(principal, 1)
        if (Number(request.headers.get('content-length') ?? 0) > limit + FRAMING_BYTES) throw new FileTooLargeError(limit)
        const body = await readCapped(request.body, limit + FRAMING_BYTES)
        if (body === null) throw new FileTooLargeError(limit)
        const file = await formFile(body, request.headers.get('content-type') ?? '', fetchAPI.Response)
        if (file.size > limit) throw new FileTooLargeError(limit)
        const stored = await files.upload(principal, {
          mediaType: file.type,
          name: file.name || null,
          data: new Uint8Array(await file.arrayBuffer()),
        })
        endResponse(
          fetchAPI.Response.json(
            { fileId: stored.id, sha256: stored.sha256, mediaType: stored.mediaType, bytes: stored.bytes },
            { status: 201 },
          ),
        )
      } catch (error) {
        if (error instanceof PromptlineError) return fail(error)
        throw error
      }
    },
  }
}
