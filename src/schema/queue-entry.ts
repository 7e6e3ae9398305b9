import { NotFoundError, QueueFullError, SessionBusyError, SteerRejectedError } from '../domain/errors.js'
import type { WhenBusy } from '../domain/records.js'
import { ENTRY_STATUSES, type QueueEntryRecord, type RunRecord } from '../domain/records.js'
import { builder } from './builder.js'
import { ErrorCodeEnum, PREPARATION_ERRORS } from './errors.js'
import { RunRef } from './run.js'
import { SettingsOverrideInput } from './settings.js'

export const EntryStatusEnum = builder.enumType('QueueEntryStatus', { values: ENTRY_STATUSES })

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

const EntryErrorRef = builder.objectRef<{ code: string; message: string }>('QueueEntryError').implement({
  description: 'Why an entry failed or was cancelled.',
  fields: (t) => ({
    code: t.field({ type: ErrorCodeEnum, resolve: (e) => e.code as never }),
    message: t.exposeString('message'),
  }),
})

type EntryShape = QueueEntryRecord & { position?: number | null }

export const QueueEntryRef = builder.objectRef<EntryShape>('QueueEntry').implement({
  description: "One admitted prompt of a session's queue.",
  fields: (t) => ({
    queueId: t.exposeID('queueId'),
    queueSequence: t.exposeInt('queueSequence', { description: 'Admission order within the session.' }),
    sessionId: t.exposeID('sessionId'),
    status: t.field({ type: EntryStatusEnum, resolve: (e) => e.status }),
    position: t.int({
      nullable: true,
      description: 'For an entry in line: 0 = running, 1 = next, … Null when scheduled or finished.',
      resolve: (e) => e.position ?? null,
    }),
    promptId: t.id({ nullable: true, resolve: (e) => e.request.promptId }),
    input: t.string({ nullable: true, description: 'The plain input text, if any.', resolve: (e) => e.request.input }),
    profileId: t.id({ nullable: true, description: 'The profile the request named, if any.', resolve: (e) => e.request.profileId }),
    queuedAt: t.field({ type: 'DateTime', resolve: (e) => e.queuedAt }),
    startedAt: t.field({ type: 'DateTime', nullable: true, resolve: (e) => e.startedAt }),
    finishedAt: t.field({ type: 'DateTime', nullable: true, resolve: (e) => e.finishedAt }),
    scheduleKey: t.exposeString('scheduleKey', { nullable: true }),
    fireAt: t.field({ type: 'DateTime', nullable: true, description: 'When a scheduled entry joins the queue.', resolve: (e) => e.fireAt }),
    runId: t.exposeID('runId', { nullable: true }),
    run: t.field({
      type: RunRef,
      nullable: true,
      description: 'Its run, as it is now.',
      resolve: (e, _args, ctx) => (e.runId ? ctx.services.runs.run(ctx.tenantId, e.runId) : null),
    }),
    error: t.field({ type: EntryErrorRef, nullable: true, resolve: (e) => e.error }),
    unappliedSteerIds: t.idList({
      description: 'Steers accepted but not applied before the run ended.',
      resolve: (e) => e.unappliedSteerIds,
    }),
  }),
})

const EnqueuePromptInput = builder.inputType('EnqueuePromptInput', {
  fields: (t) => ({
    sessionId: t.id({ required: true }),
    promptId: t.id({ description: 'A catalog prompt; without one, input is sent as a plain user message.' }),
    input: t.string({ description: "The user's text: the plain message, or the prompt's input variable." }),
    variables: t.field({ type: 'JSON', description: 'A JSON object with the template variables.' }),
    profileId: t.id({ description: "Overrides the prompt's (or session's) default profile." }),
    overrides: t.field({ type: SettingsOverrideInput, description: 'The request settings layer.' }),
    credentialEnv: t.string({ description: "An environment variable to take the API key from, over the profile's." }),
    whenBusy: t.field({ type: WhenBusyEnum, defaultValue: 'ENQUEUE', description: 'What to do if the session is busy.' }),
  }),
})

const SchedulePromptInput = builder.inputType('SchedulePromptInput', {
  fields: (t) => ({
    sessionId: t.id({ required: true }),
    promptId: t.id(),
    input: t.string(),
    variables: t.field({ type: 'JSON' }),
    profileId: t.id(),
    overrides: t.field({ type: SettingsOverrideInput }),
    credentialEnv: t.string(),
    scheduleKey: t.string({
      required: true,
      description: 'Re-scheduling the same key before it fires replaces the prompt and restarts the debounce.',
    }),
    debounceMs: t.int({ description: 'Wait this long (0 to 86400000 ms, default 0) after the last re-schedule.' }),
  }),
})

const SteerPromptInput = builder.inputType('SteerPromptInput', {
  fields: (t) => ({
    sessionId: t.id({ required: true }),
    queueId: t.id({ required: true }),
    steerId: t.id({ required: true, description: 'Your id for this steer; a repeat is refused as DUPLICATE.' }),
    text: t.string({ required: true, description: 'Sent to the model as user input at the next token boundary.' }),
  }),
})

