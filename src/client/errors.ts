import type { ErrorCode } from './generated/graphql.js'

/** Codes that say "try again later": the stream resumes after them, a mutation is retried. */
const TRANSIENT: ReadonlySet<string> = new Set<ErrorCode>(['INTERNAL', 'RATE_LIMITED', 'CAPACITY', 'SUBSCRIBER_TOO_SLOW'])

/**
 * What promptline answered instead of a result: a mutation's typed error (its `__typename`, such
 * as `QueueFullError`) or a top-level GraphQL error (its `extensions.code`).
 */
export class PromptlineError extends Error {
  override name = 'PromptlineError'
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** The union member a mutation answered with (e.g. `NotFoundError`); null for a top-level error. */
    readonly typename: string | null = null,
  ) {
    super(message)
  }

  get transient(): boolean {
    return TRANSIENT.has(this.code)
  }

  /** The first of a response's top-level errors. */
  static fromGraphQL(errors: readonly { message: string; extensions?: Record<string, unknown> }[]): PromptlineError {
    const [first] = errors
    return new PromptlineError(((first?.extensions?.code as ErrorCode) ?? 'INTERNAL') as ErrorCode, first?.message ?? 'unknown error')
  }
}

/** The server could not be reached, or the connection broke: always worth another try. */
export class ConnectionError extends Error {
  override name = 'ConnectionError'
  readonly transient = true
}

export const isTransient = (error: unknown): boolean =>
  error instanceof ConnectionError || (error instanceof PromptlineError && error.transient)
