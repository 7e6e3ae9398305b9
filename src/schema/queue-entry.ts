import {
  BudgetExceededError,
  NotFoundError,
  QueueFullError,
  RateLimitedError,
  SessionBusyError,
  SteerRejectedError,
} from '../domain/errors.js'
import type { EntryStatus, QueueEntryRecord, RunRecord, WhenBusy } from '../domain/records.js'
import { type BuilderTypes, builder } from './builder.js'
import { describedValues } from './described.js'
import { ErrorCodeEnum, PREPARATION_ERRORS } from './errors.js'
import { perRequestLoader } from './loaders.js'
import { RunRef } from './run.js'
import { runRequestFields } from './settings.js'

const EntryStatusEnum = builder.enumType('QueueEntryStatus', {
  description:
    'Where a queue entry is: QUEUED → STARTING → RUNNING → COMPLETED | FAILED | CANCELLED, or SCHEDULED → QUEUED → … for a debounced one.',
  values: describedValues<EntryStatus>({
    QUEUED: 'In line; it starts when the entries before it are done.',
    SCHEDULED: 'Waiting for its debounce to fire; then it is QUEUED.',
    STARTING: 'Its run is being prepared or waits for capacity.',
    RUNNING: 'Its run is generating; steers are accepted.',
    COMPLETED: 'Its run completed.',
    FAILED: 'Its run failed, or it could not run; see error.',
    CANCELLED: 'Cancelled before or while it ran (cancelPrompt, abortRun, a newer prompt, deleting the session).',
  }),
})

const WhenBusyEnum = builder.enumType('WhenBusy', {
  description: 'What to do with a prompt that arrives while the session has one running or queued.',
  values: {
    ENQUEUE: { value: 'ENQUEUE' as WhenBusy, description: 'Queue it behind the others (default).' },
    REJECT: { value: 'REJECT' as WhenBusy, description: 'Refuse it with SessionBusyError; nothing is queued.' },
    INTERRUPT: {
      value: 'INTERRUPT' as WhenBusy,
      description: 'Abort the running entry (its partial answer stays in the history, marked interrupted) and run this one next.',
    },
    ROLLBACK: { value: 'ROLLBACK' as WhenBusy, description: 'Abort the running entry, keep none of its messages, and run this one next.' },
  },
})

/** The runs of the entries a request shows, loaded together: one query for those not running here. */
const entryRuns = perRequestLoader<string, RunRecord | null>((ids, ctx) => ctx.services.runs.runsById(ctx.tenantId, ids))

const EntryErrorRef = builder.objectRef<{ code: string; message: string }>('QueueEntryError').implement({
  description: 'Why an entry failed or was cancelled.',
  fields: (t) => ({
    code: t.field({ type: ErrorCodeEnum, description: 'The error code of the run, or CANCELLED.', resolve: (e) => e.code as never }),
    message: t.exposeString('message', { description: 'What happened, for people.' }),
  }),
})

type EntryShape = QueueEntryRecord & { position?: number | null }

