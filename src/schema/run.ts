import { NotFoundError } from '../domain/errors.js'
import type { RunFilter } from '../domain/records.js'
import {
  type Alternative,
  type FailoverAttempt,
  type OutputValidation,
  RUN_STATUSES,
  type RunRecord,
  TERMINAL_REASONS,
  type Usage,
} from '../domain/records.js'
import { builder } from './builder.js'
import type { Context } from './context.js'
import { ErrorCodeEnum } from './errors.js'
import { encodeCursor, forwardPage, toConnection } from './paging.js'

export const RunStatusEnum = builder.enumType('RunStatus', { values: RUN_STATUSES })
const TerminalReasonEnum = builder.enumType('TerminalReason', {
  description: 'Why a run ended.',
  values: TERMINAL_REASONS,
})

export const UsageRef = builder.objectRef<Usage>('Usage').implement({
  description: 'Token counts as the vendor reported them (the fake backend counts words).',
  fields: (t) => ({
    inputTokens: t.exposeInt('inputTokens'),
    outputTokens: t.exposeInt('outputTokens'),
    totalTokens: t.int({ resolve: (u) => u.inputTokens + u.outputTokens }),
  }),
})

const FailoverOutcomeEnum = builder.enumType('FailoverOutcome', {
  values: {
    SUCCEEDED: { description: 'The candidate answered.' },
    FAILED: { description: 'The call failed; see errorCode.' },
    SKIPPED: { description: 'The candidate has no credentials; nothing was sent.' },
  },
})

const FailoverAttemptRef = builder.objectRef<FailoverAttempt>('FailoverAttempt').implement({
  description: 'One try of one candidate profile during a run.',
  fields: (t) => ({
    profileId: t.exposeID('profileId'),
    backendId: t.exposeID('backendId'),
    model: t.exposeString('model'),
    outcome: t.field({ type: FailoverOutcomeEnum, resolve: (a) => a.outcome }),
    errorCode: t.exposeString('errorCode', {
      nullable: true,
      description:
        'RATE_LIMITED, OVERLOADED, SERVER_ERROR, NETWORK, UNAUTHORIZED, NOT_FOUND, CONTEXT_LENGTH, BAD_REQUEST or NO_CREDENTIALS.',
    }),
    durationMs: t.exposeInt('durationMs'),
    attempt: t.exposeInt('attempt', { description: '1 for the first call to the candidate, 2 for its first retry, …; 0 when skipped.' }),
  }),
})

const ValidationRef = builder.objectRef<OutputValidation>('OutputValidation').implement({
  description: "How the output met the prompt's contract.",
  fields: (t) => ({
    valid: t.exposeBoolean('valid'),
    errors: t.exposeStringList('errors', { description: 'What was wrong with the last answer.' }),
    attempts: t.exposeInt('attempts', { description: 'Generations made: 1 + repairs.' }),
  }),
})

const AlternativeRef = builder.objectRef<Alternative>('RunAlternative').implement({
  description: 'An answer of a parallel prompt that was not selected.',
  fields: (t) => ({
    profileId: t.exposeID('profileId'),
    backendId: t.exposeID('backendId'),
    model: t.exposeString('model'),
    status: t.exposeString('status', { description: 'COMPLETED, FAILED, or ABORTED (stopped once another was selected).' }),
    output: t.exposeString('output'),
    valid: t.exposeBoolean('valid', { nullable: true }),
    errorCode: t.field({ type: ErrorCodeEnum, nullable: true, resolve: (a) => a.errorCode as never }),
    errorMessage: t.exposeString('errorMessage', { nullable: true }),
  }),
})

