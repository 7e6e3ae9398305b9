import type { CompletionUsage } from 'openai/resources/completions'
import { type Usage, usageOf } from '../domain/records.js'

// What servers that copy OpenAI's Chat Completions send besides its fields (docs/providers.md,
// "OpenAI-compatible servers"). Each is read wherever it appears: no two servers give one field
// different meanings, so no server needs naming here.

/** Usage as the compatible servers extend it. */
type ExtendedUsage = CompletionUsage & {
  /** DeepSeek's cache hits (it sends cached_tokens too, lately). */
  prompt_cache_hit_tokens?: number
  /** Together's reasoning count, beside completion_tokens_details. */
  reasoning_tokens?: number
}

/** A chunk's or a completion's usage, where its server puts it: Groq's older streams only in `x_groq`. */
type UsageCarrier = { usage?: ExtendedUsage | null; x_groq?: { usage?: ExtendedUsage | null } }

/** The usage a chunk or a completion carries, in ours (prompt_tokens already include the cached ones); null when none. */
export function chatCompletionsUsage(carrier: UsageCarrier): Usage | null {
  const usage = carrier.usage ?? carrier.x_groq?.usage
  if (!usage) return null
  return usageOf({
    inputTokens: usage.prompt_tokens,
    outputTokens: usage.completion_tokens,
    cacheReadTokens: usage.prompt_tokens_details?.cached_tokens ?? usage.prompt_cache_hit_tokens ?? 0,
    reasoningTokens: usage.completion_tokens_details?.reasoning_tokens ?? usage.reasoning_tokens ?? 0,
  })
}

/** Mistral's typed content: its reasoning models stream thinking as chunks of their own. */
type ContentChunk = { type: 'text'; text: string } | { type: 'thinking'; thinking: { type: string; text?: string }[] } | { type: string }

/** A delta or a message as the compatible servers extend it. */
export interface ExtendedDelta {
  content?: string | ContentChunk[] | null
  /** DeepSeek's and vLLM's reasoning text. */
  reasoning_content?: string | null
  /** Groq's, OpenRouter's, Ollama's and Together's. */
  reasoning?: string | null
}

/** A delta's (or a message's) answer text and reasoning text. */
export function textAndReasoning(delta: ExtendedDelta): { text: string; reasoning: string } {
  const reasoning = delta.reasoning_content || delta.reasoning || ''
  const { content } = delta
  if (!Array.isArray(content)) return { text: content ?? '', reasoning }
  let text = ''
  let thinking = reasoning
  for (const chunk of content) {
    if (chunk.type === 'text' && 'text' in chunk) text += chunk.text
    if (chunk.type === 'thinking' && 'thinking' in chunk) for (const part of chunk.thinking) thinking += part.text ?? ''
  }
  return { text, reasoning: thinking }
}
