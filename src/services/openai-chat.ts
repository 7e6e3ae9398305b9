import { randomUUID } from 'node:crypto'
import { z } from 'zod'
import type { Principal } from '../domain/access.js'
import type { ContentPart } from '../domain/content-parts.js'
import { InvalidRequestError } from '../domain/errors.js'
import type { SessionEvent } from '../domain/events.js'
import type { ChatMessage, RunRecord } from '../domain/records.js'
import type { RequestTiming } from '../domain/request-timing.js'
import { type ChatChunk, chatChunks, wholeCompletion } from './openai-chat-chunks.js'
import {
  mediaPart,
  metadataSchema,
  modelTarget,
  outputFields,
  parseBody,
  promptVariablesSchema,
  refuseUnsupported,
  runWaitingFor,
  toolFields,
  UnsupportedParameterError,
  userTag,
} from './openai-shapes.js'
import type { RunService } from './run-service.js'
import type { SessionService } from './session-service.js'

/** Parameters promptline cannot honour: refused with 400 `unsupported_parameter`, never dropped. */
const UNSUPPORTED = ['logprobs', 'top_logprobs', 'audio', 'prediction', 'logit_bias', 'modalities', 'functions', 'function_call']

const partSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text'), text: z.string() }),
  z.object({ type: z.literal('image_url'), image_url: z.object({ url: z.string(), detail: z.string().nullish() }) }),
  z.object({ type: z.literal('file'), file: z.object({ file_id: z.string() }) }),
])

const toolCallSchema = z.object({
  id: z.string(),
  type: z.literal('function'),
  function: z.object({ name: z.string(), arguments: z.string() }),
})

const messageSchema = z.discriminatedUnion('role', [
  z.object({ role: z.enum(['system', 'developer', 'user']), content: z.union([z.string(), z.array(partSchema)]) }),
  z.object({
    role: z.literal('assistant'),
    content: z.union([z.string(), z.array(partSchema)]).nullish(),
    tool_calls: z.array(toolCallSchema).nullish(),
  }),
  z.object({ role: z.literal('tool'), content: z.union([z.string(), z.array(partSchema)]), tool_call_id: z.string() }),
])

const functionSchema = z.object({
  name: z.string(),
  description: z.string().nullish(),
  parameters: z.record(z.string(), z.unknown()).nullish(),
  strict: z.boolean().nullish(),
})

const chatSchema = z
  .object({
    model: z.string().min(1).max(256),
    messages: z.array(messageSchema).max(1000),
    stream: z.boolean().nullish(),
    stream_options: z.object({ include_usage: z.boolean().nullish() }).passthrough().nullish(),
    temperature: z.number().min(0).max(2).nullish(),
    top_p: z.number().min(0).max(1).nullish(),
    max_tokens: z.number().int().min(1).nullish(),
    max_completion_tokens: z.number().int().min(1).nullish(),
    stop: z.union([z.string(), z.array(z.string()).max(4)]).nullish(),
    n: z.number().int().nullish(),
    seed: z.number().int().nullish(),
    user: z.string().max(256).nullish(),
    tools: z
      .array(z.object({ type: z.literal('function'), function: functionSchema }))
      .max(128)
      .nullish(),
    tool_choice: z
      .union([z.enum(['auto', 'none', 'required']), z.object({ type: z.literal('function'), function: z.object({ name: z.string() }) })])
      .nullish(),
    parallel_tool_calls: z.boolean().nullish(),
    response_format: z
      .object({
        type: z.string(),
        json_schema: z
          .object({ name: z.string().nullish(), schema: z.record(z.string(), z.unknown()).nullish() })
          .passthrough()
          .nullish(),
      })
      .nullish(),
    profile: z.string().nullish(),
    prompt_variables: promptVariablesSchema,
    metadata: metadataSchema,
  })
  .passthrough()

type ChatRequest = z.infer<typeof chatSchema>

/** What answering a request is told: its client leaving, and where its time goes. */
interface Answering {
  signal: AbortSignal
  timing: RequestTiming
}