export const QueueEntryRef = builder.objectRef<EntryShape>('QueueEntry').implement({
  description: "One admitted prompt of a session's queue.",
  fields: (t) => ({
    id: t.exposeID('queueId', { description: 'The entry id (a UUID), the same as queueId: the key client caches normalize it by.' }),
    queueId: t.exposeID('queueId', { description: 'The entry id (a UUID).' }),
    queueSequence: t.exposeInt('queueSequence', { description: 'Admission order within the session.' }),
    sessionId: t.exposeID('sessionId', { description: 'The session whose queue holds it.' }),
    status: t.field({ type: EntryStatusEnum, description: 'Where the entry is now.', resolve: (e) => e.status }),
    position: t.int({
      nullable: true,
      description: 'For an entry in line: 0 = running, 1 = next, … Null when scheduled or finished.',
      resolve: (e) => e.position ?? null,
    }),
    promptId: t.id({ nullable: true, description: 'The prompt requested; null for a plain input.', resolve: (e) => e.request.promptId }),
    promptVersion: t.int({
      nullable: true,
      description:
        'The prompt version admission resolved and the entry will run, whatever its labels do meanwhile; null for a plain input.',
      resolve: (e) => e.request.admission?.promptVersion ?? null,
    }),
    promptLabel: t.string({
      nullable: true,
      description: "The label that chose that version ('latest' included); null when a version was named or for a plain input.",
      resolve: (e) => e.request.admission?.promptLabel ?? null,
    }),
    input: t.string({ nullable: true, description: 'The plain input text, if any.', resolve: (e) => e.request.input }),
    profileId: t.id({ nullable: true, description: 'The profile the request named, if any.', resolve: (e) => e.request.profileId }),
    queuedAt: t.field({ type: 'DateTime', description: 'When it was admitted.', resolve: (e) => e.queuedAt }),
    startedAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'When its run started; null before.',
      resolve: (e) => e.startedAt,
    }),
    finishedAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'When it became terminal; null before.',
      resolve: (e) => e.finishedAt,
    }),
    idempotencyKey: t.exposeString('idempotencyKey', {
      nullable: true,
      description: 'The key it was admitted with; null when none was given.',
    }),
    webhookUrl: t.string({
      nullable: true,
      description: "Where its run's end is posted: its own or its session's webhookUrl at admission; null: nowhere.",
      resolve: (e) => e.request.webhookUrl ?? null,
    }),
    scheduleKey: t.exposeString('scheduleKey', { nullable: true, description: 'The key it was scheduled with; null unless scheduled.' }),
    fireAt: t.field({ type: 'DateTime', nullable: true, description: 'When a scheduled entry joins the queue.', resolve: (e) => e.fireAt }),
    runId: t.exposeID('runId', { nullable: true, description: 'Its run; null until it starts, and for an entry cancelled before.' }),
    run: t.field({
      type: RunRef,
      nullable: true,
      description: 'Its run, as it is now.',
      resolve: (e, _args, ctx) => (e.runId ? entryRuns(ctx).load(e.runId) : null),
    }),
    error: t.field({
      type: EntryErrorRef,
      nullable: true,
      description: 'Why it failed or was cancelled; null otherwise.',
      resolve: (e) => e.error,
    }),
    unappliedSteerIds: t.idList({
      description: 'Steers accepted but not applied before the run ended.',
      resolve: (e) => e.unappliedSteerIds,
    }),
  }),
})

/** Shared by the enqueue and schedule inputs. */
const idempotencyKeyField = (t: PothosSchemaTypes.InputFieldBuilder<BuilderTypes, 'InputObject'>) =>
  t.string({
    description:
      'Your key for this admission (1-256 characters): sending it again within PROMPTLINE_IDEMPOTENCY_TTL_MS answers with the same entry and admits nothing; the same key with a different request is INVALID_REQUEST.',
  })

/** Shared by the enqueue and schedule inputs. */
const webhookUrlField = (t: PothosSchemaTypes.InputFieldBuilder<BuilderTypes, 'InputObject'>) =>
  t.string({
    description:
      "Where this run's end is posted (an http(s) URL), signed per Standard Webhooks; default: the session's webhookUrl. Needs the tenant's webhook secret.",
  })

const EnqueuePromptInput = builder.inputType('EnqueuePromptInput', {
  description: 'A prompt to admit into a session queue.',
  fields: (t) => ({
    ...runRequestFields(t),
    sessionId: t.id({ required: true, description: 'The session whose queue takes the prompt.' }),
    idempotencyKey: idempotencyKeyField(t),
    webhookUrl: webhookUrlField(t),
    whenBusy: t.field({ type: WhenBusyEnum, defaultValue: 'ENQUEUE', description: 'What to do if the session is busy.' }),
  }),
})

