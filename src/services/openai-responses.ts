import { randomUUID } from 'node:crypto'
import type { Principal } from '../domain/access.js'
import { InvalidRequestError, NotFoundError } from '../domain/errors.js'
import type { ChatMessage, RunRecord } from '../domain/records.js'
import type { RequestTiming } from '../domain/request-timing.js'
import { pendingCalls } from '../domain/tool-rounds.js'
import {
  conversationOf,
  inputItemsOf,
  parseResponseRequest,
  promptRefOf,
  type ResponseRequest,
  referencedIdsOf,
  trailingOutputsOf,
} from './openai-response-input.js'
import { parseResponseId, type ResponseRef, referencedText, responseOf, responseStream } from './openai-response-shape.js'
import { modelTarget, outputFields, runWaitingFor, toolFields, userTag } from './openai-shapes.js'
import type { RunService } from './run-service.js'
import type { SessionService } from './session-service.js'

type StreamEvent = { type: string } & Record<string, unknown>

/** What the HTTP layer answers: a response object, or its events to stream; with its run once it has one. */
export type ResponseAnswer = { runId: string | null } & ({ response: Record<string, unknown> } | { events: AsyncIterable<StreamEvent> })

/**
 * OpenAI's Responses onto ordinary runs. A response is a run's segment (`ResponseRef`) in a
 * session: a new one, or the session of `previous_response_id` or `conversation`, so any
 * instance reads it from the store and the session's log at once.
 */
export class OpenAIResponsesService {
  constructor(
    private readonly runs: RunService,
    private readonly sessions: SessionService,
  ) {}

  /** `POST /v1/responses`; `timing` is told of its admission and, answered whole, its run's end. */
  async create(principal: Principal, body: unknown, signal: AbortSignal, timing: RequestTiming): Promise<ResponseAnswer> {
    const request = parseResponseRequest(body)
    const ref = await this.admit(principal, request)
    timing.admitted()
    const background = request.background ?? false
    // a foreground response's client that goes away stops its run: nobody else reads it
    const stop = background ? () => {} : () => void this.cancel(principal, ref).catch(() => {})
    signal.addEventListener('abort', stop, { once: true })
    if (background && !request.stream) return { runId: null, response: responseOf(ref, null) }
    const answer = await this.events(principal, ref, -1, stop)
    if (request.stream || !('events' in answer)) return answer
    let last: StreamEvent | null = null
    for await (const event of answer.events) last = event
    const ran = answer.runId ? await this.runs.run(principal.tenantId, answer.runId) : null
    if (ran) timing.ran(ran)
    return { runId: answer.runId, response: last?.response as Record<string, unknown> }
  }

  /** `GET /v1/responses/{id}`: the response as it is now, or its events after `startingAfter`. */
  async retrieve(principal: Principal, id: string, stream: boolean, startingAfter: number): Promise<ResponseAnswer> {
    const { ref, run } = await this.find(principal, id)
    if (stream) return this.events(principal, ref, startingAfter, () => {})
    return { runId: run?.id ?? null, response: responseOf(ref, run) }
  }

  /** `POST /v1/responses/{id}/cancel`: aborts its run (or its queued entry); answers once that is durable. */
  async cancelResponse(principal: Principal, id: string): Promise<Record<string, unknown>> {
    const { ref } = await this.find(principal, id)
    return this.cancel(principal, ref)
  }