/** What the HTTP layer answers: a whole completion, or chunks to stream. */
export type ChatAnswer = { runId: string; completion: Record<string, unknown> } | { runId: string; chunks: AsyncIterable<ChatChunk> }

/**
 * OpenAI's Chat Completions onto ordinary runs. A request is a run in a session of its own, the
 * messages its conversation; one whose messages end answering a waiting run's tool calls gives
 * that run its results instead, and answers with its next round.
 */
export class OpenAIChatService {
  constructor(
    private readonly runs: RunService,
    private readonly sessions: SessionService,
  ) {}

  /** `POST /v1/chat/completions`: the run, whole or as chunks as it streams; `timing` is told of its stages. */
  async complete(principal: Principal, body: unknown, signal: AbortSignal, timing: RequestTiming): Promise<ChatAnswer> {
    const request = parseChat(body)
    const messages = request.messages.map(chatMessageOf)
    const waiting = await this.waitingFor(principal, messages)
    const at = { signal, timing }
    if (waiting) return this.resume(principal, request, waiting, messages, at)
    const sessionId = `chatcmpl-${randomUUID()}`
    await this.sessions.create(principal.tenantId, { id: sessionId, title: 'POST /v1/chat/completions' })
    try {
      return await this.start(principal, request, sessionId, messages, at)
    } catch (error) {
      // refused (a budget, a limit, a missing model): the session made for it holds nothing
      await this.sessions.delete(principal.tenantId, sessionId).catch(() => {})
      throw error
    }
  }

  private async start(principal: Principal, request: ChatRequest, sessionId: string, messages: ChatMessage[], at: Answering) {
    const events = (await this.runs.sessionEvents(principal.tenantId, sessionId, 0))[Symbol.asyncIterator]()
    const input = {
      sessionId,
      ...modelTarget(request.model, request.profile),
      ...(messages.length > 0 && { messages }),
      variables: request.prompt_variables ?? request.metadata?.prompt_variables ?? null,
      overrides: overridesOf(request),
      ...toolFields(
        request.tools?.map((t) => t.function),
        choiceOf(request),
        request.parallel_tool_calls,
      ),
      ...userTag(request.user),
      ...outputFields(formatOf(request), 'response_format'),
    }
    const entry = await this.runs.enqueue(principal, input, 'ENQUEUE', null, 'OPENAI_CHAT').catch(async (error: unknown) => {
      await events.return?.()
      throw error
    })
    at.timing.admitted()
    return this.answer(principal, request, events, { sessionId, queueId: entry.queueId }, at)
  }

  /** Submits the results the messages end with to the run waiting for them, then answers its next round. */
  private async resume(principal: Principal, request: ChatRequest, run: RunRecord, messages: ChatMessage[], at: Answering) {
    const { tenantId } = principal
    const results = trailingResults(messages).map((m) => ({ callId: m.toolCallId!, output: m.content, isError: m.isError ?? null }))
    // from the run's start: its next round may stream before a live subscription would attach
    const events = (await this.runs.runEvents(tenantId, run.id, 0))[Symbol.asyncIterator]()
    try {
      await this.runs.submitToolResults(tenantId, { runId: run.id, results })
    } catch (error) {
      await events.return?.()
      throw error
    }
    at.timing.admitted()
    return this.answer(principal, request, events, { sessionId: run.sessionId!, queueId: run.queueId! }, at, run)
  }

