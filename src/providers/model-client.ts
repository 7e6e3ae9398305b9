import type { Credential } from '../domain/credentials.js'
import type { ChatMessage, Finish, Reasoning, Usage } from '../domain/records.js'
import type { EffectiveSettings } from '../domain/settings.js'

export interface GenerateRequest {
  model: string
  messages: ChatMessage[]
  settings: EffectiveSettings
  endpoint: string | null
  credential: Credential
}

/**
 * What a model stream yields: text, then one `end` with the vendor's usage, how the answer ended
 * and the model's thinking where the vendor sent it. A `delta` holds the text of `deltas` vendor
 * deltas that arrived together (in one network read).
 */
export type GenerateEvent =
  | { type: 'delta'; text: string; deltas: number }
  | { type: 'end'; usage: Usage; finish: Finish; reasoning: Reasoning | null }

/**
 * One backend's way to call a model. `generate` streams; aborting `signal` (or returning from
 * the iteration early) must really end the vendor request.
 */
export interface ModelClient {
  generate(request: GenerateRequest, signal: AbortSignal): AsyncIterable<GenerateEvent>
}
