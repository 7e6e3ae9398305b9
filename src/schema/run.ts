import { recordedKeyId } from '../domain/access.js'
import { InvalidRequestError, NotFoundError, ToolResultRejectedError } from '../domain/errors.js'
import type { OutputValidation, RunFilter, RunOrigin, RunRecord, RunStatus, TerminalReason } from '../domain/records.js'
import { builder } from './builder.js'
import type { Context } from './context.js'
import { describedValues } from './described.js'
import { ErrorCodeEnum } from './errors.js'
import { FailoverAttemptRef } from './failover-attempt.js'
import { FinishReasonEnum } from './finish-reason.js'
import { encodeCursor, forwardPage, pageArgs, toConnection } from './paging.js'
import { OutputEnforcementEnum } from './prompt.js'
import { PromptIncludeRef } from './prompt-include.js'
import { ReasoningRef } from './reasoning.js'
import { AlternativeRef } from './run-alternative.js'
import { RunCacheRef } from './run-cache.js'
import { PendingToolCallRef, pendingToolCalls, SubmitToolResultsInput, ToolRoundRef } from './tool.js'
import { ApproveToolCallsInput } from './tool-server.js'
import { UsageRef } from './usage.js'

const RunOriginEnum = builder.enumType('RunOrigin', {
  description: 'Which surface admitted a run.',
  values: describedValues<RunOrigin>({
    GRAPHQL: 'The GraphQL API (enqueuePrompt, runPrompt, schedulePrompt, replayRun).',
    OPENAI_CHAT: "The OpenAI API's POST /v1/chat/completions.",
    OPENAI_RESPONSES: "The OpenAI API's POST /v1/responses.",
    MCP: "The MCP server's run_prompt tool (/mcp).",
    AG_UI: 'AG-UI (POST /ag-ui).',
    EXPERIMENT: 'An experiment, one run per dataset item and repetition (startExperiment).',
  }),
})

const RunStatusEnum = builder.enumType('RunStatus', {
  description:
    'Where a run is in its lifecycle: PREPARING → WAITING_CAPACITY → GENERATING (→ REQUIRES_ACTION → GENERATING …) → VALIDATING (→ REPAIRING → GENERATING …) → COMPLETED | FAILED | ABORTED.',
  values: describedValues<RunStatus>({
    PREPARING: 'Resolving the prompt, profile, settings and credentials.',
    WAITING_CAPACITY: "Waiting in line for the backend's capacity.",
    GENERATING: 'The model is streaming its answer.',
    REQUIRES_ACTION:
      'The model called tools: the run waits for their results (submitToolResults), holding its session but no backend capacity; see pendingToolCalls.',
    VALIDATING: "The answer is checked against the prompt's output contract.",
    REPAIRING: 'The answer was invalid; a repair generation is being prepared.',
    COMPLETED: 'Finished with an answer (see validation for whether it met the contract).',
    FAILED: 'Ended with an error; see errorCode and errorMessage.',
    ABORTED: 'Stopped from outside (abort, cancel, a newer prompt, shutdown); see terminalReason.',
  }),
})
const TerminalReasonEnum = builder.enumType('TerminalReason', {
  description: 'Why a run ended.',
  values: describedValues<TerminalReason>({
    COMPLETED: 'It finished its answer.',
    ERROR: 'It failed; errorCode says how.',
    ABORTED: 'abortRun stopped it.',
    CANCELLED: 'cancelPrompt (or deleting the session) stopped it.',
    SUPERSEDED: 'A newer prompt sent with whenBusy INTERRUPT or ROLLBACK stopped it.',
    SHUTDOWN: 'The server shut down while it ran.',
    INTERRUPTED: 'The server stopped (crashed or was killed) while it ran; events after the last one written are lost.',
    STALE: 'Its heartbeat stopped (its server died or hung) and a reaper ended it.',
    NO_PROGRESS: 'It went on heartbeating but made no progress (no token, steer or repair) for too long, so it was stopped.',
    TOOL_TIMEOUT: 'It waited longer than its toolTimeoutMs for tool results, and failed.',
  }),
})

const ValidationRef = builder.objectRef<OutputValidation>('OutputValidation').implement({
  description: "How the output met the prompt's contract.",
  fields: (t) => ({
    valid: t.exposeBoolean('valid', { description: 'True when the last answer met the contract.' }),
    errors: t.exposeStringList('errors', { description: 'What was wrong with the last answer.' }),
    attempts: t.exposeInt('attempts', { description: 'Generations made: 1 + repairs.' }),
  }),
})

