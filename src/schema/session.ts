import { InvalidRequestError, NotFoundError } from '../domain/errors.js'
import type { MessageRecord, SessionFork, SessionRecord, Usage } from '../domain/records.js'
import { builder } from './builder.js'
import { ContentPartRef } from './content-part.js'
import { perRequestLoader } from './loaders.js'
import { encodeCursor, forwardPage, pageArgs, toConnection } from './paging.js'
import { RoleEnum } from './prompt.js'
import { QueueEntryRef } from './queue-entry.js'
import { RunConnection, resolveRunConnection } from './run.js'
import { ToolCallRef } from './tool.js'
import { UsageRef } from './usage.js'

const SessionStatusEnum = builder.enumType('SessionStatus', {
  description: "What a session's queue is doing.",
  values: {
    IDLE: { description: 'Nothing queued or running.' },
    RUNNING: { description: 'An entry is running or queued.' },
    SCHEDULED: { description: 'Only scheduled entries are waiting.' },
  },
})

export const MessageRef = builder.objectRef<MessageRecord>('Message').implement({
  description: 'One message of the conversation: completed runs append their user and assistant messages.',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'The message id (a UUID).' }),
    position: t.exposeInt('position', { description: '1 for the first message of the session, then increasing by one.' }),
    role: t.field({ type: RoleEnum, description: 'Who says it.', resolve: (m) => m.role }),
    content: t.exposeString('content', { description: 'The text.' }),
    parts: t.field({
      type: [ContentPartRef],
      description: 'Images, files and more text after the content; empty for plain text.',
      resolve: (m) => m.parts,
    }),
    toolCalls: t.field({
      type: [ToolCallRef],
      description: "An assistant message's tool calls; empty otherwise.",
      resolve: (m) => m.toolCalls,
    }),
    toolCallId: t.exposeID('toolCallId', { nullable: true, description: 'A TOOL message: the call it answers.' }),
    runId: t.exposeID('runId', { nullable: true, description: 'The run that added it.' }),
    interrupted: t.exposeBoolean('interrupted', { description: 'A partial answer cut short by an INTERRUPT.' }),
    createdAt: t.field({ type: 'DateTime', description: 'When it was added.', resolve: (m) => m.createdAt }),
  }),
})

/** Each session's usage and cost, loaded once a request for all the sessions it shows; Session.usage and Session.cost share it. */
const sessionTotals = perRequestLoader<string, Usage & { costUsd: number | null }>((ids, ctx) =>
  ctx.services.sessions.sessionTotals(ctx.tenantId, ids),
)

const SessionForkRef = builder.objectRef<SessionFork>('SessionFork').implement({
  description: 'Where a forked session came from.',
  fields: (t) => ({
    sessionId: t.exposeID('sessionId', { description: 'The session it was copied from.' }),
    atPosition: t.exposeInt('atPosition', { description: 'The last message copied, by position (0: none).' }),
  }),
})

const SessionRef = builder.objectRef<SessionRecord>('Session').implement({
  description: 'A conversation thread with its own FIFO prompt queue.',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'The session id: yours, or a server UUID.' }),
    title: t.exposeString('title', { nullable: true, description: 'Your title; null when none was given.' }),
    defaultProfileId: t.exposeID('defaultProfileId', {
      nullable: true,
      description: 'The profile for plain input and for prompts without a default; null when none was given.',
    }),
    metadata: t.field({
      type: 'JSON',
      nullable: true,
      description: 'Your JSON object; null when none was given.',
      resolve: (s) => s.metadata,
    }),
    keepHistory: t.exposeBoolean('keepHistory', {
      description: 'False: each prompt stands alone and runs add nothing to the conversation.',
    }),
    webhookUrl: t.exposeString('webhookUrl', {
      nullable: true,
      description: "Where its runs' ends are posted unless a prompt names its own; null: nowhere.",
    }),
    forkedFrom: t.field({
      type: SessionForkRef,
      nullable: true,
      description: 'The session it was forked from (forkSession, or a replay); null for a session created as new.',
      resolve: (s) => s.forkedFrom,
    }),
    status: t.field({
      type: SessionStatusEnum,
      description: 'What its queue is doing now.',
      resolve: (s, _args, ctx) => ctx.services.sessions.status(ctx.tenantId, s.id),
    }),
    lastSequence: t.int({
      description:
        'The sequence of the last event of its stream, 0 before any. Subscribe with afterSequence: lastSequence to follow it from now and still resume without loss. Sequences increase but may skip numbers (by up to 1000 after a restart): never detect loss by seq + 1.',
      resolve: (s, _args, ctx) => ctx.services.sessions.lastSequence(ctx.tenantId, s.id),
    }),
    messages: t.field({
      type: [MessageRef],
      description: 'The conversation so far, oldest first.',
      resolve: (s, _args, ctx) => ctx.services.sessions.messages(ctx.tenantId, s.id),
    }),
    queue: t.field({
      type: [QueueEntryRef],
      description: 'Outstanding entries (and finished ones when asked), in queueSequence order.',
      args: {
        includeTerminal: t.arg.boolean({ defaultValue: false, description: 'Also list finished entries (the most recent are kept).' }),
      },
      resolve: (s, { includeTerminal }, ctx) => ctx.services.sessions.queueOf(ctx.tenantId, s.id, includeTerminal ?? false),
    }),
    runs: t.field({
      type: RunConnection,
      description: "The session's runs, newest first.",
      args: pageArgs(t.arg),
      resolve: (s, args, ctx) => resolveRunConnection(ctx, { sessionId: s.id }, args),
    }),
    usage: t.field({
      type: UsageRef,
      description: 'Token counts summed over the runs of the session.',
      resolve: (s, _args, ctx) => sessionTotals(ctx).load(s.id),
    }),
    cost: t.float({
      nullable: true,
      description: 'USD summed over the runs of the session; null when a run used a model without a price.',
      resolve: async (s, _args, ctx) => (await sessionTotals(ctx).load(s.id)).costUsd,
    }),
    createdAt: t.field({ type: 'DateTime', description: 'When it was created.', resolve: (s) => s.createdAt }),
    updatedAt: t.field({ type: 'DateTime', description: 'When it last changed.', resolve: (s) => s.updatedAt }),
  }),
})

