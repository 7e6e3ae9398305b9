import type { Credential } from '../domain/credentials.js'
import type { ChatMessage, Finish, Reasoning, Usage } from '../domain/records.js'
import type { EffectiveSettings } from '../domain/settings.js'
import type { Tooling } from '../domain/tools.js'
import type { FileBytes } from './content-parts.js'

export interface GenerateRequest {
  model: string
  messages: ChatMessage[]
  settings: EffectiveSettings
  endpoint: string | null
  credential: Credential
  /** The tools offered to the model; null when none. */
  tooling: Tooling | null
  /** OpenAI's prompt_cache_key; null when none is asked for (Anthropic takes marks, from the settings). */
  promptCacheKey: string | null
  /** A JSON Schema the vendor's native structured output must follow; null for none. */
  outputSchema: Record<string, unknown> | null
  /** The bytes of the uploaded files the messages' parts name. */
  files: FileBytes
}

/**
 * Fragments of one tool call, as they arrived: the first for a call carries its name (and the
 * vendor's id for it); the arguments' JSON text streams in pieces after it.
 */
export interface ToolCallDelta {
  type: 'tool_call'
  /** The call's place among the answer's calls. */
  index: number
  vendorId: string | null
  name: string | null
  arguments: string
}

/**
 * What a model stream yields: text and tool-call fragments, then one `end` with the vendor's usage, how the answer ended
 * and the model's thinking where the vendor sent it. A `delta` holds the text of `deltas` vendor
 * deltas that arrived together (in one network read).
 */
export type GenerateEvent =
  | { type: 'delta'; text: string; deltas: number }
  | ToolCallDelta
  | { type: 'end'; usage: Usage; finish: Finish; reasoning: Reasoning | null }

/**
 * One backend's way to call a model. `generate` streams; aborting `signal` (or returning from
 * the iteration early) must really end the vendor request.
 */
export interface ModelClient {
  generate(request: GenerateRequest, signal: AbortSignal): AsyncIterable<GenerateEvent>
}
