import type { Dialect } from '../domain/definitions.js'
import type { BackendCapabilities } from './capabilities.js'

/** The request fields a Chat Completions server takes where the servers differ. */
export interface ChatCompletionsWire {
  /** The token limit's field: OpenAI's reasoning models refuse max_tokens, most copies read only it. */
  tokenLimit: 'max_tokens' | 'max_completion_tokens'
  /** Whether it takes stream_options (else it sends usage unasked). */
  streamOptions: boolean
  /** Whether it takes OpenAI's prompt_cache_key and prompt_cache_retention (else it caches by itself, or not). */
  promptCacheKey: boolean
  /** The seed's field; null: it takes none. */
  seed: 'seed' | 'random_seed' | null
  /** Whether it takes reasoning_effort. */
  reasoningEffort: boolean
  /** Whether it takes parallel_tool_calls. */
  parallelToolCalls: boolean
}

/** What one OpenAI-compatible server does differently, as docs/providers.md's table says. */
export interface CompatibleServer {
  /** Its name in errors and on runs. */
  name: string
  wire: ChatCompletionsWire
  capabilities: BackendCapabilities
  /** The bundled price table's provider; null for a server on one's own machines (no price). */
  priceProvider: string | null
  /** Whether a run needs a key for it (a server on one's own machines takes none, unless it was started with one). */
  needsKey: boolean
}

const IMAGES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp']
// images by URL or data URL, for the models that see; no file parts (OpenAI's file_data is its own)
const VISION: BackendCapabilities = {
  imageMediaTypes: IMAGES,
  imageUrls: true,
  fileMediaTypes: [],
  fileUrls: false,
  nativeStructuredOutput: true,
  promptCache: false,
  singleToolCall: true,
}
const COPY: ChatCompletionsWire = {
  tokenLimit: 'max_tokens',
  streamOptions: true,
  promptCacheKey: false,
  seed: 'seed',
  reasoningEffort: true,
  parallelToolCalls: true,
}

export const COMPATIBLE_SERVERS: Record<Dialect, CompatibleServer> = {
  OLLAMA: {
    name: 'Ollama',
    wire: { ...COPY, parallelToolCalls: false },
    capabilities: { ...VISION, singleToolCall: false },
    priceProvider: null,
    needsKey: false,
  },
  VLLM: { name: 'vLLM', wire: COPY, capabilities: VISION, priceProvider: null, needsKey: false },
  LM_STUDIO: {
    name: 'LM Studio',
    wire: { ...COPY, reasoningEffort: false, parallelToolCalls: false },
    capabilities: { ...VISION, singleToolCall: false },
    priceProvider: null,
    needsKey: false,
  },
  GROQ: {
    name: 'Groq',
    wire: { ...COPY, tokenLimit: 'max_completion_tokens' },
    capabilities: VISION,
    priceProvider: 'groq',
    needsKey: true,
  },
  // OpenRouter passes PDFs on as files to the models that read them
  OPENROUTER: {
    name: 'OpenRouter',
    wire: COPY,
    capabilities: { ...VISION, fileMediaTypes: ['application/pdf'] },
    priceProvider: 'openrouter',
    needsKey: true,
  },
  // text only; response_format takes json_object but no schema, so contracts are validated
  DEEPSEEK: {
    name: 'DeepSeek',
    wire: { ...COPY, seed: null, reasoningEffort: false, parallelToolCalls: false },
    capabilities: { ...VISION, imageMediaTypes: [], imageUrls: false, nativeStructuredOutput: false, singleToolCall: false },
    priceProvider: 'deepseek',
    needsKey: true,
  },
  // Mistral refuses fields it does not know, and calls the seed random_seed
  MISTRAL: {
    name: 'Mistral',
    wire: { ...COPY, streamOptions: false, seed: 'random_seed', reasoningEffort: false },
    capabilities: VISION,
    priceProvider: 'mistral',
    needsKey: true,
  },
  TOGETHER: { name: 'Together', wire: COPY, capabilities: VISION, priceProvider: 'together', needsKey: true },
}
