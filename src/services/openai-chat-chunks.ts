import { type ErrorCode, NotFoundError, PromptlineError } from '../domain/errors.js'
import type { SessionEvent } from '../domain/events.js'
import type { FinishReason, RunRecord } from '../domain/records.js'
import type { RequestTiming } from '../domain/request-timing.js'
import { handsOver } from '../domain/tool-rounds.js'
import { usageOfRun } from './openai-shapes.js'

/** A run that ended failed, as an OpenAI error: its own code and message. */
class RunFailedError extends PromptlineError {
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message)
  }
}

interface ToolCallDelta {
  index: number
  id?: string
  type?: 'function'
  function: { name?: string; arguments: string }
}

interface ChunkChoice {
  index: 0
  delta: { role?: 'assistant'; content?: string; tool_calls?: ToolCallDelta[] }
  finish_reason: string | null
}

/** One `chat.completion.chunk`, or the error that ends a stream. */
export type ChatChunk =
  | {
      id: string
      object: 'chat.completion.chunk'
      created: number
      model: string
      choices: ChunkChoice[]
      usage?: ReturnType<typeof chatUsage>
    }
  | { error: { message: string; type: 'server_error'; code: string; param: null } }

const FINISH: Record<FinishReason, string> = {
  STOP: 'stop',
  LENGTH: 'length',
  TOOL_CALLS: 'tool_calls',
  CONTENT_FILTER: 'content_filter',
  REFUSAL: 'content_filter',
  OTHER: 'stop',
}

/** OpenAI's usage object from a run's (what it used so far). */
function chatUsage(run: RunRecord) {
  const usage = usageOfRun(run)
  return {
    prompt_tokens: usage.inputTokens,
    completion_tokens: usage.outputTokens,
    total_tokens: usage.inputTokens + usage.outputTokens,
    prompt_tokens_details: { cached_tokens: usage.cacheReadTokens },
    completion_tokens_details: { reasoning_tokens: usage.reasoningTokens },
    // what the run cost so far in USD, as OpenRouter reports it (null: unpriced)
    cost: run.costUsd,
  }
}

/** Why a run gave no answer a client can use (its error code in lower case): it failed, or its answer broke its output contract after every repair. */
export function failureOf(run: RunRecord): { code: string; message: string } | null {
  if (run.status === 'FAILED') return { code: (run.errorCode ?? 'INTERNAL').toLowerCase(), message: run.errorMessage ?? 'the run failed' }
  if (run.validation && !run.validation.valid) {
    return { code: 'validation', message: `the answer does not match the response format: ${run.validation.errors.join('; ')}` }
  }
  return null
}

export interface ChunkOptions {
  model: string
  /** The last chunk carries the usage. */
  includeUsage: boolean
  /** The text comes whole at the end, as the run kept it (validated against its output contract). */
  holdText: boolean
  /** The run given its tool results (its events from its start, its earlier rounds skipped); null: the run is the first to start. */
  resumed: RunRecord | null
  /** The run as it is once it waits for tool results. */
  paused: (runId: string) => Promise<RunRecord | null>
  /** Stops the run: its client went away before its answer ended. */
  stop: () => void
  /** Told of each token and of the run's end. */
  timing: RequestTiming
}

/** A session's events as one model round's chunks, once its run is known. */
export async function chatChunks(events: AsyncIterator<SessionEvent>, options: ChunkOptions) {
  const run = options.resumed ?? (await startOf(events))
  return { runId: run.id, stream: chunksOf(events, run, options) }
}

/** Reads the session's events up to its run's start: the run (its id names the completion). */
async function startOf(events: AsyncIterator<SessionEvent>): Promise<RunRecord> {
  for (let next = await events.next(); !next.done; next = await events.next()) if (next.value.type === 'RUN_STARTED') return next.value.run
  throw new NotFoundError('run', 'of this completion')
}

/**
 * The round's chunks: the role first, then its text and its tool calls (`index`, `id` and
 * `function.name` in a call's first fragment, `arguments` fragments after), then its finish: at
 * the run's end, or `tool_calls` when it waits for their results.
 */