export const RunRef = builder.objectRef<RunRecord>('Run').implement({
  description: 'One execution of a queue entry: a durable record.',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'The run id (a UUID).' }),
    sessionId: t.exposeID('sessionId', { nullable: true, description: 'The session it ran in; null only for runs outside any session.' }),
    queueId: t.exposeID('queueId', { nullable: true, description: 'The queue entry it executes; null only for runs outside any queue.' }),
    status: t.field({ type: RunStatusEnum, description: 'Where the run is now.', resolve: (r) => r.status }),
    promptId: t.exposeID('promptId', { nullable: true, description: 'Null for a plain input message.' }),
    promptVersion: t.exposeInt('promptVersion', {
      nullable: true,
      description: 'The prompt version admitted and run; null for a plain input or before resolution.',
    }),
    promptLabel: t.exposeString('promptLabel', {
      nullable: true,
      description:
        "The label that chose promptVersion at admission ('latest' included); null when a version was named, for a plain input, or before resolution.",
    }),
    splitBucket: t.exposeInt('splitBucket', {
      nullable: true,
      description: "When promptLabel was a split: the session's bucket (0-99) that picked the version; null otherwise.",
    }),
    keyId: t.exposeString('keyId', { nullable: true, description: 'The API key that admitted it (its id); null where keys are off.' }),
    origin: t.field({ type: RunOriginEnum, description: 'The surface that admitted it.', resolve: (r) => r.origin }),
    tags: t.exposeStringList('tags', { description: 'The tags its request carried.' }),
    replayOf: t.exposeID('replayOf', { nullable: true, description: 'The run whose stored request this one replays; null otherwise.' }),
    includes: t.field({
      type: [PromptIncludeRef],
      description:
        'The prompts its prompt included, each at the version admission fixed (the parent’s definitionHash covers only its own text).',
      resolve: (r) => r.includes,
    }),
  }),
})

// what it ran and what it answered
builder.objectFields(RunRef, (t) => ({
  profileId: t.exposeID('profileId', { nullable: true, description: 'Null when the run failed before a profile was resolved.' }),
  backendId: t.exposeID('backendId', {
    nullable: true,
    description: 'The backend that answered (after any failover); null before resolution.',
  }),
  model: t.exposeString('model', {
    nullable: true,
    description:
      'The model that answered (after any failover). Null until the profile is resolved, so also for a run that failed before (NOT_FOUND, CREDENTIALS, …).',
  }),
  definitionHash: t.exposeString('definitionHash', {
    nullable: true,
    description: 'sha256 of the canonical prompt definition; null for a plain input.',
  }),
  renderedHash: t.exposeString('renderedHash', {
    nullable: true,
    description: 'sha256 of the rendered messages sent; null until they were rendered.',
  }),
  settings: t.field({ type: 'JSON', description: 'Effective settings, secrets redacted.', resolve: (r) => r.settings }),
  output: t.exposeString('output', {
    nullable: true,
    description:
      "The whole answer: partial for an aborted or failed run, '' when no token came. Null while the run is live, and for a run ended by recovery (STALE, INTERRUPTED) before any of its tokens was written.",
  }),
  parsedOutput: t.field({
    type: 'JSON',
    nullable: true,
    description: 'The output parsed, for JSON and JSON_SCHEMA prompts.',
    resolve: (r) => r.parsedOutput,
  }),
  validation: t.field({
    type: ValidationRef,
    nullable: true,
    description: 'The output contract check; null unless COMPLETED.',
    resolve: (r) => r.validation,
  }),
  failoverAttempts: t.field({
    type: [FailoverAttemptRef],
    description: 'Every try of every candidate, in order.',
    resolve: (r) => r.failoverAttempts,
  }),
  alternatives: t.field({
    type: [AlternativeRef],
    description: 'For a parallel prompt: the answers not selected.',
    resolve: (r) => r.alternatives,
  }),
}))