const SchedulePromptInput = builder.inputType('SchedulePromptInput', {
  description: 'A prompt to queue after a debounce.',
  fields: (t) => ({
    ...runRequestFields(t),
    sessionId: t.id({ required: true, description: 'The session whose queue takes the prompt.' }),
    idempotencyKey: idempotencyKeyField(t),
    webhookUrl: webhookUrlField(t),
    scheduleKey: t.string({
      required: true,
      description: 'Re-scheduling the same key before it fires replaces the prompt and restarts the debounce.',
    }),
    debounceMs: t.int({ description: 'Wait this long (0 to 86400000 ms, default 0) after the last re-schedule.' }),
  }),
})

const SteerPromptInput = builder.inputType('SteerPromptInput', {
  description: 'User input for a running entry.',
  fields: (t) => ({
    sessionId: t.id({ required: true, description: 'The session of the entry.' }),
    queueId: t.id({ required: true, description: 'The running entry to steer.' }),
    steerId: t.id({ required: true, description: 'Your id for this steer; a repeat is refused as DUPLICATE.' }),
    text: t.string({ required: true, description: 'Sent to the model as user input at the next token boundary.' }),
  }),
})

const EnqueuePromptPayload = builder.objectRef<{ entry: EntryShape }>('EnqueuePromptPayload').implement({
  description: 'The admitted prompt.',
  fields: (t) => ({
    entry: t.field({ type: QueueEntryRef, description: 'The new entry, with its place in line.', resolve: (p) => p.entry }),
  }),
})
const RunPromptPayload = builder.objectRef<{ entry: EntryShape; run: RunRecord | null }>('RunPromptPayload').implement({
  description: 'The admitted prompt and its run, finished unless the timeout came first.',
  fields: (t) => ({
    entry: t.field({
      type: QueueEntryRef,
      description: 'The entry: terminal, or still in line or running after the timeout.',
      resolve: (p) => p.entry,
    }),
    run: t.field({ type: RunRef, nullable: true, description: 'Null if the timeout came before the run started.', resolve: (p) => p.run }),
  }),
})
const SchedulePromptPayload = builder.objectRef<{ entry: EntryShape }>('SchedulePromptPayload').implement({
  description: 'The scheduled prompt.',
  fields: (t) => ({
    entry: t.field({
      type: QueueEntryRef,
      description: 'The SCHEDULED entry (the same entry when a key was re-scheduled).',
      resolve: (p) => p.entry,
    }),
  }),
})
const CancelScheduledPromptPayload = builder.objectRef<{ cancelled: boolean }>('CancelScheduledPromptPayload').implement({
  description: 'The answer to cancelScheduledPrompt.',
  fields: (t) => ({ cancelled: t.exposeBoolean('cancelled', { description: 'False when no entry with that key was waiting.' }) }),
})
const CancelPromptPayload = builder.objectRef<{ cancelled: boolean; entry: EntryShape }>('CancelPromptPayload').implement({
  description: 'The answer to cancelPrompt.',
  fields: (t) => ({
    cancelled: t.exposeBoolean('cancelled', { description: 'False when the entry had already finished or was finishing.' }),
    entry: t.field({ type: QueueEntryRef, description: 'The entry as it is after the cancel.', resolve: (p) => p.entry }),
  }),
})
const SteerPromptPayload = builder.objectRef<{ steerId: string; queueId: string; runId: string }>('SteerPromptPayload').implement({
  description: 'The accepted steer.',
  fields: (t) => ({
    steerId: t.exposeID('steerId', { description: 'Your id for the steer.' }),
    queueId: t.exposeID('queueId', { description: 'The entry it steers.' }),
    runId: t.exposeID('runId', { description: 'The run that will apply it.' }),
  }),
})

export const ADMISSION_ERRORS = [
  NotFoundError,
  QueueFullError,
  SessionBusyError,
  BudgetExceededError,
  RateLimitedError,
  ...PREPARATION_ERRORS,
]