const sessionCursor = (s: SessionRecord) => encodeCursor('session', s.createdAt, s.id)
const SessionConnection = builder.connectionObject({ type: SessionRef, name: 'SessionConnection' })

const TenantUsageRef = builder.objectRef<Usage & { costUsd: number | null }>('TenantUsage').implement({
  description: "Token counts and USD over every run of the caller's tenant.",
  fields: (t) => ({
    usage: t.field({ type: UsageRef, description: 'Token counts summed over the runs.', resolve: (u) => u }),
    cost: t.float({
      nullable: true,
      description: 'USD summed over the runs; null when a run used a model without a price.',
      resolve: (u) => u.costUsd,
    }),
  }),
})

builder.queryFields((t) => ({
  tenantUsage: t.field({
    type: TenantUsageRef,
    description: "Token counts and cost over all of the caller's tenant's runs.",
    resolve: (_root, _args, ctx) => ctx.services.sessions.tenantTotals(ctx.tenantId),
  }),
  session: t.field({
    type: SessionRef,
    nullable: true,
    description: 'A session by id, or null.',
    args: { id: t.arg.id({ required: true, description: 'The session id.' }) },
    resolve: (_root, { id }, ctx) => ctx.services.sessions.get(ctx.tenantId, String(id)),
  }),
  sessions: t.field({
    type: SessionConnection,
    description: 'Sessions, newest first. Forward paging only.',
    args: pageArgs(t.arg),
    resolve: async (_root, args, ctx) => {
      const { first, after } = forwardPage(args, 'session', 2)
      const rows = await ctx.services.sessions.list(ctx.tenantId, after && { createdAt: after[0]!, id: after[1]! }, first + 1)
      return toConnection(rows, first, after !== null, sessionCursor)
    },
  }),
}))

const CreateSessionInput = builder.inputType('CreateSessionInput', {
  description: 'A new session.',
  fields: (t) => ({
    id: t.id({ description: 'Your own id (1-128 characters of A-Z a-z 0-9 _ . -); a server id when absent.' }),
    title: t.string({ description: 'A title for people.' }),
    defaultProfileId: t.id({ description: 'The profile for plain input and for prompts without a default.' }),
    metadata: t.field({ type: 'JSON', description: 'A JSON object kept with the session.' }),
    keepHistory: t.boolean({
      description: 'Default true: completed runs append their messages and later prompts see them. False: every prompt stands alone.',
    }),
    webhookUrl: t.string({
      description:
        "Where each run's end is posted (an http(s) URL), signed per Standard Webhooks, unless its prompt names its own. Needs the tenant's webhook secret.",
    }),
  }),
})

const CreateSessionPayload = builder.objectRef<{ session: SessionRecord }>('CreateSessionPayload').implement({
  description: 'The created session.',
  fields: (t) => ({ session: t.field({ type: SessionRef, description: 'The new session.', resolve: (p) => p.session }) }),
})
const DeleteSessionPayload = builder.objectRef<{ deletedId: string }>('DeleteSessionPayload').implement({
  description: 'The deleted session.',
  fields: (t) => ({ deletedId: t.exposeID('deletedId', { description: 'The id of the session deleted.' }) }),
})

const ForkSessionInput = builder.inputType('ForkSessionInput', {
  description: 'Which session to fork, and up to which message.',
  fields: (t) => ({
    sessionId: t.id({ required: true, description: 'The session to copy.' }),
    atPosition: t.int({ required: true, description: 'The last message copied, by its position (0: none); the rest is left out.' }),
    newSessionId: t.id({ description: 'The new session’s id; absent: a UUID.' }),
  }),
})

builder.mutationFields((t) => ({
  forkSession: t.field({
    type: CreateSessionPayload,
    description:
      "Opens a new session with another's settings (default profile, title, metadata, history mode, webhook) and its conversation up to a message, copied in one transaction. The source does not change.",
    errors: { types: [InvalidRequestError, NotFoundError] },
    args: { input: t.arg({ type: ForkSessionInput, required: true, description: 'The session and where to cut.' }) },
    resolve: async (_root, { input }, ctx) => ({ session: await ctx.services.sessions.fork(ctx.tenantId, input) }),
  }),
  createSession: t.field({
    type: CreateSessionPayload,
    description: 'Opens a conversation thread.',
    errors: { types: [NotFoundError] },
    args: { input: t.arg({ type: CreateSessionInput, required: true, description: 'The session to create.' }) },
    resolve: async (_root, { input }, ctx) => ({ session: await ctx.services.sessions.create(ctx.tenantId, input) }),
  }),
  deleteSession: t.field({
    type: DeleteSessionPayload,
    description:
      'Cancels the whole queue of the session (aborting its running entry), then deletes it, its messages and its event log. Runs stay as records.',
    errors: { types: [NotFoundError] },
    args: { id: t.arg.id({ required: true, description: 'The session to delete.' }) },
    resolve: async (_root, { id }, ctx) => ({ deletedId: await ctx.services.sessions.delete(ctx.tenantId, String(id)) }),
  }),
}))