// what it used and cost
builder.objectFields(RunRef, (t) => ({
  usage: t.field({
    type: UsageRef,
    nullable: true,
    description:
      'Token usage over all model calls (zero when none was made). Null while the run is live, and for a run ended by recovery (STALE, INTERRUPTED): its process died before the vendor reported usage.',
    resolve: (r) => r.usage,
  }),
  cost: t.float({
    nullable: true,
    description:
      'USD over every model call, cache reads and writes at their own rates (see priceTable); null while running, and when a model used has no price (never 0 for an unknown price).',
    resolve: (r) => r.costUsd,
  }),
  cache: t.field({
    type: RunCacheRef,
    nullable: true,
    description: 'What the exact response cache made of the run; null when it asked for none.',
    resolve: (r) => r.cache,
  }),
  outputEnforcement: t.field({
    type: OutputEnforcementEnum,
    nullable: true,
    description:
      "How the answering profile enforced the output contract: NATIVE (the vendor's JSON-schema mode, validated after) or VALIDATE; null for TEXT, and before a profile answered.",
    resolve: (r) => r.outputEnforcement,
  }),
  priceTable: t.exposeString('priceTable', {
    nullable: true,
    description:
      "Where the cost's prices came from: `genai-prices <version>` (the bundled table), `catalog` (a backend's own prices), or both; null without a cost.",
  }),
}))

// when it ran
builder.objectFields(RunRef, (t) => ({
  startedAt: t.field({ type: 'DateTime', description: 'When the run started.', resolve: (r) => r.startedAt }),
  firstTokenAt: t.field({
    type: 'DateTime',
    nullable: true,
    description: 'When the first token arrived; null before it.',
    resolve: (r) => r.firstTokenAt,
  }),
  finishedAt: t.field({
    type: 'DateTime',
    nullable: true,
    description: 'When the run ended; null while it runs.',
    resolve: (r) => r.finishedAt,
  }),
  durationMs: t.int({
    nullable: true,
    description: 'From start to finish, once finished.',
    resolve: (r) => (r.finishedAt ? Date.parse(r.finishedAt) - Date.parse(r.startedAt) : null),
  }),
  heartbeatAt: t.field({
    type: 'DateTime',
    nullable: true,
    description: 'The last sign of life of the process running it.',
    resolve: (r) => r.heartbeatAt,
  }),
}))

// how it ended, and its tool rounds
builder.objectFields(RunRef, (t) => ({
  errorCode: t.field({
    type: ErrorCodeEnum,
    nullable: true,
    description: 'Why it failed or was stopped; null when it completed.',
    resolve: (r) => r.errorCode as never,
  }),
  errorMessage: t.exposeString('errorMessage', { nullable: true, description: 'What went wrong, for people; null when it completed.' }),
  terminalReason: t.field({
    type: TerminalReasonEnum,
    nullable: true,
    description: 'Why it ended; null while it runs.',
    resolve: (r) => r.terminalReason,
  }),
  finishReason: t.field({
    type: FinishReasonEnum,
    nullable: true,
    description:
      "How the selected answer's last model call ended: STOP, LENGTH (cut off: with an output contract the answer counts as invalid), REFUSAL, …; null until it ended, and for a run that ended without an answer.",
    resolve: (r) => r.finishReason,
  }),
  vendorFinishReason: t.exposeString('vendorFinishReason', {
    nullable: true,
    description: "The vendor's own finish reason (OpenAI's finish_reason, Anthropic's stop_reason), as it sent it; null when it sent none.",
  }),
  reasoning: t.field({
    type: ReasoningRef,
    nullable: true,
    description: "The thinking of the selected answer's last model call, where the vendor sent it (not in the run.finished webhook).",
    resolve: (r) => r.reasoning,
  }),
  pendingToolCalls: t.field({
    type: [PendingToolCallRef],
    description: 'The calls the run waits for results of: empty unless it is REQUIRES_ACTION.',
    resolve: pendingToolCalls,
  }),
  toolRounds: t.field({
    type: [ToolRoundRef],
    description: 'Its rounds of tool calls, oldest first, with their results; the last one is pending while REQUIRES_ACTION.',
    resolve: (r) => r.toolRounds,
  }),
  refusal: t.exposeString('refusal', {
    nullable: true,
    description:
      "What the model said instead of answering, where the vendor sends it apart from the answer (OpenAI's refusal); such a run is COMPLETED with finishReason REFUSAL and no repair.",
  }),
}))

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
    args: { id: t.arg.id({ required: true, description: 'The run id.' }) },
    resolve: (_root, { id }, ctx) => ctx.services.runs.run(ctx.tenantId, String(id)),
  }),
  runs: t.field({
    type: RunConnection,
    description: 'Runs, newest first, filtered by what is given. Forward paging only.',
    args: {
      sessionId: t.arg.id({ description: "Only this session's runs." }),
      status: t.arg({ type: RunStatusEnum, description: 'Only runs in this status.' }),
      promptId: t.arg.id({ description: 'Only runs of this prompt.' }),
      promptVersion: t.arg.int({ description: 'Only runs of this prompt version.' }),
      promptLabel: t.arg.string({ description: 'Only runs whose version this label chose.' }),
      tag: t.arg.string({ description: 'Only runs carrying this tag.' }),
      ...pageArgs(t.arg),
    },
    resolve: (_root, args, ctx) =>
      resolveRunConnection(
        ctx,
        {
          sessionId: args.sessionId == null ? null : String(args.sessionId),
          status: args.status,
          promptId: args.promptId == null ? null : String(args.promptId),
          promptVersion: args.promptVersion,
          promptLabel: args.promptLabel,
          tag: args.tag,
        },
        args,
      ),
  }),
}))

