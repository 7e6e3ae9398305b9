import { GraphQLError } from 'graphql'
import {
  BudgetExceededError,
  CapacityError,
  CredentialsError,
  type ErrorCode,
  InvalidRequestError,
  LabelConflictError,
  NotFoundError,
  ProfileLoadError,
  ProfileRequiredError,
  PromptLoadError,
  PromptlineError,
  QueueFullError,
  type RateLimit,
  RateLimitedError,
  RenderError,
  SessionBusyError,
  SteerRejectedError,
  SubscriberTooSlowError,
  ToolResultRejectedError,
  UnavailableError,
} from '../domain/errors.js'
import { builder } from './builder.js'
import { describedValues } from './described.js'

export const ErrorCodeEnum = builder.enumType('ErrorCode', {
  description: 'Why an operation failed. Also in `extensions.code` of top-level errors.',
  values: describedValues<ErrorCode>({
    INVALID_REQUEST: 'The input was malformed or out of range (the message names the field); nothing changed.',
    NOT_FOUND: 'A referenced object does not exist for this tenant.',
    PROFILE_REQUIRED: 'No profile was given and the prompt and session have no default one.',
    CREDENTIALS: 'No candidate profile has an API key; the message names the variables to set.',
    PROMPT_LOAD: 'A stored prompt could not be loaded (e.g. its output schema does not compile).',
    PROFILE_LOAD: 'A profile, a failover candidate or its backend could not be loaded.',
    RENDER: 'A template could not be rendered, e.g. a variable is missing.',
    CAPACITY: "The backend's capacity and its waiting line are full.",
    QUEUE_FULL: 'An admission limit was reached; nothing was queued.',
    SESSION_BUSY: 'The session is busy and whenBusy was REJECT.',
    BUDGET_EXCEEDED:
      'A budget (the tenant’s runs, tokens or cost, or the API key’s cost) has no room for the prompt in its window; nothing was queued.',
    RATE_LIMITED:
      'The key passed one of its limits (extensions.limit: requests or mutations, tokens, subscriptions); extensions.retryAfterMs says within how long it may try again.',
    SUBSCRIBER_TOO_SLOW:
      'A subscription fell too far behind its stream and was ended; subscribe again with afterSequence set to extensions.lastSequence.',
    QUERY_TOO_COMPLEX:
      'The document is too deep, too long, too costly, or has too many aliases or directives; the message names the limit.',
    STEER_REJECTED: 'The steer was a duplicate or the entry was not running.',
    GENERATION: 'The model call failed (after retries and failover) or its stream was cut.',
    STREAM_TIMEOUT:
      "The model stream sent no token within firstTokenTimeoutMs, or fell silent for streamIdleTimeoutMs (with the profile's onStreamFailure RESTART, the next candidate starts again instead).",
    TOOL_TIMEOUT: 'The run waited longer than its toolTimeoutMs for tool results.',
    FILE_TOO_LARGE: 'An upload to POST /files was larger than PROMPTLINE_MAX_FILE_BYTES; nothing was kept (HTTP 413).',
    TOOL_RESULT_REJECTED: 'Tool results could not be taken; see ToolResultRejectedError.reason. Nothing was kept.',
    LABEL_CONFLICT: 'The label names another version than expectedVersion said; it was not moved (read it again, then retry).',
    VALIDATION: 'The output contract could not be checked at all.',
    CANCELLED: 'Cancelled or aborted before it finished.',
    UNAUTHENTICATED: 'No valid API key was given.',
    FORBIDDEN: "The API key's role does not allow this.",
    UNAVAILABLE:
      'Something the operation needs cannot be reached now (the database, or the instance holding the session while the link between instances is down); nothing was done. extensions.retryAfterMs says when to try again.',
    STORAGE_FULL:
      'The disk the server writes to is full; nothing was written. Reads still work; writes succeed again once the operator frees space (HTTP 507 on POST /files).',
    INTERNAL: 'Something unexpected went wrong on the server; no detail is given.',
  }),
})

const ErrorInterface = builder.interfaceRef<PromptlineError>('Error').implement({
  description: 'An expected failure, returned as a member of a mutation result union.',
  fields: (t) => ({
    code: t.field({ type: ErrorCodeEnum, description: 'The error category.', resolve: (e) => e.code }),
    message: t.exposeString('message', { description: 'What went wrong, for a person to read.' }),
  }),
})

