import { randomUUID } from 'node:crypto'
import { z } from 'zod'
import type { Principal } from '../domain/access.js'
import { idSchema } from '../domain/definitions.js'
import { InvalidRequestError, NotFoundError } from '../domain/errors.js'
import type { SessionEvent } from '../domain/events.js'
import type { FinishReason, MessageRecord, RunRecord } from '../domain/records.js'
import type { CatalogService } from './catalog-service.js'
import type { RunService } from './run-service.js'
import type { SessionService } from './session-service.js'

/** Parameters promptline cannot honour: refused with 400 `unsupported_parameter`, never dropped. */
const UNSUPPORTED = [
  'logprobs',
  'top_logprobs',
  'audio',
  'prediction',
  'logit_bias',
  'tools',
  'tool_choice',
  'functions',
  'function_call',
  'response_format',
  'modalities',
  'seed',
] as const

/** Text, or text parts (other kinds are refused). */
const contentSchema = z.union([z.string(), z.array(z.object({ type: z.literal('text'), text: z.string() }).passthrough())])

const messageSchema = z
  .object({ role: z.enum(['system', 'developer', 'user', 'assistant']), content: contentSchema.nullish() })
  .passthrough()

const chatSchema = z
  .object({
    model: idSchema,
    messages: z.array(messageSchema).min(1).max(1000),
    stream: z.boolean().nullish(),
    stream_options: z.object({ include_usage: z.boolean().nullish() }).passthrough().nullish(),
    temperature: z.number().min(0).max(2).nullish(),
    top_p: z.number().min(0).max(1).nullish(),
    max_tokens: z.number().int().min(1).nullish(),
    max_completion_tokens: z.number().int().min(1).nullish(),
    stop: z.union([z.string(), z.array(z.string()).max(4)]).nullish(),
    n: z.number().int().nullish(),
    user: z.string().max(256).nullish(),
  })
  .passthrough()

/** Where a chat completion's error points, as OpenAI names it (`param`). */
export class UnsupportedParameterError extends InvalidRequestError {}

/** What the HTTP layer answers: a whole completion, or chunks to stream. */
export type ChatAnswer =
  | { runId: string; completion: Record<string, unknown> }
  | { runId: string; chunks: AsyncIterable<Record<string, unknown>> }

const FINISH: Record<FinishReason, string> = {
  STOP: 'stop',
  LENGTH: 'length',
  TOOL_CALLS: 'tool_calls',
  CONTENT_FILTER: 'content_filter',
  REFUSAL: 'content_filter',
  OTHER: 'stop',
}

const textOf = (content: z.infer<typeof contentSchema> | null | undefined) =>
  typeof content === 'string' ? content : (content ?? []).map((part) => part.text).join('')

/** OpenAI's usage object from a run's. */
function usageOf(run: RunRecord) {
  const usage = run.usage ?? { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 }
  return {
    prompt_tokens: usage.inputTokens,
    completion_tokens: usage.outputTokens,
    total_tokens: usage.inputTokens + usage.outputTokens,
    prompt_tokens_details: { cached_tokens: usage.cacheReadTokens },
    completion_tokens_details: { reasoning_tokens: usage.reasoningTokens },
  }
}

/**
 * OpenAI's Chat Completions onto ordinary runs: each request is a run in a session of its own,
 * whose history is the request's messages before the last user message.
 */
export class OpenAIChatService {
  constructor(
    private readonly runs: RunService,
    private readonly sessions: SessionService,
    private readonly catalog: CatalogService,
  ) {}

  /** `GET /v1/models`: every profile of the tenant, by id. */
  async models(principal: Principal) {
    const profiles = await this.catalog.listProfiles(principal.tenantId)
    const allowed = principal.policy?.allowedProfiles
    return {
      object: 'list',
      data: profiles
        .filter((p) => !allowed || allowed.includes(p.id))
        .map((p) => ({ id: p.id, object: 'model', created: 0, owned_by: p.backendId })),
    }
  }

  /** `POST /v1/chat/completions`: the run, whole or as chunks as it streams. */
  async complete(principal: Principal, body: unknown, signal: AbortSignal): Promise<ChatAnswer> {
    const request = parseChat(body)
    const profile = await this.catalog.listProfiles(principal.tenantId).then((all) => all.find((p) => p.id === request.model))
    if (!profile) throw new NotFoundError('model', request.model)
    const last = request.messages.at(-1)!
    if (last.role !== 'user') throw InvalidRequestError.at('messages', 'the last message must be a user message')
    const sessionId = `chatcmpl-${randomUUID()}`
    const settings = { id: sessionId, title: 'POST /v1/chat/completions', defaultProfileId: profile.id }
    await this.sessions.openWith(principal.tenantId, settings, history(sessionId, request.messages.slice(0, -1)))
    const input = { sessionId, input: textOf(last.content), profileId: profile.id, overrides: overridesOf(request) }
    try {
      return await this.run(principal, request, input, signal)
    } catch (error) {
      // refused (a budget, a limit): the session made for it holds nothing
      await this.sessions.delete(principal.tenantId, sessionId).catch(() => {})
      throw error
    }
  }