  /** `GET /v1/responses/{id}/input_items`. */
  async inputItems(principal: Principal, id: string, order: string | null) {
    const { ref, run } = await this.find(principal, id)
    const request = run ? await this.runs.requestOf(principal.tenantId, run.id) : null
    const items = inputItemsOf(run?.id ?? ref.queueId, ref.segment, request, run?.toolRounds ?? [])
    const data = order === 'asc' ? items : items.reverse()
    return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: false }
  }

  private async cancel(principal: Principal, ref: ResponseRef) {
    const { tenantId } = principal
    const found = await this.runs.entryById(tenantId, ref.queueId)
    if (!found) throw new NotFoundError('response', ref.queueId)
    if (found.run) return responseOf(ref, (await this.runs.abortRun(tenantId, found.run.id, 'cancelled through the OpenAI API')).run)
    const { entry } = await this.runs.cancel(tenantId, found.sessionId, ref.queueId)
    const run = entry.runId ? await this.runs.run(tenantId, entry.runId) : null
    return run ? responseOf(ref, run) : { ...responseOf(ref, null), status: 'cancelled' }
  }

  private async find(principal: Principal, id: string): Promise<{ ref: ResponseRef; run: RunRecord | null; sessionId: string }> {
    const ref = parseResponseId(id)
    const found = await this.runs.entryById(principal.tenantId, ref.queueId)
    if (!found || ref.segment > (found.run?.toolRounds.length ?? 0)) throw new NotFoundError('response', id)
    return { ref, run: found.run, sessionId: found.sessionId }
  }

  /**
   * Gives a waiting run the function_call_output items the input ends with, when they answer
   * exactly what it waits for; else enqueues the request, its input the run's conversation.
   */
  private async admit(principal: Principal, request: ResponseRequest): Promise<ResponseRef> {
    const { tenantId } = principal
    const outputs = trailingOutputsOf(request)
    const chained = request.previous_response_id != null || request.conversation != null
    // a stateless client resends the whole history: its outputs continue the run that asked for them
    const resumed = chained || outputs.length === 0 ? null : await this.resume(principal, null, outputs)
    if (resumed) return resumed
    const { sessionId, made, previous } = await this.sessionOf(principal, request)
    if (chained && outputs.length > 0) {
      const waiting = await this.resume(principal, previous ?? (await this.waitingIn(tenantId, sessionId)), outputs)
      if (!waiting) throw InvalidRequestError.at('input', 'no response waits for these function_call_output items')
      return waiting
    }
    try {
      const input = { sessionId, ...(await this.runInput(principal, request)) }
      const entry = await this.runs.enqueue(principal, input, 'ENQUEUE', null, 'OPENAI_RESPONSES')
      return { queueId: entry.queueId, segment: 0 }
    } catch (error) {
      // refused (a budget, a limit, a missing model): the session made for it holds nothing
      if (made) await this.sessions.delete(tenantId, sessionId).catch(() => {})
      throw error
    }
  }

  /** Submits `outputs` to `waiting` (or to the run of this key waiting for exactly them); its next segment. */
  private async resume(principal: Principal, waiting: RunRecord | null, outputs: { callId: string; output: string }[]) {
    const answered = new Set(outputs.map((o) => o.callId))
    const run = waiting ?? (await runWaitingFor(this.runs, principal, 'OPENAI_RESPONSES', answered))
    if (run?.status !== 'REQUIRES_ACTION' || pendingCalls(run.toolRounds.at(-1)!).length === 0) return null
    await this.runs.submitToolResults(principal.tenantId, { runId: run.id, results: outputs })
    return { queueId: run.queueId!, segment: run.toolRounds.length }
  }

  /** The run request's fields the body gives, its referenced items read from their runs. */
  private async runInput(principal: Principal, request: ResponseRequest) {
    const referenced = new Map<string, ChatMessage>()
    for (const id of referencedIdsOf(request)) {
      const text = await referencedText(id, (runId) => this.runs.run(principal.tenantId, runId).catch(() => null))
      if (text !== null) referenced.set(id, { role: 'assistant', content: text })
    }
    return {
      ...(request.prompt
        ? { promptRef: promptRefOf(request.prompt), profileId: request.profile ?? profileModel(request.model) }
        : modelTarget(request.model!, request.profile)),
      messages: conversationOf(request, referenced),
      variables: request.prompt?.variables ?? request.metadata?.prompt_variables ?? null,
      overrides: overridesOf(request),
      ...toolFields(
        request.tools?.map((t) => ({ ...t, name: t.name! })),
        typeof request.tool_choice === 'object' && request.tool_choice ? { name: request.tool_choice.name } : request.tool_choice,
        request.parallel_tool_calls,
      ),
      ...userTag(request.user),
      ...outputFields(request.text?.format, 'text.format'),
    }
  }

  /** The session a request continues (with the previous response's run), or a new one. */
  private async sessionOf(principal: Principal, request: ResponseRequest) {
    const { tenantId } = principal
    if (request.previous_response_id != null) {
      const { run, sessionId } = await this.find(principal, request.previous_response_id).catch(() => {
        throw InvalidRequestError.at('previous_response_id', `no response '${request.previous_response_id}'`)
      })
      return { sessionId, made: false, previous: run }
    }
    if (request.conversation != null) {
      const id = typeof request.conversation === 'string' ? request.conversation : request.conversation.id
      await this.sessions.require(tenantId, id, 'conversation')
      return { sessionId: id, made: false, previous: null }
    }
    const sessionId = `resp-${randomUUID()}`
    await this.sessions.create(tenantId, { id: sessionId, title: 'POST /v1/responses' })
    return { sessionId, made: true, previous: null }
  }

  /** The session's run waiting for tool results, if one is. */
  private async waitingIn(tenantId: string, sessionId: string): Promise<RunRecord | null> {
    return (await this.runs.runs(tenantId, { sessionId, status: 'REQUIRES_ACTION' }, null, 1))[0] ?? null
  }

  /** The segment's events after `startingAfter`, once its run has started; `stop` if the reader leaves before its end. */
  private async events(principal: Principal, ref: ResponseRef, startingAfter: number, stop: () => void): Promise<ResponseAnswer> {
    const { tenantId } = principal
    const run = await this.runs.startedRun(tenantId, ref.queueId)
    if (!run) return { runId: null, events: ended(ref, startingAfter) }
    // an answer held to an output contract comes whole, as the run kept it
    const holdText = ((await this.runs.requestOf(tenantId, run.id))?.output?.kind ?? 'TEXT') !== 'TEXT'
    const events = (await this.runs.runEvents(tenantId, run.id, 0))[Symbol.asyncIterator]()
    const stream = responseStream(events, ref, run, { now: () => this.runs.run(tenantId, run.id), startingAfter, holdText })
    return { runId: run.id, events: stoppedEarly(stream, stop) }
  }
}

/** `model` beside a `prompt`: the profile that runs it, unless it names a prompt too. */
const profileModel = (model: string | null | undefined) => (model && !model.startsWith('prompt:') ? model : null)

function overridesOf(request: ResponseRequest) {
  return {
    ...(request.temperature != null && { temperature: request.temperature }),
    ...(request.top_p != null && { topP: request.top_p }),
    ...(request.max_output_tokens != null && { maxTokens: request.max_output_tokens }),
    ...(request.reasoning?.effort != null && { reasoningEffort: request.reasoning.effort }),
  }
}

/** The stream of a response whose entry ended before its run started. */
async function* ended(ref: ResponseRef, startingAfter: number): AsyncGenerator<StreamEvent> {
  const response = { ...responseOf(ref, null), status: 'cancelled' }
  const events = [
    { type: 'response.created', response },
    { type: 'response.failed', response },
  ]
  for (const [i, event] of events.entries()) if (i > startingAfter) yield { ...event, sequence_number: i }
}

/** `stream`, calling `stop` when its reader leaves before it ends. */
async function* stoppedEarly(stream: AsyncGenerator<StreamEvent>, stop: () => void): AsyncGenerator<StreamEvent> {
  let done = false
  try {
    yield* stream
    done = true
  } finally {
    if (!done) stop()
  }
}
