import type { QueueEntryEventKind, SessionEvent, SessionEventType, ToolCallDecision } from '../domain/events.js'
import { builder } from './builder.js'
import { describedValues } from './described.js'
import { QueueEntryRef } from './queue-entry.js'
import { RunRef } from './run.js'
import { MessageRef } from './session.js'
import { ToolCallRef } from './tool.js'

type Of<T extends SessionEventType> = Extract<SessionEvent, { type: T }>

const TYPE_NAMES: Record<SessionEventType, string> = {
  QUEUE_ENTRY: 'QueueEntryEvent',
  RUN_STARTED: 'RunStartedEvent',
  TOKEN_DELTA: 'TokenDeltaEvent',
  GENERATION_RESTARTED: 'GenerationRestartedEvent',
  TOOL_CALL_STARTED: 'ToolCallStartedEvent',
  TOOL_CALL_DELTA: 'ToolCallDeltaEvent',
  TOOL_CALLS_REQUESTED: 'ToolCallsRequestedEvent',
  TOOL_CALLS_DECIDED: 'ToolCallsDecidedEvent',
  TOOL_CALL_RESULT: 'ToolCallResultEvent',
  STEER_ACCEPTED: 'SteerAcceptedEvent',
  STEER_APPLIED: 'SteerAppliedEvent',
  MESSAGE_CREATED: 'MessageCreatedEvent',
  RUN_FINISHED: 'RunFinishedEvent',
}

const SessionEventRef = builder.interfaceRef<SessionEvent>('SessionEvent').implement({
  description: 'One event of a session stream. Resume a stream with the last sequence you saw as afterSequence.',
  resolveType: (event) => TYPE_NAMES[event.type],
  fields: (t) => ({
    sequence: t.exposeInt('sequence', { description: 'Unique and increasing within the session; never reused.' }),
    at: t.field({ type: 'DateTime', description: 'When it happened.', resolve: (e) => e.at }),
    sessionId: t.exposeID('sessionId', { description: 'The session whose stream it belongs to.' }),
    runId: t.exposeID('runId', {
      nullable: true,
      description: 'The run it belongs to. Non-null on every run event; null on a QueueEntryEvent before its run started.',
    }),
  }),
})

const QueueEntryEventKindEnum = builder.enumType('QueueEntryEventKind', {
  description: 'What happened to a queue entry.',
  values: describedValues<QueueEntryEventKind>({
    QUEUED: 'It was admitted, a scheduled one joined the line, or a key was re-scheduled.',
    STARTED: 'Its run is starting.',
    RUNNING: 'Its run began generating.',
    FINISHED: 'It is terminal: completed, failed or cancelled.',
  }),
})

builder.objectRef<Of<'QUEUE_ENTRY'>>('QueueEntryEvent').implement({
  description: 'A queue entry was queued (or re-scheduled), started, began generating, or finished.',
  interfaces: [SessionEventRef],
  fields: (t) => ({
    kind: t.field({ type: QueueEntryEventKindEnum, description: 'What happened.', resolve: (e) => e.kind }),
    entry: t.field({ type: QueueEntryRef, description: 'The entry as it was then.', resolve: (e) => e.entry }),
  }),
})

builder.objectRef<Of<'RUN_STARTED'>>('RunStartedEvent').implement({
  description: 'A run was created for a queue entry.',
  interfaces: [SessionEventRef],
  fields: (t) => ({
    runId: t.id({ description: 'The run that started.', resolve: (e) => e.run.id }),
    run: t.field({ type: RunRef, description: 'The run as it was then.', resolve: (e) => e.run }),
  }),
})

builder.objectRef<Of<'TOKEN_DELTA'>>('TokenDeltaEvent').implement({
  description: "Generated text. A run's deltas of its last attempt, joined, equal its output.",
  interfaces: [SessionEventRef],
  fields: (t) => ({
    runId: t.id({ description: 'The run that generated it.', resolve: (e) => e.runId! }),
    text: t.exposeString('text', { description: 'The text since the previous delta (several tokens may be merged into one event).' }),
    attempt: t.exposeInt('attempt', {
      description:
        '0 for the first generation, then one more for each repair and each restart (GenerationRestartedEvent): drop the deltas of an earlier attempt.',
    }),
    candidate: t.exposeID('candidate', { nullable: true, description: 'For a parallel prompt: the profile whose answer this is.' }),
  }),
})