builder.objectType(InvalidRequestError, {
  name: 'InvalidRequestError',
  description: 'The input was malformed or out of range; nothing was changed.',
  interfaces: [ErrorInterface],
  fields: (t) => ({
    field: t.exposeString('field', { nullable: true, description: 'The path of the first offending input field.' }),
  }),
})

builder.objectType(NotFoundError, {
  name: 'NotFoundError',
  description: 'A referenced object does not exist (for this tenant).',
  interfaces: [ErrorInterface],
  fields: (t) => ({
    kind: t.exposeString('kind', { description: 'What was looked for: prompt, profile, backend, session, …' }),
    missingId: t.exposeString('id', {
      description: 'The id that was not found (not named id, so client caches do not take the error for an object).',
    }),
  }),
})

builder.objectType(QueueFullError, {
  name: 'QueueFullError',
  description: 'An admission limit was reached; nothing was queued.',
  interfaces: [ErrorInterface],
  fields: (t) => ({ limit: t.exposeString('limit', { description: 'The limit that was reached, e.g. maxOutstandingPerSession.' }) }),
})

builder.objectType(CapacityError, {
  name: 'CapacityError',
  description: 'The backend accepts no more runs and its waiting line is full.',
  interfaces: [ErrorInterface],
  fields: (t) => ({ backendId: t.exposeID('backendId', { description: 'The backend that is full.' }) }),
})

builder.objectType(BudgetExceededError, {
  name: 'BudgetExceededError',
  description: 'A budget (the tenant’s, or the API key’s) has no room for the prompt in its current window; nothing was queued.',
  interfaces: [ErrorInterface],
  fields: (t) => ({
    budget: t.exposeString('budget', { description: 'Which budget: the tenant’s runs, tokens or cost, or keyCost (the API key’s).' }),
    remaining: t.exposeFloat('remaining', {
      nullable: true,
      description: 'What is left of it in the window, in its unit (USD for cost and keyCost).',
    }),
    resetsAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'When its window ends and admissions may go on; null for a budget that never resets.',
      resolve: (e) => e.resetsAt,
    }),
  }),
})

const RateLimitEnum = builder.enumType('RateLimit', {
  description: 'Which limit refused.',
  values: {
    REQUESTS_PER_MINUTE: { value: 'requestsPerMinute' as RateLimit, description: 'The key’s own requests per minute.' },
    MUTATIONS_PER_SECOND: {
      value: 'mutationsPerSecond' as RateLimit,
      description: 'The server’s mutations per second, for keys without limits of their own.',
    },
    TOKENS_PER_MINUTE: { value: 'tokensPerMinute' as RateLimit, description: 'The key’s tokens per minute, spent by its ended runs.' },
    SUBSCRIPTIONS: { value: 'subscriptions' as RateLimit, description: 'Subscriptions a key may hold open at once.' },
  },
})

builder.objectType(RateLimitedError, {
  name: 'RateLimitedError',
  description: 'The key passed one of its limits; nothing was done.',
  interfaces: [ErrorInterface],
  fields: (t) => ({
    limit: t.field({ type: RateLimitEnum, description: 'Which limit.', resolve: (e) => e.limit }),
    retryAfterMs: t.exposeInt('retryAfterMs', { description: 'When the key may try again, in milliseconds from now.' }),
  }),
})

builder.objectType(SessionBusyError, {
  name: 'SessionBusyError',
  description: 'The session has a prompt running or queued and whenBusy was REJECT; nothing was queued.',
  interfaces: [ErrorInterface],
})

const SteerRejectionReasonEnum = builder.enumType('SteerRejectionReason', {
  description: 'Why a steer was not accepted.',
  values: {
    DUPLICATE: { description: 'This steerId was already accepted for the run.' },
    NOT_RUNNING: { description: 'The entry is not running (queued, finished, or finishing).' },
  },
})

builder.objectType(SteerRejectedError, {
  name: 'SteerRejectedError',
  description: 'The steer was not accepted.',
  interfaces: [ErrorInterface],
  fields: (t) => ({ reason: t.field({ type: SteerRejectionReasonEnum, description: 'Why it was refused.', resolve: (e) => e.reason }) }),
})

