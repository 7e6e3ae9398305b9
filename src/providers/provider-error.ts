import { redactSecret } from '../domain/credentials.js'
/**
 * How a failed model call should be handled: retried on the same candidate (rate limits,
 * overload, 5xx, network), given up for the next candidate (auth, permission, unknown model),
 * or fatal for the whole run (a request no candidate can serve, e.g. too long a context).
 */
export type FailureKind = 'RETRYABLE' | 'NEXT_CANDIDATE' | 'FATAL'

/** A vendor call failed. The message is ours or redacted: it never carries a key. */
export class ProviderError extends Error {
  override name = 'ProviderError'
  constructor(
    message: string,
    readonly kind: FailureKind,
    readonly status: number | null,
    /** What the vendor asked us to wait before retrying, if it said. */
    readonly retryAfterMs: number | null,
    /** Short machine-readable reason: RATE_LIMITED, OVERLOADED, SERVER_ERROR, NETWORK, UNAUTHORIZED, … */
    readonly reason: string,
  ) {
    super(message)
  }
}

const KEYISH = /\b(sk|pk|key|token|bearer)[-_ ]?[A-Za-z0-9*_\-.]{6,}/gi

/** Vendor messages can quote (masked) keys back; keep them short and scrubbed of the key used and key-like words. */
function scrub(message: string, secret: string | undefined): string {
  return redactSecret(message, secret).replace(KEYISH, '***').replace(/\s+/g, ' ').slice(0, 300)
}

function retryAfterMs(headers: unknown): number | null {
  const get = (name: string) => (headers && typeof (headers as Headers).get === 'function' ? (headers as Headers).get(name) : null)
  const ms = get('retry-after-ms')
  if (ms && Number.isFinite(Number(ms))) return Math.max(0, Number(ms))
  const value = get('retry-after')
  if (!value) return null
  if (Number.isFinite(Number(value))) return Math.max(0, Number(value) * 1000)
  const date = Date.parse(value)
  return Number.isNaN(date) ? null : Math.max(0, date - Date.now())
}

const CONTEXT_LENGTH = /context[_ ]length|too long|maximum context|prompt is too long|too many tokens|exceeds the maximum number of tokens/i

/**
 * Maps an error thrown by the official openai or @anthropic-ai/sdk client (both have `status`,
 * `headers` and connection-error classes) to a ProviderError.
 */
export function classifyVendorError(error: unknown, vendor: string, secret: string | undefined): ProviderError {
  if (error instanceof ProviderError) return error
  const e = error as {
    status?: unknown
    headers?: unknown
    message?: unknown
    code?: unknown
    name?: unknown
    constructor?: { name?: string }
  }
  const status = typeof e?.status === 'number' ? e.status : null
  const text = typeof e?.message === 'string' ? scrub(e.message, secret) : ''
  const code = typeof e?.code === 'string' ? e.code : ''
  if (status === null) {
    return new ProviderError(
      `${vendor} could not be reached or the stream broke: ${text || 'connection error'}`,
      'RETRYABLE',
      null,
      null,
      'NETWORK',
    )
  }
  const wait = retryAfterMs(e.headers)
  if (status === 429) return new ProviderError(`${vendor} rate-limited the request (429)`, 'RETRYABLE', status, wait, 'RATE_LIMITED')
  if (status === 529 || status === 503)
    return new ProviderError(`${vendor} is overloaded (${status})`, 'RETRYABLE', status, wait, 'OVERLOADED')
  if (status >= 500 || status === 408 || status === 409)
    return new ProviderError(`${vendor} failed with ${status}`, 'RETRYABLE', status, wait, 'SERVER_ERROR')
  if (status === 401 || status === 403)
    return new ProviderError(`${vendor} refused the credentials (${status})`, 'NEXT_CANDIDATE', status, null, 'UNAUTHORIZED')
  if (status === 404)
    return new ProviderError(`${vendor} does not know the model or endpoint (404)`, 'NEXT_CANDIDATE', status, null, 'NOT_FOUND')
  if (status === 402)
    return new ProviderError(`${vendor} refused the request: payment required (402)`, 'NEXT_CANDIDATE', status, null, 'PAYMENT')
  if (CONTEXT_LENGTH.test(code) || CONTEXT_LENGTH.test(text)) {
    return new ProviderError(
      `${vendor}: the context is too long for the model (${status}): ${text}`,
      'FATAL',
      status,
      null,
      'CONTEXT_LENGTH',
    )
  }
  return new ProviderError(`${vendor} rejected the request (${status}): ${text}`, 'FATAL', status, null, 'BAD_REQUEST')
}

// what each vendor's error type (Anthropic's `error.type`, OpenAI's `error.type` or `code`) means
const STREAM_ERROR_TYPES: Record<string, { kind: FailureKind; reason: string }> = {
  overloaded_error: { kind: 'RETRYABLE', reason: 'OVERLOADED' },
  api_error: { kind: 'RETRYABLE', reason: 'SERVER_ERROR' },
  server_error: { kind: 'RETRYABLE', reason: 'SERVER_ERROR' },
  rate_limit_error: { kind: 'RETRYABLE', reason: 'RATE_LIMITED' },
  rate_limit_exceeded: { kind: 'RETRYABLE', reason: 'RATE_LIMITED' },
  authentication_error: { kind: 'NEXT_CANDIDATE', reason: 'UNAUTHORIZED' },
  permission_error: { kind: 'NEXT_CANDIDATE', reason: 'UNAUTHORIZED' },
  not_found_error: { kind: 'NEXT_CANDIDATE', reason: 'NOT_FOUND' },
  invalid_request_error: { kind: 'FATAL', reason: 'BAD_REQUEST' },
  // Google's RPC status names (Gemini's `error.status`)
  RESOURCE_EXHAUSTED: { kind: 'RETRYABLE', reason: 'RATE_LIMITED' },
  UNAVAILABLE: { kind: 'RETRYABLE', reason: 'OVERLOADED' },
  INTERNAL: { kind: 'RETRYABLE', reason: 'SERVER_ERROR' },
  DEADLINE_EXCEEDED: { kind: 'RETRYABLE', reason: 'SERVER_ERROR' },
  UNAUTHENTICATED: { kind: 'NEXT_CANDIDATE', reason: 'UNAUTHORIZED' },
  PERMISSION_DENIED: { kind: 'NEXT_CANDIDATE', reason: 'UNAUTHORIZED' },
  NOT_FOUND: { kind: 'NEXT_CANDIDATE', reason: 'NOT_FOUND' },
  INVALID_ARGUMENT: { kind: 'FATAL', reason: 'BAD_REQUEST' },
}

/**
 * An error the vendor sent inside a stream that had begun (HTTP 200): classified by the type it
 * names, as its HTTP twin would be; a type we do not know is the vendor's own failure, retried.
 */
export function vendorStreamError(vendor: string, type: string | null, message: string, secret: string | undefined): ProviderError {
  const text = scrub(message, secret)
  const known = STREAM_ERROR_TYPES[type ?? ''] ?? { kind: 'RETRYABLE', reason: 'SERVER_ERROR' }
  const { kind, reason } =
    known.reason === 'BAD_REQUEST' && CONTEXT_LENGTH.test(text) ? { kind: 'FATAL' as const, reason: 'CONTEXT_LENGTH' } : known
  return new ProviderError(`${vendor} reported ${type ?? 'an error'} in the stream: ${text || 'no message'}`, kind, null, null, reason)
}
