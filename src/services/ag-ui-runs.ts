import { contentToText, type Message, type ResumeEntry, type RunAgentInput } from '@ag-ui/core'
import { RunAgentInputSchema } from '@ag-ui/core/schemas'
import { z } from 'zod'
import { type Principal, recordedKeyId } from '../domain/access.js'
import { idSchema, parseInput } from '../domain/definitions.js'
import { InvalidRequestError, NotFoundError } from '../domain/errors.js'
import type { ChatMessage, RunRecord } from '../domain/records.js'
import { answersExactly } from '../domain/tool-rounds.js'
import { type AgUiRun, agUiStream, type EventCursor, type SequencedEvent, type StreamStart } from './ag-ui-events.js'
import { toolFields } from './openai-shapes.js'
import type { RunService } from './run-service.js'
import type { SessionService } from './session-service.js'

/** How many of a thread's latest runs a repeated `runId` is looked for in. */
const RECENT_RUNS = 20

/** What `forwardedProps` may choose: a prompt (at a label), a profile, variables. */
const forwardedSchema = z
  .object({
    promptId: idSchema.nullish(),
    label: z.string().min(1).max(64).nullish(),
    profileId: idSchema.nullish(),
    variables: z.record(z.string(), z.unknown()).nullish(),
  })
  .passthrough()
  .nullish()

/** An AG-UI message as a run's conversation message. */
function chatMessageOf(message: Message): ChatMessage {
  const content = 'content' in message ? contentToText(message.content as never) : ''
  if (message.role === 'tool') return { role: 'tool', content, toolCallId: message.toolCallId }
  if (message.role === 'assistant') {
    const toolCalls = (message.toolCalls ?? []).map((c) => ({ callId: c.id, name: c.function.name, arguments: c.function.arguments }))
    return { role: 'assistant', content, ...(toolCalls.length > 0 && { toolCalls }) }
  }
  return { role: message.role === 'user' ? 'user' : 'system', content }
}

/**
 * AG-UI's `POST /ag-ui` onto ordinary runs: a thread is a session, an AG-UI run a queue entry
 * admitted with its `runId` as the idempotency key (the same `runId` again is the same entry),
 * client tools pause the run; the stream is computed from the session's log, so a client that
 * reconnects with Last-Event-ID gets exactly the events after it.
 */
export class AgUiRunService {
  constructor(
    private readonly runs: RunService,
    private readonly sessions: SessionService,
  ) {}

  /** The AG-UI events of the run `body` asks for; after `lastEventId` when a client reconnects. */
  async run(principal: Principal, body: unknown, lastEventId: EventCursor | null): Promise<AsyncIterable<SequencedEvent>> {
    const parsed = RunAgentInputSchema.safeParse(body)
    if (!parsed.success) throw InvalidRequestError.at(parsed.error.issues[0]?.path.join('.') || 'body', parsed.error.issues[0]!.message)
    const input = parsed.data as RunAgentInput
    const run = { threadId: parseInput(idSchema, input.threadId, 'threadId'), runId: input.runId }
    if (lastEventId !== null) return this.attach(principal.tenantId, run, lastEventId)
    const known = await this.sessions.get(principal.tenantId, run.threadId)
    if (!known) await this.sessions.create(principal.tenantId, { id: run.threadId, title: 'AG-UI thread' })
    const stored = known ? (await this.sessions.messages(principal.tenantId, run.threadId)).length : 0
    const added = input.messages.slice(stored).map(chatMessageOf)
    if (input.resume && input.resume.length > 0) return this.decide(principal, run, input.resume)
    const waiting = await this.waitingFor(principal.tenantId, run.threadId, added)
    if (waiting) return this.resume(principal.tenantId, run, waiting, added)
    if (added.length === 0) return this.replay(principal.tenantId, run)
    const forwarded = parseInput(forwardedSchema, input.forwardedProps, 'forwardedProps')
    const admission = {
      sessionId: run.threadId,
      idempotencyKey: run.runId,
      messages: added,
      ...(forwarded?.promptId ? { promptRef: { id: forwarded.promptId, ...(forwarded.label && { label: forwarded.label }) } } : {}),
      profileId: forwarded?.profileId ?? null,
      variables: forwarded?.variables ?? null,
      ...toolFields(input.tools, null, null),
    }
    const entry = await this.runs.enqueue(principal, admission, 'ENQUEUE', null, 'AG_UI')
    const started = await this.runs.startedRun(principal.tenantId, entry.queueId)
    if (!started) throw new NotFoundError('run', `of AG-UI run '${run.runId}' (cancelled before it started)`)
    return this.stream(principal.tenantId, run, started.id, { rounds: 0, cursor: null })
  }