builder.objectRef<Of<'GENERATION_RESTARTED'>>('GenerationRestartedEvent').implement({
  description:
    "A stream broke after its first token (or stalled), and the generation started again on the next candidate (the profile's onStreamFailure RESTART). Drop the text of the earlier attempt: the new attempt's deltas carry the whole answer.",
  interfaces: [SessionEventRef],
  fields: (t) => ({
    runId: t.id({ description: 'The run that restarted.', resolve: (e) => e.runId! }),
    attempt: t.exposeInt('attempt', { description: 'The attempt the next TokenDeltaEvents carry.' }),
    reason: t.exposeString('reason', { description: 'How the stream failed: NETWORK, SERVER_ERROR, OVERLOADED, STREAM_TIMEOUT, …' }),
    discardedChars: t.exposeInt('discardedChars', { description: 'Characters of the broken stream that were dropped.' }),
    candidate: t.exposeID('candidate', { nullable: true, description: 'For a parallel prompt: the profile whose answer restarted.' }),
  }),
})

builder.objectRef<Of<'TOOL_CALL_STARTED'>>('ToolCallStartedEvent').implement({
  description: 'The model began a tool call; its arguments follow as ToolCallDeltaEvents.',
  interfaces: [SessionEventRef],
  fields: (t) => ({
    runId: t.id({ description: 'The run whose model called.', resolve: (e) => e.runId! }),
    callId: t.exposeID('callId', { description: 'The id its result names.' }),
    name: t.exposeString('name', { description: 'The tool called.' }),
    round: t.exposeInt('round', { description: "The round's index in Run.toolRounds (0 for the first)." }),
    server: t.exposeString('server', {
      nullable: true,
      description: 'The MCP server promptline will make the call on (its label); null when the application runs it.',
    }),
  }),
})

builder.objectRef<Of<'TOOL_CALL_DELTA'>>('ToolCallDeltaEvent').implement({
  description: "Part of a tool call's arguments (JSON text); a call's deltas, joined, are its arguments.",
  interfaces: [SessionEventRef],
  fields: (t) => ({
    runId: t.id({ description: 'The run whose model called.', resolve: (e) => e.runId! }),
    callId: t.exposeID('callId', { description: 'The call.' }),
    argumentsDelta: t.exposeString('argumentsDelta', { description: 'The text since the previous delta of the call.' }),
  }),
})

builder.objectRef<Of<'TOOL_CALLS_REQUESTED'>>('ToolCallsRequestedEvent').implement({
  description:
    'The run waits for the results of these calls (REQUIRES_ACTION): submit those with no server (submitToolResults), approve or decline those with approvalRequired (approveToolCalls); promptline makes the other MCP calls itself.',
  interfaces: [SessionEventRef],
  fields: (t) => ({
    runId: t.id({ description: 'The waiting run.', resolve: (e) => e.runId! }),
    round: t.exposeInt('round', { description: "The round's index in Run.toolRounds." }),
    calls: t.field({ type: [ToolCallRef], description: 'The calls, in the order made.', resolve: (e) => e.calls }),
  }),
})

const ToolCallDecisionRef = builder.objectRef<ToolCallDecision>('ToolCallDecision').implement({
  description: 'An approval or a decline of one call.',
  fields: (t) => ({
    callId: t.exposeID('callId', { description: 'The call.' }),
    approve: t.exposeBoolean('approve', { description: 'True: promptline makes it; false: it is declined and never made.' }),
    reason: t.exposeString('reason', { nullable: true, description: 'Why, as the decider said.' }),
    keyId: t.exposeString('keyId', { nullable: true, description: 'The API key that decided (its id); null where keys are off.' }),
  }),
})

builder.objectRef<Of<'TOOL_CALLS_DECIDED'>>('ToolCallsDecidedEvent').implement({
  description: 'Calls awaiting approval were approved or declined (approveToolCalls), durably.',
  interfaces: [SessionEventRef],
  fields: (t) => ({
    runId: t.id({ description: 'The waiting run.', resolve: (e) => e.runId! }),
    round: t.exposeInt('round', { description: "The round's index in Run.toolRounds." }),
    decisions: t.field({ type: [ToolCallDecisionRef], description: 'The decisions, as given.', resolve: (e) => e.decisions }),
  }),
})