const ToolResultRejectionEnum = builder.enumType('ToolResultRejection', {
  description: 'Why tool results or approvals were not taken.',
  values: {
    NOT_WAITING: { description: 'The run is not waiting for tool results (it has moved on, or ended).' },
    UNKNOWN_CALL: { description: 'A result names a call the run does not wait for.' },
    ALREADY_ANSWERED: { description: 'A call already has its result (from a submission with another key).' },
    INVALID: { description: 'The submission itself is wrong: no results, or two for one call.' },
    SERVER_CALL: { description: "A result names a call promptline makes itself (an MCP server's tool); approve or decline it instead." },
    NO_APPROVAL_NEEDED: { description: 'A decision names a call that waits for no approval.' },
  },
})

builder.objectType(ToolResultRejectedError, {
  name: 'ToolResultRejectedError',
  description: 'The tool results were not taken; nothing of the submission was kept.',
  interfaces: [ErrorInterface],
  fields: (t) => ({ reason: t.field({ type: ToolResultRejectionEnum, description: 'Why they were refused.', resolve: (e) => e.reason }) }),
})

builder.objectType(LabelConflictError, {
  name: 'LabelConflictError',
  description: 'Someone moved the label since you read it; nothing changed.',
  interfaces: [ErrorInterface],
  fields: (t) => ({
    currentVersion: t.exposeInt('currentVersion', {
      nullable: true,
      description: 'The version the label names now (a split: its first); null when the label does not exist.',
    }),
  }),
})

/** Errors of the resolution phase, returned at admission so a bad prompt is refused at once. */
export const PREPARATION_ERRORS = [ProfileRequiredError, CredentialsError, RenderError, PromptLoadError, ProfileLoadError]
for (const [ErrorClass, description] of [
  [ProfileRequiredError, 'No profile was given and the prompt (or session) has no default one.'],
  [CredentialsError, 'The profile has no credentials; the message names the variable to set.'],
  [RenderError, 'A template could not be rendered, e.g. a variable is missing.'],
  [PromptLoadError, 'A stored prompt definition could not be loaded.'],
  [ProfileLoadError, 'A profile or its backend could not be loaded.'],
] as const) {
  builder.objectType(ErrorClass, { name: ErrorClass.name, description, interfaces: [ErrorInterface] })
}

/** An error raised outside the schema's resolvers (a limit refused the operation, a revoked key ended a subscription), for `maskError`. */
export const operationError = (error: PromptlineError) => new GraphQLError(error.message, { originalError: error })

/**
 * Yoga's `maskError`: a domain error keeps its message and gets its code in
 * `extensions.code`; anything unexpected is masked as INTERNAL with no detail.
 */
export function maskError(error: unknown): GraphQLError {
  const graphqlError = error instanceof GraphQLError ? error : null
  const original = graphqlError?.originalError ?? error
  if (original instanceof PromptlineError) {
    // yoga answers 401 for a missing or unknown key (and drops `http` from the body)
    return masked(graphqlError, original.message, {
      code: original.code satisfies ErrorCode,
      ...(original.code === 'UNAUTHENTICATED' && { http: { status: 401 } }),
      ...(original instanceof SubscriberTooSlowError && { lastSequence: original.lastSequence }),
      ...(original instanceof UnavailableError && { retryAfterMs: original.retryAfterMs }),
      ...(original instanceof RateLimitedError && { retryAfterMs: original.retryAfterMs, limit: original.limit }),
    })
  }
  // errors raised by GraphQL itself (syntax, variable coercion) are the client's to read
  if (graphqlError && (!graphqlError.originalError || graphqlError.originalError instanceof GraphQLError)) {
    // a limit that refused the document (or yoga's, its body) keeps a code of its own
    const limited = graphqlError.extensions.code === 'QUERY_TOO_COMPLEX' || graphqlError.extensions.code === 'REQUEST_ENTITY_TOO_LARGE'
    return masked(graphqlError, graphqlError.message, {
      ...graphqlError.extensions,
      code: limited ? 'QUERY_TOO_COMPLEX' : ('INVALID_REQUEST' satisfies ErrorCode),
    })
  }
  return masked(graphqlError, 'Unexpected error.', { code: 'INTERNAL' satisfies ErrorCode })
}

/** The error the client gets: `message` and `extensions`, at the place in the document `error` was raised. */
function masked(error: GraphQLError | null, message: string, extensions: Record<string, unknown>): GraphQLError {
  return new GraphQLError(message, {
    nodes: error?.nodes,
    source: error?.source,
    positions: error?.positions,
    path: error?.path,
    extensions,
  })
}
