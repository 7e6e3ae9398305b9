import type OpenAI from 'openai'
import type { ChatCompletionChunk } from 'openai/resources/chat/completions'
import { usageOf } from '../domain/records.js'
import { ClientCache } from './client-cache.js'
import type { GenerateEvent, GenerateRequest, ModelClient } from './model-client.js'
import { classifyVendorError } from './provider-error.js'
import { STREAM_END, textDeltas } from './sse.js'
import { responseBody, vendorFetch } from './vendor-http.js'

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
    let usage = usageOf()
    let finishReason = 'unknown'
    try {
      // the SDK sends the request and turns a refusal into its APIError; the stream is read here
      const response = await client.chat.completions.create(body, { signal }).asResponse()
      const stream = responseBody(response)
      if (!stream) throw new Error('the response has no body')
      yield* textDeltas(stream, ({ data }) => {
        if (data.startsWith('[DONE]')) return STREAM_END
        const chunk = JSON.parse(data) as ChatCompletionChunk & { error?: { message?: string } }
        // an error sent in the stream (the SDK throws these too)
        if (chunk.error) throw new Error(`the stream reported an error: ${chunk.error.message ?? 'unknown'}`)
        const choice = chunk.choices[0]
        if (choice?.finish_reason) finishReason = choice.finish_reason
        if (chunk.usage) {
          // OpenAI's prompt_tokens already include the cached ones
          usage = usageOf({
            inputTokens: chunk.usage.prompt_tokens,
            outputTokens: chunk.usage.completion_tokens,
            cacheReadTokens: chunk.usage.prompt_tokens_details?.cached_tokens ?? 0,
            reasoningTokens: chunk.usage.completion_tokens_details?.reasoning_tokens ?? 0,
          })
        }
        return choice?.delta?.content || null
      })
      // the SDK streams end quietly when aborted: that is not a finished answer
      signal.throwIfAborted()
    } catch (error) {
      if (signal.aborted) throw signal.reason
      throw classifyVendorError(error, 'OpenAI', request.credential.reveal())
    }
    yield { type: 'end', usage, finishReason }
  }
}