const EnqueuePromptPayload = builder.objectRef<{ entry: EntryShape }>('EnqueuePromptPayload').implement({
  fields: (t) => ({ entry: t.field({ type: QueueEntryRef, resolve: (p) => p.entry }) }),
})
const RunPromptPayload = builder.objectRef<{ entry: EntryShape; run: RunRecord | null }>('RunPromptPayload').implement({
  fields: (t) => ({
    entry: t.field({ type: QueueEntryRef, resolve: (p) => p.entry }),
    run: t.field({ type: RunRef, nullable: true, description: 'Null if the timeout came before the run started.', resolve: (p) => p.run }),
  }),
})
const SchedulePromptPayload = builder.objectRef<{ entry: EntryShape }>('SchedulePromptPayload').implement({
  fields: (t) => ({ entry: t.field({ type: QueueEntryRef, resolve: (p) => p.entry }) }),
})
const CancelScheduledPromptPayload = builder.objectRef<{ cancelled: boolean }>('CancelScheduledPromptPayload').implement({
  fields: (t) => ({ cancelled: t.exposeBoolean('cancelled', { description: 'False when no entry with that key was waiting.' }) }),
})
const CancelPromptPayload = builder.objectRef<{ cancelled: boolean; entry: EntryShape }>('CancelPromptPayload').implement({
  fields: (t) => ({
    cancelled: t.exposeBoolean('cancelled', { description: 'False when the entry had already finished or was finishing.' }),
    entry: t.field({ type: QueueEntryRef, nullable: true, resolve: (p) => p.entry }),
  }),
})
const SteerPromptPayload = builder.objectRef<{ steerId: string; queueId: string; runId: string }>('SteerPromptPayload').implement({
  fields: (t) => ({ steerId: t.exposeID('steerId'), queueId: t.exposeID('queueId'), runId: t.exposeID('runId') }),
})

const ADMISSION_ERRORS = [NotFoundError, QueueFullError, SessionBusyError, ...PREPARATION_ERRORS]

builder.queryField('queueEntry', (t) =>
  t.field({
    type: QueueEntryRef,
    nullable: true,
    description: 'A queue entry, live while it is outstanding, or null.',
    args: { sessionId: t.arg.id({ required: true }), queueId: t.arg.id({ required: true }) },
    resolve: (_root, { sessionId, queueId }, ctx) => ctx.services.runs.queueEntry(ctx.tenantId, String(sessionId), String(queueId)),
  }),
)

builder.mutationFields((t) => ({
  enqueuePrompt: t.field({
    type: EnqueuePromptPayload,
    description: "Admits a prompt into the session's queue, or refuses it at once; never waits for the run.",
    errors: { types: ADMISSION_ERRORS },
    args: { input: t.arg({ type: EnqueuePromptInput, required: true }) },
    resolve: async (_root, { input: { whenBusy, ...request } }, ctx) => ({
      entry: await ctx.services.runs.enqueue(ctx.tenantId, request, whenBusy ?? 'ENQUEUE'),
    }),
  }),
  runPrompt: t.field({
    type: RunPromptPayload,
    description:
      'Enqueues a prompt and waits for its run to end, or for timeoutMs (default 60000), answering with the entry still running.',
    errors: { types: ADMISSION_ERRORS },
    args: { input: t.arg({ type: EnqueuePromptInput, required: true }), timeoutMs: t.arg.int() },
    resolve: (_root, { input: { whenBusy, ...request }, timeoutMs }, ctx) =>
      ctx.services.runs.runPrompt(ctx.tenantId, request, whenBusy ?? 'ENQUEUE', timeoutMs ?? 60_000),
  }),
  schedulePrompt: t.field({
    type: SchedulePromptPayload,
    description: 'Queues a prompt after a debounce; the same scheduleKey before it fires replaces it.',
    errors: { types: ADMISSION_ERRORS },
    args: { input: t.arg({ type: SchedulePromptInput, required: true }) },
    resolve: async (_root, { input }, ctx) => ({ entry: await ctx.services.runs.schedule(ctx.tenantId, input) }),
  }),
  cancelScheduledPrompt: t.field({
    type: CancelScheduledPromptPayload,
    description: 'Cancels the scheduled prompt with this key before it fires.',
    errors: { types: [NotFoundError] },
    args: { sessionId: t.arg.id({ required: true }), scheduleKey: t.arg.string({ required: true }) },
    resolve: async (_root, { sessionId, scheduleKey }, ctx) => ({
      cancelled: await ctx.services.runs.cancelScheduled(ctx.tenantId, String(sessionId), scheduleKey),
    }),
  }),
  cancelPrompt: t.field({
    type: CancelPromptPayload,
    description: 'Cancels a queued or scheduled entry at once, or aborts a running one (its provider request too).',
    errors: { types: [NotFoundError] },
    args: { sessionId: t.arg.id({ required: true }), queueId: t.arg.id({ required: true }) },
    resolve: (_root, { sessionId, queueId }, ctx) => ctx.services.runs.cancel(ctx.tenantId, String(sessionId), String(queueId)),
  }),
  steerPrompt: t.field({
    type: SteerPromptPayload,
    description: "Adds user input to a running entry's generation; applied at the next token boundary.",
    errors: { types: [SteerRejectedError, NotFoundError, QueueFullError] },
    args: { input: t.arg({ type: SteerPromptInput, required: true }) },
    resolve: (_root, { input }, ctx) => ctx.services.runs.steer(ctx.tenantId, input),
  }),
}))