const AbortRunPayload = builder.objectRef<{ aborted: boolean; run: RunRecord }>('AbortRunPayload').implement({
  description: 'The answer to abortRun.',
  fields: (t) => ({
    aborted: t.exposeBoolean('aborted', { description: 'False when the run had already ended (the row is the receipt).' }),
    run: t.field({ type: RunRef, description: 'The run as recorded: ABORTED, or as it had ended.', resolve: (p) => p.run }),
  }),
})

builder.mutationField('abortRun', (t) =>
  t.field({
    type: AbortRunPayload,
    description:
      'Stops a run; answers once its row is durably ABORTED with the partial output and usage so far. Its queue entry ends CANCELLED.',
    errors: { types: [NotFoundError] },
    args: {
      runId: t.arg.id({ required: true, description: 'The run to stop.' }),
      reason: t.arg.string({ description: 'Recorded as the error message.' }),
    },
    resolve: (_root, { runId, reason }, ctx) => ctx.services.runs.abortRun(ctx.tenantId, String(runId), reason ?? null),
  }),
)

const SubmitToolResultsPayload = builder.objectRef<{ run: RunRecord }>('SubmitToolResultsPayload').implement({
  description: 'The answer to submitToolResults.',
  fields: (t) => ({
    run: t.field({
      type: RunRef,
      description:
        'The run with the results taken. While calls are pending it stays REQUIRES_ACTION; once none is, it goes on generating (it may still read REQUIRES_ACTION, with no pending call, for a moment).',
      resolve: (p) => p.run,
    }),
  }),
})

const ApproveToolCallsPayload = builder.objectRef<{ run: RunRecord }>('ApproveToolCallsPayload').implement({
  description: 'The answer to approveToolCalls.',
  fields: (t) => ({
    run: t.field({
      type: RunRef,
      description: 'The run with the decisions taken: an approved call is made next, a declined one is answered to the model as declined.',
      resolve: (p) => p.run,
    }),
  }),
})

builder.mutationField('approveToolCalls', (t) =>
  t.field({
    type: ApproveToolCallsPayload,
    description:
      "Approves or declines calls of an MCP server's tools that a run waits to have approved (PendingToolCall.approvalRequired); answers once the decisions are durable, from any instance, also after a restart. An approved call is made once; a declined one is never made, and the model is told it was declined, with the reason.",
    errors: { types: [ToolResultRejectedError, InvalidRequestError, NotFoundError] },
    args: { input: t.arg({ type: ApproveToolCallsInput, required: true, description: 'The run and the decisions.' }) },
    resolve: async (_root, { input }, ctx) => ({
      run: await ctx.services.runs.approveToolCalls(ctx.tenantId, recordedKeyId(ctx), input),
    }),
  }),
)

builder.mutationField('submitToolResults', (t) =>
  t.field({
    type: SubmitToolResultsPayload,
    description:
      "Gives a run waiting for tool results some or all of them; answers once they are durable. When every call of the round has a result, the same run goes on with the model's next round, wherever its session is held, also after a restart.",
    errors: { types: [ToolResultRejectedError, InvalidRequestError, NotFoundError] },
    args: { input: t.arg({ type: SubmitToolResultsInput, required: true, description: 'The run and its results.' }) },
    resolve: async (_root, { input }, ctx) => ({ run: await ctx.services.runs.submitToolResults(ctx.tenantId, input) }),
  }),
)
