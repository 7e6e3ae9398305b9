import type OpenAI from 'openai'
import type { ChatCompletion, ChatCompletionChunk } from 'openai/resources/chat/completions'
import type { CompletionUsage } from 'openai/resources/completions'
import { type Finish, type FinishReason, type Usage, usageOf } from '../domain/records.js'
import { ClientCache } from './client-cache.js'
import type { GenerateEvent, GenerateRequest, ModelClient } from './model-client.js'
import { classifyVendorError, vendorStreamError } from './provider-error.js'
import { type ServerSentEvent, STREAM_END } from './sse.js'
import { type AnswerReader, answerDeltas, vendorFetch } from './vendor-http.js'

/** OpenAI's usage, in ours: its prompt_tokens already include the cached ones. */
function openaiUsage(usage: CompletionUsage): Usage {
  return usageOf({
    inputTokens: usage.prompt_tokens,
    outputTokens: usage.completion_tokens,
    cacheReadTokens: usage.prompt_tokens_details?.cached_tokens ?? 0,
    reasoningTokens: usage.completion_tokens_details?.reasoning_tokens ?? 0,
  })
}

// OpenAI's finish_reason in ours (function_call is the deprecated form of tool_calls)
const FINISH_REASONS: Record<string, FinishReason> = {
  stop: 'STOP',
  length: 'LENGTH',
  tool_calls: 'TOOL_CALLS',
  function_call: 'TOOL_CALLS',
  content_filter: 'CONTENT_FILTER',
}

/** How the answer ended: a refusal, whatever finish_reason came with it, is REFUSAL. */
function openaiFinish(vendorReason: string | null, refusal: string): Finish {
  if (refusal !== '') return { reason: 'REFUSAL', vendorReason, refusal }
  return { reason: FINISH_REASONS[vendorReason ?? ''] ?? 'OTHER', vendorReason, refusal: null }
}

type ErrorChunk = { error?: { message?: string; type?: string | null; code?: string | null } }

/**
 * OpenAI chat completions, streamed with usage, through the official SDK. A backend's base URL
 * points it at any OpenAI-compatible server (vLLM, Ollama, LM Studio); without one the SDK's
 * default applies (OPENAI_BASE_URL included). Retries are ours, so the SDK makes none. The
 * SDK sends the request and raises its errors; the event stream is read by `serverSentEvents`
 * (linear, where the SDK's reader is quadratic in the events of one network chunk).
 */
export class OpenAIModelClient implements ModelClient {
  private readonly clients = new ClientCache<OpenAI>()

  async *generate(request: GenerateRequest, signal: AbortSignal): AsyncIterable<GenerateEvent> {
    const apiKey = request.credential.reveal() ?? ''
    const client = await this.clients.get(request.endpoint, apiKey, async () => {
      const { default: OpenAI } = await import('openai')
      return new OpenAI({ apiKey, baseURL: request.endpoint ?? undefined, maxRetries: 0, timeout: 10 * 60_000, fetch: vendorFetch })
    })
    const { settings } = request
    const body = {
      model: request.model,
      messages: request.messages.map((m) => ({ role: m.role, content: m.content })),
      stream: true as const,
      stream_options: { include_usage: true },
      ...(settings.temperature != null && { temperature: settings.temperature }),
      ...(settings.topP != null && { top_p: settings.topP }),
      ...(settings.stop != null && settings.stop.length > 0 && { stop: settings.stop }),
      // OpenAI's own API wants max_completion_tokens (reasoning models refuse max_tokens);
      // compatible servers still read max_tokens
      ...(settings.maxTokens != null &&
        (request.endpoint ? { max_tokens: settings.maxTokens } : { max_completion_tokens: settings.maxTokens })),
      ...(settings.reasoningEffort != null && { reasoning_effort: settings.reasoningEffort as 'low' }),
      ...settings.extra,
    }
    const answer = new OpenAIAnswer(request.credential.reveal())
    try {
      // the SDK sends the request and turns a refusal into its APIError; the stream is read here
      const response = await client.chat.completions.create(body, { signal }).asResponse()
      yield* answerDeltas(response, answer)
      // the SDK streams end quietly when aborted: that is not a finished answer
      signal.throwIfAborted()
    } catch (error) {
      if (signal.aborted) throw signal.reason
      throw classifyVendorError(error, 'OpenAI', request.credential.reveal())
    }
    yield answer.end()
  }
}

/** What an OpenAI answer said besides its text, read chunk by chunk (or from a whole completion). */
class OpenAIAnswer implements AnswerReader {
  private usage = usageOf()
  private finishReason: string | null = null
  // a refusal comes in deltas of its own, apart from the answer's text
  private refusal = ''

  constructor(private readonly secret: string | undefined) {}

  read({ data }: ServerSentEvent): string | null | typeof STREAM_END {
    if (data.startsWith('[DONE]')) return STREAM_END
    const chunk = JSON.parse(data) as ChatCompletionChunk & ErrorChunk
    // an error sent in the stream (the SDK throws these too)
    if (chunk.error) throw vendorStreamError('OpenAI', chunk.error.type ?? chunk.error.code ?? null, chunk.error.message ?? '', this.secret)
    const choice = chunk.choices[0]
    if (choice?.finish_reason) this.finishReason = choice.finish_reason
    if (chunk.usage) this.usage = openaiUsage(chunk.usage)
    if (choice?.delta?.refusal) this.refusal += choice.delta.refusal
    return choice?.delta?.content || null
  }

  readWhole(body: unknown): string {
    const completion = body as ChatCompletion
    const choice = completion.choices[0]
    this.refusal = choice?.message?.refusal ?? ''
    this.finishReason = choice?.finish_reason ?? null
    if (completion.usage) this.usage = openaiUsage(completion.usage)
    return choice?.message?.content ?? ''
  }

  end(): GenerateEvent {
    // Chat Completions sends no reasoning text (only its token count, in usage)
    return { type: 'end', usage: this.usage, finish: openaiFinish(this.finishReason, this.refusal), reasoning: null }
  }
}
