/**
 * Domain errors. Code below the GraphQL edge throws these; the schema layer turns them into
 * typed union members (mutations) or `extensions.code` (queries). Messages are written for the
 * client and never carry secrets or internal detail.
 */
export const ERROR_CODES = [
  'INVALID_REQUEST',
  'NOT_FOUND',
  'PROFILE_REQUIRED',
  'CREDENTIALS',
  'PROMPT_LOAD',
  'PROFILE_LOAD',
  'RENDER',
  'CAPACITY',
  'QUEUE_FULL',
  'SESSION_BUSY',
  'BUDGET_EXCEEDED',
  'STEER_REJECTED',
  'GENERATION',
  'STREAM_TIMEOUT',
  'TOOL_TIMEOUT',
  'FILE_TOO_LARGE',
  'TOOL_RESULT_REJECTED',
  'LABEL_CONFLICT',
  'VALIDATION',
  'CANCELLED',
  'QUERY_TOO_COMPLEX',
  'RATE_LIMITED',
  'SUBSCRIBER_TOO_SLOW',
  'UNAUTHENTICATED',
  'FORBIDDEN',
  'UNAVAILABLE',
  'STORAGE_FULL',
  'INTERNAL',
] as const
export type ErrorCode = (typeof ERROR_CODES)[number]

export abstract class PromptlineError extends Error {
  abstract readonly code: ErrorCode
  override get name(): string {
    return this.constructor.name
  }
}

/** The request itself is malformed: bad id, bad JSON, out-of-range setting. `field` is the first bad path. */
export class InvalidRequestError extends PromptlineError {
  readonly code = 'INVALID_REQUEST'
  constructor(
    message: string,
    readonly field: string | null = null,
  ) {
    super(message)
  }
  static at(field: string, problem: string): InvalidRequestError {
    return new InvalidRequestError(`${field}: ${problem}`, field)
  }
}

export class NotFoundError extends PromptlineError {
  readonly code = 'NOT_FOUND'
  constructor(
    readonly kind: string,
    readonly id: string,
    message = `${kind} '${id}' not found`,
  ) {
    super(message)
  }
}

export class ProfileRequiredError extends PromptlineError {
  readonly code = 'PROFILE_REQUIRED'
}

export class CredentialsError extends PromptlineError {
  readonly code = 'CREDENTIALS'
}

export class PromptLoadError extends PromptlineError {
  readonly code = 'PROMPT_LOAD'
}

export class ProfileLoadError extends PromptlineError {
  readonly code = 'PROFILE_LOAD'
}

export class RenderError extends PromptlineError {
  readonly code = 'RENDER'
}

export class CapacityError extends PromptlineError {
  readonly code = 'CAPACITY'
  constructor(
    message: string,
    readonly backendId: string,
  ) {
    super(message)
  }
}

export class QueueFullError extends PromptlineError {
  readonly code = 'QUEUE_FULL'
  constructor(
    message: string,
    readonly limit: string,
  ) {
    super(message)
  }
}

export class SessionBusyError extends PromptlineError {
  readonly code = 'SESSION_BUSY'
}

export type SteerRejectionReason = 'DUPLICATE' | 'NOT_RUNNING'

export class SteerRejectedError extends PromptlineError {
  readonly code = 'STEER_REJECTED'
  constructor(
    message: string,
    readonly reason: SteerRejectionReason,
  ) {
    super(message)
  }
}

export class GenerationError extends PromptlineError {
  readonly code = 'GENERATION'
}

/** A model stream sent no first token, or fell silent, for longer than its profile allows. */
export class StreamTimeoutError extends PromptlineError {
  readonly code = 'STREAM_TIMEOUT'
}

/** An upload larger than the file cap; nothing was kept. */
export class FileTooLargeError extends PromptlineError {
  readonly code = 'FILE_TOO_LARGE'
  constructor(readonly maxBytes: number) {
    super(`the file is larger than ${maxBytes} bytes (PROMPTLINE_MAX_FILE_BYTES); nothing was kept`)
  }
}

/** A run waited longer than its tool timeout for a round's results. */
export class ToolTimeoutError extends PromptlineError {
  readonly code = 'TOOL_TIMEOUT'
}

export type ToolResultRejection = 'NOT_WAITING' | 'UNKNOWN_CALL' | 'ALREADY_ANSWERED' | 'INVALID' | 'SERVER_CALL' | 'NO_APPROVAL_NEEDED'

/** Tool results that cannot be taken; nothing of the submission was kept. */
export class ToolResultRejectedError extends PromptlineError {
  readonly code = 'TOOL_RESULT_REJECTED'
  constructor(
    message: string,
    readonly reason: ToolResultRejection,
  ) {
    super(message)
  }
}

/** A label named another version than the mover expected; it was not moved. */
export class LabelConflictError extends PromptlineError {
  readonly code = 'LABEL_CONFLICT'
  constructor(
    message: string,
    /** The version the label names now; null when it does not exist. */
    readonly currentVersion: number | null,
  ) {
    super(message)
  }
}

/** Output could not be validated at all (not: the output was invalid, which is a result). */
export class OutputValidationError extends PromptlineError {
  readonly code = 'VALIDATION'
}

/** Something the operation needs (the database, or another instance over the deployment's link) cannot be reached now; nothing was done. */
export class UnavailableError extends PromptlineError {
  readonly code = 'UNAVAILABLE'
  constructor(
    message: string,
    /** When asking again may succeed. */
    readonly retryAfterMs: number,
  ) {
    super(message)
  }
}

/** The disk the database (or PROMPTLINE_FILES_DIR) is on has no room: nothing was written. */
export class StorageFullError extends PromptlineError {
  readonly code = 'STORAGE_FULL'
}

export class InternalError extends PromptlineError {
  readonly code = 'INTERNAL'
}

/** No API key, or one the server does not know. */
export class UnauthenticatedError extends PromptlineError {
  readonly code = 'UNAUTHENTICATED'
}

/** The API key's role does not allow the operation. */
export class ForbiddenError extends PromptlineError {
  readonly code = 'FORBIDDEN'
}

/** A budget (the tenant's, or the API key's) has no room for the prompt in its current window; nothing was admitted. */
export class BudgetExceededError extends PromptlineError {
  readonly code = 'BUDGET_EXCEEDED'
  constructor(
    message: string,
    /** Which budget: the tenant's `runs`, `tokens` or `cost`, or the key's `keyCost`. */
    readonly budget: string,
    /** When its window ends (ISO); null for a budget that never resets. */
    readonly resetsAt: string | null,
    /** What is left of it in the window, in its unit (USD for cost); null where not counted. */
    readonly remaining: number | null = null,
  ) {
    super(message)
  }
}

/** The limits a key may be refused by, besides its budget. */
export type RateLimit = 'requestsPerMinute' | 'mutationsPerSecond' | 'tokensPerMinute' | 'subscriptions'

/** A key passed one of its limits; it may try again after `retryAfterMs`. Nothing was done. */
export class RateLimitedError extends PromptlineError {
  readonly code = 'RATE_LIMITED'
  constructor(
    message: string,
    readonly limit: RateLimit,
    readonly retryAfterMs: number,
  ) {
    super(message)
  }
}

/** A subscriber fell so far behind its stream that it was cut off; it subscribes again after `lastSequence`. */
export class SubscriberTooSlowError extends PromptlineError {
  readonly code = 'SUBSCRIBER_TOO_SLOW'
  constructor(readonly lastSequence: number) {
    super(`the subscriber fell too far behind; subscribe again with afterSequence: ${lastSequence}`)
  }
}