builder.objectRef<Of<'TOOL_CALL_RESULT'>>('ToolCallResultEvent').implement({
  description: 'An MCP call promptline made (or declined) has its result, written to the run.',
  interfaces: [SessionEventRef],
  fields: (t) => ({
    runId: t.id({ description: 'The run.', resolve: (e) => e.runId! }),
    round: t.exposeInt('round', { description: "The round's index in Run.toolRounds." }),
    callId: t.exposeID('callId', { description: 'The call.' }),
    server: t.exposeString('server', { description: 'The MCP server (its label).' }),
    output: t.exposeString('output', { description: 'What the model is given: the content, then the structured content as JSON.' }),
    isError: t.exposeBoolean('isError', { description: 'The tool failed, could not be reached, or the call was declined.' }),
    durationMs: t.exposeInt('durationMs', { nullable: true, description: 'How long the call took; null when it was not made.' }),
  }),
})

builder.objectRef<Of<'STEER_ACCEPTED'>>('SteerAcceptedEvent').implement({
  description: 'A steer was accepted; it is applied at the next token boundary (SteerAppliedEvent).',
  interfaces: [SessionEventRef],
  fields: (t) => ({
    steerId: t.exposeID('steerId', { description: 'Your id for the steer.' }),
    queueId: t.exposeID('queueId', { description: 'The entry it steers.' }),
    runId: t.id({ description: 'The run that will apply it.', resolve: (e) => e.runId! }),
  }),
})

builder.objectRef<Of<'STEER_APPLIED'>>('SteerAppliedEvent').implement({
  description: 'The steer text went to the model as user input; the tokens after this event answer it.',
  interfaces: [SessionEventRef],
  fields: (t) => ({
    steerId: t.exposeID('steerId', { description: 'Your id for the steer.' }),
    runId: t.id({ description: 'The run that applied it.', resolve: (e) => e.runId! }),
  }),
})

builder.objectRef<Of<'MESSAGE_CREATED'>>('MessageCreatedEvent').implement({
  description: 'A message was added to the conversation.',
  interfaces: [SessionEventRef],
  fields: (t) => ({
    runId: t.id({ description: 'The run whose turn added it.', resolve: (e) => e.runId! }),
    message: t.field({ type: MessageRef, description: 'The new message.', resolve: (e) => e.message }),
  }),
})

builder.objectRef<Of<'RUN_FINISHED'>>('RunFinishedEvent').implement({
  description: 'A run ended; the last event of its runEvents stream.',
  interfaces: [SessionEventRef],
  fields: (t) => ({
    runId: t.id({ description: 'The run that ended.', resolve: (e) => e.run.id }),
    run: t.field({ type: RunRef, description: 'The run as it ended.', resolve: (e) => e.run }),
  }),
})

builder.subscriptionType({
  description: 'Live streams over graphql-ws or SSE; each resumes without loss from the last sequence seen.',
  fields: (t) => ({
    sessionEvents: t.field({
      type: SessionEventRef,
      description: 'Every event of a session, in order: after afterSequence (replayed, then live), or from now on.',
      args: {
        sessionId: t.arg.id({ required: true, description: 'The session to follow.' }),
        afterSequence: t.arg.int({ description: 'Replay the events after this sequence first; absent: only events from now on.' }),
      },
      subscribe: (_root, { sessionId, afterSequence }, ctx) =>
        ctx.services.runs.sessionEvents(ctx.tenantId, String(sessionId), afterSequence ?? null),
      resolve: (event) => event,
    }),
    runEvents: t.field({
      type: SessionEventRef,
      description: 'The events of one run after afterSequence (from its start by default); completes after its RunFinishedEvent.',
      args: {
        runId: t.arg.id({ required: true, description: 'The run to follow.' }),
        afterSequence: t.arg.int({ description: "Replay the run's events after this sequence first (default 0: from its start)." }),
      },
      subscribe: (_root, { runId, afterSequence }, ctx) => ctx.services.runs.runEvents(ctx.tenantId, String(runId), afterSequence ?? null),
      resolve: (event) => event,
    }),
  }),
})