  /** The same `runId` again, with nothing new: that AG-UI run's stream once more, from its start. */
  private async replay(tenantId: string, run: AgUiRun) {
    const entry = await this.runs.entryByIdempotencyKey(tenantId, run.threadId, run.runId)
    const started = entry && (await this.runs.startedRun(tenantId, entry.queueId))
    if (started) return this.stream(tenantId, run, started.id, { rounds: 0, cursor: null })
    // an AG-UI run that answered tool calls or approvals is the rounds after the one its runId keyed
    for (const recent of await this.runs.runs(tenantId, { sessionId: run.threadId }, null, RECENT_RUNS)) {
      const keyed = recent.toolRounds.findIndex(
        (round) =>
          round.results.some((r) => r.idempotencyKey === run.runId) || round.calls.some((c) => c.decision?.idempotencyKey === run.runId),
      )
      if (keyed >= 0) return this.stream(tenantId, run, recent.id, { rounds: keyed + 1, cursor: null })
    }
    throw InvalidRequestError.at(
      'messages',
      `has no message past the thread’s stored history, and run '${run.runId}' is not one of its runs`,
    )
  }

  /** Gives the waiting run the tool results the messages end with; the stream goes on from there. */
  private async resume(tenantId: string, run: AgUiRun, waiting: RunRecord, added: ChatMessage[]) {
    const results = added.filter((m) => m.role === 'tool').map((m) => ({ callId: m.toolCallId!, output: m.content }))
    await this.runs.submitToolResults(tenantId, { runId: waiting.id, results, idempotencyKey: run.runId })
    return this.stream(tenantId, run, waiting.id, { rounds: waiting.toolRounds.length, cursor: null })
  }

  /** Answers the thread's waiting run's approval interrupts (resolved with `approve` not false: approved); the stream goes on from there. */
  private async decide(principal: Principal, run: AgUiRun, resume: ResumeEntry[]) {
    const { tenantId } = principal
    const [waiting] = await this.runs.runs(tenantId, { sessionId: run.threadId, status: 'REQUIRES_ACTION' }, null, 1)
    if (!waiting) throw InvalidRequestError.at('resume', `thread '${run.threadId}' has no run waiting for an answer`)
    const decisions = resume.map(({ interruptId, status, payload }) => ({
      callId: interruptId,
      approve: status === 'resolved' && (payload as { approve?: unknown } | undefined)?.approve !== false,
      reason: typeof payload?.reason === 'string' ? payload.reason : null,
    }))
    await this.runs.approveToolCalls(tenantId, recordedKeyId(principal), { runId: waiting.id, decisions, idempotencyKey: run.runId })
    return this.stream(tenantId, run, waiting.id, { rounds: waiting.toolRounds.length, cursor: null })
  }

  /** A reconnecting client's stream: the run of the event at its cursor, after that event. */
  private async attach(tenantId: string, run: AgUiRun, cursor: EventCursor) {
    const { sequence } = cursor
    const events = (await this.runs.sessionEvents(tenantId, run.threadId, sequence - 1))[Symbol.asyncIterator]()
    const at = await events.next().finally(() => events.return?.())
    if (at.done || at.value.sequence !== sequence || !at.value.runId)
      throw InvalidRequestError.at('Last-Event-ID', `no event ${sequence} of a run in thread '${run.threadId}'`)
    return this.stream(tenantId, run, at.value.runId, { rounds: 0, cursor })
  }

  private async stream(tenantId: string, run: AgUiRun, runId: string, from: StreamStart) {
    const events = (await this.runs.runEvents(tenantId, runId, 0))[Symbol.asyncIterator]()
    return agUiStream(events, run, runId, from)
  }

  /** The thread's run waiting for exactly the tool results the new messages carry; null when none is. */
  private async waitingFor(tenantId: string, threadId: string, added: ChatMessage[]): Promise<RunRecord | null> {
    const answered = new Set(added.filter((m) => m.role === 'tool').map((m) => m.toolCallId))
    if (answered.size === 0) return null
    const [waiting] = await this.runs.runs(tenantId, { sessionId: threadId, status: 'REQUIRES_ACTION' }, null, 1)
    return waiting && answersExactly(waiting, answered) ? waiting : null
  }
}