builder.queryField('queueEntry', (t) =>
  t.field({
    type: QueueEntryRef,
    nullable: true,
    description: 'A queue entry, live while it is outstanding, or null.',
    args: {
      sessionId: t.arg.id({ required: true, description: 'The session of the entry.' }),
      queueId: t.arg.id({ required: true, description: 'The entry id.' }),
    },
    resolve: (_root, { sessionId, queueId }, ctx) => ctx.services.runs.queueEntry(ctx.tenantId, String(sessionId), String(queueId)),
  }),
)

builder.mutationFields((t) => ({
  enqueuePrompt: t.field({
    type: EnqueuePromptPayload,
    description: "Admits a prompt into the session's queue, or refuses it at once; never waits for the run.",
    errors: { types: ADMISSION_ERRORS },
    args: { input: t.arg({ type: EnqueuePromptInput, required: true, description: 'The prompt to admit.' }) },
    resolve: async (_root, { input: { whenBusy, ...request } }, ctx) => ({
      entry: await ctx.services.runs.enqueue(ctx, request, whenBusy ?? 'ENQUEUE'),
    }),
  }),
  runPrompt: t.field({
    type: RunPromptPayload,
    description:
      'Enqueues a prompt and waits for its run to end, or for timeoutMs (default 60000), answering with the entry still running.',
    errors: { types: ADMISSION_ERRORS },
    args: {
      input: t.arg({ type: EnqueuePromptInput, required: true, description: 'The prompt to admit.' }),
      timeoutMs: t.arg.int({ description: 'How long to wait for the run to end, in ms (default 60000, at most 3600000).' }),
    },
    resolve: (_root, { input: { whenBusy, ...request }, timeoutMs }, ctx) =>
      ctx.services.runs.runPrompt(ctx, request, whenBusy ?? 'ENQUEUE', timeoutMs ?? 60_000),
  }),
  schedulePrompt: t.field({
    type: SchedulePromptPayload,
    description: 'Queues a prompt after a debounce; the same scheduleKey before it fires replaces it.',
    errors: { types: ADMISSION_ERRORS },
    args: { input: t.arg({ type: SchedulePromptInput, required: true, description: 'The prompt and its schedule key.' }) },
    resolve: async (_root, { input }, ctx) => ({ entry: await ctx.services.runs.schedule(ctx, input) }),
  }),
  cancelScheduledPrompt: t.field({
    type: CancelScheduledPromptPayload,
    description: 'Cancels the scheduled prompt with this key before it fires.',
    errors: { types: [NotFoundError] },
    args: {
      sessionId: t.arg.id({ required: true, description: 'The session of the scheduled prompt.' }),
      scheduleKey: t.arg.string({ required: true, description: 'The key it was scheduled with.' }),
    },
    resolve: async (_root, { sessionId, scheduleKey }, ctx) => ({
      cancelled: await ctx.services.runs.cancelScheduled(ctx.tenantId, String(sessionId), scheduleKey),
    }),
  }),
  cancelPrompt: t.field({
    type: CancelPromptPayload,
    description: 'Cancels a queued or scheduled entry at once, or aborts a running one (its provider request too).',
    errors: { types: [NotFoundError] },
    args: {
      sessionId: t.arg.id({ required: true, description: 'The session of the entry.' }),
      queueId: t.arg.id({ required: true, description: 'The entry to cancel.' }),
    },
    resolve: (_root, { sessionId, queueId }, ctx) => ctx.services.runs.cancel(ctx.tenantId, String(sessionId), String(queueId)),
  }),
  steerPrompt: t.field({
    type: SteerPromptPayload,
    description: "Adds user input to a running entry's generation; applied at the next token boundary.",
    errors: { types: [SteerRejectedError, NotFoundError, QueueFullError] },
    args: { input: t.arg({ type: SteerPromptInput, required: true, description: 'The steer.' }) },
    resolve: (_root, { input }, ctx) => ctx.services.runs.steer(ctx.tenantId, input),
  }),
}))