async function* chunksOf(events: AsyncIterator<SessionEvent>, run: RunRecord, options: ChunkOptions): AsyncGenerator<ChatChunk> {
  const { model, includeUsage } = options
  const base = {
    id: `chatcmpl-${run.id}`,
    object: 'chat.completion.chunk' as const,
    created: Math.floor(Date.parse(run.startedAt) / 1000),
    model,
  }
  const delta = (d: ChunkChoice['delta'], finish: string | null = null): ChatChunk => ({
    ...base,
    choices: [{ index: 0, delta: d, finish_reason: finish }],
  })
  const calls = new Map<string, number>()
  // promptline makes an MCP server's calls itself: the client neither sees nor answers them
  const serverCalls = new Set<string>()
  let ended = false
  let roundsToSkip = options.resumed?.toolRounds.length ?? 0
  try {
    yield delta({ role: 'assistant', content: '' })
    while (!ended) {
      const next = await events.next()
      if (next.done) return
      const event = next.value
      if (roundsToSkip > 0) {
        if (event.type === 'TOOL_CALLS_REQUESTED') roundsToSkip--
        continue
      }
      if (event.type === 'TOKEN_DELTA') options.timing.token()
      if (event.type === 'TOKEN_DELTA' && !options.holdText) yield delta({ content: event.text })
      else if (event.type === 'TOOL_CALL_STARTED' && event.server !== null) serverCalls.add(event.callId)
      else if (event.type === 'TOOL_CALL_DELTA' && serverCalls.has(event.callId)) continue
      else if (event.type === 'TOOL_CALLS_REQUESTED' && !handsOver(event.calls)) continue
      else if (event.type === 'TOOL_CALL_STARTED') {
        calls.set(event.callId, calls.size)
        const call = { index: calls.size - 1, id: event.callId, type: 'function' as const, function: { name: event.name, arguments: '' } }
        yield delta({ tool_calls: [call] })
      } else if (event.type === 'TOOL_CALL_DELTA') {
        yield delta({ tool_calls: [{ index: calls.get(event.callId) ?? 0, function: { arguments: event.argumentsDelta } }] })
      } else if (event.type === 'TOOL_CALLS_REQUESTED' || event.type === 'RUN_FINISHED') {
        ended = true
        const now = event.type === 'RUN_FINISHED' ? event.run : ((await options.paused(run.id)) ?? run)
        options.timing.ran(now)
        const failure = failureOf(now)
        if (failure) {
          yield { error: { ...failure, type: 'server_error', param: null } }
          return
        }
        const kept = event.type === 'RUN_FINISHED' ? now.output : now.toolRounds.at(-1)?.text
        if (options.holdText && kept) yield delta({ content: kept })
        const finish = calls.size > 0 ? 'tool_calls' : FINISH[now.finishReason ?? 'STOP']
        yield delta({}, finish)
        if (includeUsage) yield { ...base, choices: [], usage: chatUsage(now) }
      }
    }
  } finally {
    if (!ended) options.stop()
    await events.return?.()
  }
}

/** The chunks folded into one `chat.completion`, as a non-streamed request answers. */
export async function wholeCompletion(chunks: AsyncIterable<ChatChunk>): Promise<Record<string, unknown>> {
  let head: Extract<ChatChunk, { id: string }> | null = null
  let content = ''
  const toolCalls: { id: string; type: 'function'; function: { name: string; arguments: string } }[] = []
  let finish: string | null = null
  let usage: unknown = null
  for await (const chunk of chunks) {
    if ('error' in chunk) throw new RunFailedError(chunk.error.code.toUpperCase() as ErrorCode, chunk.error.message)
    head ??= chunk
    if (chunk.usage) usage = chunk.usage
    for (const { delta, finish_reason } of chunk.choices) {
      content += delta.content ?? ''
      for (const call of delta.tool_calls ?? []) {
        toolCalls[call.index] ??= { id: call.id ?? '', type: 'function', function: { name: call.function.name ?? '', arguments: '' } }
        toolCalls[call.index]!.function.arguments += call.function.arguments
      }
      finish = finish_reason ?? finish
    }
  }
  if (!head) throw new NotFoundError('run', 'of this completion')
  const message = {
    role: 'assistant',
    content: content === '' && toolCalls.length > 0 ? null : content,
    refusal: null,
    ...(toolCalls.length > 0 && { tool_calls: toolCalls }),
  }
  return {
    id: head.id,
    object: 'chat.completion',
    created: head.created,
    model: head.model,
    choices: [{ index: 0, message, finish_reason: finish, logprobs: null }],
    usage,
  }
}