  private async run(principal: Principal, request: ChatRequest, input: RunInput, signal: AbortSignal): Promise<ChatAnswer> {
    const { sessionId } = input
    if (!request.stream) {
      const { run } = await this.runs.runPrompt(principal, input, 'ENQUEUE', 3_600_000, 'OPENAI_CHAT')
      if (!run) throw new NotFoundError('run', sessionId)
      return { runId: run.id, completion: completionOf(run, request.model) }
    }
    const events = (await this.runs.sessionEvents(principal.tenantId, sessionId, 0))[Symbol.asyncIterator]()
    const entry = await this.runs.enqueue(principal, input, 'ENQUEUE', null, 'OPENAI_CHAT').catch(async (error: unknown) => {
      await events.return?.()
      throw error
    })
    // a client that goes away stops its run: nobody else can read its answer
    const stop = () => void this.runs.cancel(principal.tenantId, sessionId, entry.queueId).catch(() => {})
    signal.addEventListener('abort', stop, { once: true })
    const started = await startOf(events)
    const includeUsage = request.stream_options?.include_usage ?? false
    return { runId: started.id, chunks: chunksOf(events, started, request.model, includeUsage, stop) }
  }
}

type ChatRequest = z.infer<typeof chatSchema>
type RunInput = { sessionId: string; input: string; profileId: string; overrides: ReturnType<typeof overridesOf> }

function parseChat(body: unknown) {
  const parsed = chatSchema.safeParse(body)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!
    throw InvalidRequestError.at(issue.path.join('.') || 'body', issue.message)
  }
  const request = parsed.data
  for (const param of UNSUPPORTED)
    if ((request as Record<string, unknown>)[param] != null)
      throw new UnsupportedParameterError(`promptline does not support '${param}'`, param)
  if ((request.n ?? 1) !== 1) throw new UnsupportedParameterError('promptline answers one choice: n must be 1', 'n')
  return request
}

/** The request's settings as a run's overrides. */
function overridesOf(request: ChatRequest) {
  const maxTokens = request.max_completion_tokens ?? request.max_tokens
  return {
    ...(request.temperature != null && { temperature: request.temperature }),
    ...(request.top_p != null && { topP: request.top_p }),
    ...(maxTokens != null && { maxTokens }),
    ...(request.stop != null && { stop: typeof request.stop === 'string' ? [request.stop] : request.stop }),
  }
}

/** The messages before the last, as the new session's history. */
function history(sessionId: string, messages: z.infer<typeof messageSchema>[]): MessageRecord[] {
  const createdAt = new Date().toISOString()
  return messages.map((m, i) => ({
    id: randomUUID(),
    sessionId,
    position: i + 1,
    role: m.role === 'developer' ? 'system' : m.role,
    content: textOf(m.content),
    parts: [],
    toolCalls: [],
    toolCallId: null,
    runId: null,
    interrupted: false,
    createdAt,
  }))
}

function completionOf(run: RunRecord, model: string) {
  return {
    id: `chatcmpl-${run.id}`,
    object: 'chat.completion',
    created: Math.floor(Date.parse(run.startedAt) / 1000),
    model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: run.output ?? '', refusal: null },
        finish_reason: FINISH[run.finishReason ?? 'STOP'],
        logprobs: null,
      },
    ],
    usage: usageOf(run),
  }
}

/** Reads the session's events up to its run's start: the run (its id names the completion). */
async function startOf(events: AsyncIterator<SessionEvent>): Promise<RunRecord> {
  for (let next = await events.next(); !next.done; next = await events.next()) if (next.value.type === 'RUN_STARTED') return next.value.run
  throw new NotFoundError('run', 'of this completion')
}

/** The run's events as chunks: the role first, then its text, then its finish (and usage, when asked). */
async function* chunksOf(events: AsyncIterator<SessionEvent>, started: RunRecord, model: string, includeUsage: boolean, stop: () => void) {
  const id = `chatcmpl-${started.id}`
  const created = Math.floor(Date.parse(started.startedAt) / 1000)
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model,
    choices,
    ...extra,
  })
  let finished = false
  try {
    yield chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }])
    while (!finished) {
      const next = await events.next()
      if (next.done) return
      const event = next.value
      if (event.type === 'TOKEN_DELTA') yield chunk([{ index: 0, delta: { content: event.text }, finish_reason: null }])
      else if (event.type === 'RUN_FINISHED') {
        finished = true
        yield chunk([{ index: 0, delta: {}, finish_reason: FINISH[event.run.finishReason ?? 'STOP'] }])
        if (includeUsage) yield chunk([], { usage: usageOf(event.run) })
      }
    }
  } finally {
    // cancelled before the run ended: its client went away
    if (!finished) stop()
    await events.return?.()
  }
}