export const RunRef = builder.objectRef<RunRecord>('Run').implement({
  description: 'One execution of a queue entry: a durable record.',
  fields: (t) => ({
    id: t.exposeID('id'),
    sessionId: t.exposeID('sessionId', { nullable: true }),
    queueId: t.exposeID('queueId', { nullable: true }),
    status: t.field({ type: RunStatusEnum, resolve: (r) => r.status }),
    promptId: t.exposeID('promptId', { nullable: true, description: 'Null for a plain input message.' }),
    promptVersion: t.exposeInt('promptVersion', { nullable: true }),
    profileId: t.exposeID('profileId', { nullable: true, description: 'Null when the run failed before a profile was resolved.' }),
    backendId: t.exposeID('backendId', { nullable: true }),
    model: t.exposeString('model', { nullable: true }),
    definitionHash: t.exposeString('definitionHash', { nullable: true }),
    renderedHash: t.exposeString('renderedHash', { nullable: true }),
    settings: t.field({ type: 'JSON', description: 'Effective settings, secrets redacted.', resolve: (r) => r.settings }),
    output: t.exposeString('output', { nullable: true, description: 'The whole answer (partial for an aborted run); null while running.' }),
    parsedOutput: t.field({
      type: 'JSON',
      nullable: true,
      description: 'The output parsed, for JSON and JSON_SCHEMA prompts.',
      resolve: (r) => r.parsedOutput,
    }),
    validation: t.field({ type: ValidationRef, nullable: true, resolve: (r) => r.validation }),
    failoverAttempts: t.field({ type: [FailoverAttemptRef], resolve: (r) => r.failoverAttempts }),
    alternatives: t.field({
      type: [AlternativeRef],
      description: 'For a parallel prompt: the answers not selected.',
      resolve: (r) => r.alternatives,
    }),
    usage: t.field({ type: UsageRef, nullable: true, resolve: (r) => r.usage }),
    cost: t.float({
      nullable: true,
      description: "USD from the catalog's per-model prices; null when a model used has no price.",
      resolve: (r) => r.costUsd,
    }),
    startedAt: t.field({ type: 'DateTime', resolve: (r) => r.startedAt }),
    firstTokenAt: t.field({ type: 'DateTime', nullable: true, resolve: (r) => r.firstTokenAt }),
    finishedAt: t.field({ type: 'DateTime', nullable: true, resolve: (r) => r.finishedAt }),
    durationMs: t.int({
      nullable: true,
      description: 'From start to finish, once finished.',
      resolve: (r) => (r.finishedAt ? Date.parse(r.finishedAt) - Date.parse(r.startedAt) : null),
    }),
    heartbeatAt: t.field({ type: 'DateTime', nullable: true, resolve: (r) => r.heartbeatAt }),
    errorCode: t.field({ type: ErrorCodeEnum, nullable: true, resolve: (r) => r.errorCode as never }),
    errorMessage: t.exposeString('errorMessage', { nullable: true }),
    terminalReason: t.field({ type: TerminalReasonEnum, nullable: true, resolve: (r) => r.terminalReason }),
  }),
})

const runCursor = (r: RunRecord) => encodeCursor('run', r.startedAt, r.id)
export const RunConnection = builder.connectionObject({ type: RunRef, name: 'RunConnection' })

/** A page of runs, newest first, for `runs` and `Session.runs`. */
export async function resolveRunConnection(ctx: Context, filter: RunFilter, args: { first?: number | null; after?: string | null }) {
  const { first, after } = forwardPage(args, 'run', 2)
  const rows = await ctx.services.runs.runs(ctx.tenantId, filter, after && { startedAt: after[0]!, id: after[1]! }, first + 1)
  return toConnection(rows, first, after !== null, runCursor)
}

builder.queryFields((t) => ({
  run: t.field({
    type: RunRef,
    nullable: true,
    description: 'A run by id (live while it runs), or null.',
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, { id }, ctx) => ctx.services.runs.run(ctx.tenantId, String(id)),
  }),
  runs: t.field({
    type: RunConnection,
    description: 'Runs, newest first, optionally of one session and in one status. Forward paging only.',
    args: {
      sessionId: t.arg.id(),
      status: t.arg({ type: RunStatusEnum }),
      first: t.arg.int(),
      after: t.arg.string(),
    },
    resolve: (_root, args, ctx) =>
      resolveRunConnection(ctx, { sessionId: args.sessionId == null ? null : String(args.sessionId), status: args.status }, args),
  }),
}))

const AbortRunPayload = builder.objectRef<{ aborted: boolean; run: RunRecord }>('AbortRunPayload').implement({
  fields: (t) => ({
    aborted: t.exposeBoolean('aborted', { description: 'False when the run had already ended (the row is the receipt).' }),
    run: t.field({ type: RunRef, resolve: (p) => p.run }),
  }),
})

builder.mutationField('abortRun', (t) =>
  t.field({
    type: AbortRunPayload,
    description:
      'Stops a run; answers once its row is durably ABORTED with the partial output and usage so far. Its queue entry ends CANCELLED.',
    errors: { types: [NotFoundError] },
    args: { runId: t.arg.id({ required: true }), reason: t.arg.string({ description: 'Recorded as the error message.' }) },
    resolve: (_root, { runId, reason }, ctx) => ctx.services.runs.abortRun(ctx.tenantId, String(runId), reason ?? null),
  }),
)