  private async answer(
    principal: Principal,
    request: ChatRequest,
    events: AsyncIterator<SessionEvent>,
    entry: { sessionId: string; queueId: string },
    { signal, timing }: Answering,
    resumed: RunRecord | null = null,
  ): Promise<ChatAnswer> {
    const { tenantId } = principal
    // a client that goes away stops its run: nobody else can read its answer
    const stop = () => void this.runs.cancel(tenantId, entry.sessionId, entry.queueId).catch(() => {})
    signal.addEventListener('abort', stop, { once: true })
    const paused = (runId: string) => this.runs.run(tenantId, runId)
    const includeUsage = !request.stream || (request.stream_options?.include_usage ?? false)
    // the answer as the run kept it: whole, or once its output contract held
    const holdText = !request.stream || formatOf(request) !== null
    const chunks = chatChunks(events, { model: request.model, includeUsage, holdText, resumed, paused, stop, timing })
    const { runId, stream } = await chunks
    if (request.stream) return { runId, chunks: stream }
    return { runId, completion: await wholeCompletion(stream) }
  }

  /** The run of this key waiting for exactly the results the messages end with; null when none is. */
  private waitingFor(principal: Principal, messages: ChatMessage[]): Promise<RunRecord | null> {
    const answered = new Set(trailingResults(messages).map((m) => m.toolCallId!))
    return runWaitingFor(this.runs, principal, 'OPENAI_CHAT', answered)
  }
}

function parseChat(body: unknown): ChatRequest {
  const request = parseBody(chatSchema, body)
  refuseUnsupported(request, UNSUPPORTED)
  if ((request.n ?? 1) !== 1) throw new UnsupportedParameterError('promptline answers one choice: n must be 1', 'n')
  const last = request.messages.at(-1)
  if (!last && !request.model.startsWith('prompt:'))
    throw InvalidRequestError.at('messages', 'must hold at least one message (only a prompt:<id> model runs with none)')
  if (last?.role === 'assistant') throw InvalidRequestError.at('messages', 'the last message must not be an assistant message')
  return request
}

/** The request's settings as a run's overrides. */
function overridesOf(request: ChatRequest) {
  const maxTokens = request.max_completion_tokens ?? request.max_tokens
  return {
    ...(request.temperature != null && { temperature: request.temperature }),
    ...(request.top_p != null && { topP: request.top_p }),
    ...(request.seed != null && { seed: request.seed }),
    ...(maxTokens != null && { maxTokens }),
    ...(request.stop != null && { stop: typeof request.stop === 'string' ? [request.stop] : request.stop }),
  }
}

function formatOf(request: ChatRequest) {
  const format = request.response_format
  if (!format || format.type === 'text') return null
  return { type: format.type, schema: format.json_schema?.schema ?? null }
}

function choiceOf(request: ChatRequest) {
  const choice = request.tool_choice
  return typeof choice === 'object' && choice !== null ? { name: choice.function.name } : choice
}

type MessagePart = z.infer<typeof partSchema>

/** A message's text, and its image and file parts. */
function contentOf(content: string | MessagePart[] | null | undefined): { content: string; parts?: ContentPart[] } {
  if (typeof content === 'string' || content == null) return { content: content ?? '' }
  const text = content.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('')
  const parts = content.flatMap((p) => {
    if (p.type === 'image_url') return [mediaPart('IMAGE', { url: p.image_url.url, detail: p.image_url.detail })]
    if (p.type === 'file') return [mediaPart('FILE', { fileId: p.file.file_id })]
    return []
  })
  return parts.length > 0 ? { content: text, parts } : { content: text }
}

/** A request message as a run's conversation message. */
function chatMessageOf(message: ChatRequest['messages'][number]): ChatMessage {
  if (message.role === 'tool') return { role: 'tool', toolCallId: message.tool_call_id, ...contentOf(message.content) }
  if (message.role === 'assistant') {
    const toolCalls = (message.tool_calls ?? []).map((c) => ({ callId: c.id, name: c.function.name, arguments: c.function.arguments }))
    return { role: 'assistant', ...contentOf(message.content), ...(toolCalls.length > 0 && { toolCalls }) }
  }
  return { role: message.role === 'developer' ? 'system' : message.role, ...contentOf(message.content) }
}

/** The tool messages the conversation ends with. */
function trailingResults(messages: ChatMessage[]): ChatMessage[] {
  const after = messages.findLastIndex((m) => m.role !== 'tool')
  return messages.slice(after + 1)
}
