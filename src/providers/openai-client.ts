import type OpenAI from 'openai'
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionContentPart,
  ChatCompletionMessageParam,
  ChatCompletionTool,
  ChatCompletionToolChoiceOption,
} from 'openai/resources/chat/completions'
import type { ContentPart } from '../domain/content-parts.js'
import { type ChatMessage, type Finish, type FinishReason, usageOf } from '../domain/records.js'
import type { Tooling } from '../domain/tools.js'
import { chatCompletionsUsage, type ExtendedDelta, textAndReasoning } from './chat-completions-fields.js'
import { ClientCache } from './client-cache.js'
import type { ChatCompletionsWire, CompatibleServer } from './compatible-servers.js'
import { base64Of, type FileBytes, textOfParts } from './content-parts.js'
import type { GenerateEvent, GenerateRequest, ModelClient } from './model-client.js'
import { classifyVendorError, vendorStreamError } from './provider-error.js'
import { type ServerSentEvent, STREAM_END } from './sse.js'
import { type AnswerReader, answerDeltas, ToolCallFragments, vendorFetch } from './vendor-http.js'

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

/** A part in OpenAI's shape: images by URL or as a data URL, files (PDF) inline as file_data. */
function openaiPart(part: ContentPart, files: FileBytes): ChatCompletionContentPart {
  if (part.type === 'TEXT') return { type: 'text', text: part.text ?? '' }
  const inline = () => `data:${part.mediaType};base64,${base64Of(part, files)}`
  if (part.type === 'IMAGE') {
    const detail = part.detail && { detail: part.detail.toLowerCase() as 'auto' }
    return { type: 'image_url', image_url: { url: part.url ?? inline(), ...detail } }
  }
  return { type: 'file', file: { file_data: inline(), filename: `${part.fileId}.pdf` } }
}

/** A message's text and parts, as OpenAI's content: a string while there are no parts. */
function openaiContent(m: ChatMessage, files: FileBytes): string | ChatCompletionContentPart[] {
  if (!m.parts?.length) return m.content
  return [...(m.content === '' ? [] : [{ type: 'text' as const, text: m.content }]), ...m.parts.map((p) => openaiPart(p, files))]
}

/**
 * Our messages in OpenAI's shape: calls on the assistant message, each result a `tool` message
 * (OpenAI has no error flag on one, so a failed call says so in its text, as Anthropic's `is_error` does).
 */
function toOpenAIMessage(m: ChatMessage, files: FileBytes): ChatCompletionMessageParam {
  if (m.role === 'tool') {
    return { role: 'tool', tool_call_id: m.toolCallId ?? '', content: m.isError ? `The tool call failed: ${m.content}` : m.content }
  }
  if (m.role === 'assistant' && m.toolCalls && m.toolCalls.length > 0) {
    return {
      role: 'assistant',
      content: m.content === '' ? null : m.content,
      tool_calls: m.toolCalls.map((c) => ({ id: c.callId, type: 'function', function: { name: c.name, arguments: c.arguments } })),
    }
  }
  if (m.role === 'user') return { role: 'user', content: openaiContent(m, files) }
  // system and assistant messages take text only
  return { role: m.role, content: [m.content, ...textOfParts(m.parts)].filter(Boolean).join('\n\n') }
}

/** The tools, the choice among them and parallel calls, as OpenAI's request fields. */
function openaiTools(tooling: Tooling | null, wire: ChatCompletionsWire) {
  if (!tooling) return {}
  const { toolChoice } = tooling
  const tools: ChatCompletionTool[] = tooling.tools.map((t) => ({
    type: 'function',
    function: {
      name: t.name,
      ...(t.description !== null && { description: t.description }),
      parameters: t.inputSchema,
      ...(t.strict && { strict: true }),
    },
  }))
  const choice: ChatCompletionToolChoiceOption =
    typeof toolChoice === 'object' ? { type: 'function', function: { name: toolChoice.name } } : (toolChoice.toLowerCase() as 'auto')
  const parallel = tooling.parallelToolCalls !== null && wire.parallelToolCalls
  return { tools, tool_choice: choice, ...(parallel && { parallel_tool_calls: tooling.parallelToolCalls }) }
}

/** OpenAI caches long prefixes by itself: a key keeps a session's requests on one cache, ONE_HOUR asks for its extended retention. */
function openaiPromptCache({ settings, promptCacheKey }: GenerateRequest) {
  if (settings.promptCache.mode === 'OFF') return {}
  return {
    ...(promptCacheKey !== null && { prompt_cache_key: promptCacheKey }),
    ...(settings.promptCache.ttl === 'ONE_HOUR' && { prompt_cache_retention: '24h' as const }),
  }
}

/** The request's body, in the fields `wire` takes (admission refused the settings it has no field for). */
function chatCompletionsBody(request: GenerateRequest, wire: ChatCompletionsWire) {
  const { settings } = request
  return {
    model: request.model,
    messages: request.messages.map((m) => toOpenAIMessage(m, request.files)),
    ...openaiTools(request.tooling, wire),
    stream: true as const,
    ...(wire.streamOptions && { stream_options: { include_usage: true } }),
    ...(settings.temperature != null && { temperature: settings.temperature }),
    ...(settings.topP != null && { top_p: settings.topP }),
    ...(settings.seed != null && wire.seed !== null && { [wire.seed]: settings.seed }),
    ...(settings.stop != null && settings.stop.length > 0 && { stop: settings.stop }),
    ...(settings.maxTokens != null && { [wire.tokenLimit]: settings.maxTokens }),
    ...(settings.reasoningEffort != null && wire.reasoningEffort && { reasoning_effort: settings.reasoningEffort as 'low' }),
    ...(wire.promptCacheKey && openaiPromptCache(request)),
    ...(request.outputSchema && {
      response_format: { type: 'json_schema' as const, json_schema: { name: 'output', schema: request.outputSchema, strict: true } },
    }),
    ...settings.extra,
  }
}

type ErrorChunk = { error?: { message?: string; type?: string | null; code?: string | null } }

/** Who speaks Chat Completions to a client: its name in errors, its SDK client, and the fields it takes. */
export interface ChatCompletionsVendor {
  name: string
  connect(endpoint: string | null, apiKey: string): Promise<OpenAI>
  wire(endpoint: string | null): ChatCompletionsWire
}

/** OpenAI's own API: reasoning models refuse max_tokens, so the limit goes as max_completion_tokens. */
export const OPENAI_WIRE: ChatCompletionsWire = {
  tokenLimit: 'max_completion_tokens',
  streamOptions: true,
  promptCacheKey: true,
  seed: 'seed',
  reasoningEffort: true,
  parallelToolCalls: true,
}
// a server at a baseUrl with no dialect named: OpenAI's fields, but the token limit most copies read
const UNNAMED_COPY: ChatCompletionsWire = { ...OPENAI_WIRE, tokenLimit: 'max_tokens' }

async function connectOpenAI(endpoint: string | null, apiKey: string): Promise<OpenAI> {
  const { default: OpenAI } = await import('openai')
  // the SDK wants a key; a server on one's own machines runs without one (admission let it through) and ignores it
  const key = apiKey || 'no-key'
  return new OpenAI({ apiKey: key, baseURL: endpoint ?? undefined, maxRetries: 0, timeout: 10 * 60_000, fetch: vendorFetch })
}

const OPENAI: ChatCompletionsVendor = {
  name: 'OpenAI',
  connect: connectOpenAI,
  wire: (endpoint) => (endpoint === null ? OPENAI_WIRE : UNNAMED_COPY),
}

/** A named OpenAI-compatible server, through the same SDK at its baseUrl. */
export const compatibleVendor = ({ name, wire }: CompatibleServer): ChatCompletionsVendor => ({
  name,
  connect: connectOpenAI,
  wire: () => wire,
})

/**
 * OpenAI chat completions, streamed with usage, through the official SDK. A backend's base URL
 * points it at any OpenAI-compatible server (vLLM, Ollama, LM Studio); without one the SDK's
 * default applies (OPENAI_BASE_URL included). Retries are ours, so the SDK makes none. The
 * SDK sends the request and raises its errors; the event stream is read by `serverSentEvents`
 * (linear, where the SDK's reader is quadratic in the events of one network chunk).
 */
export class OpenAIModelClient implements ModelClient {
  private readonly clients = new ClientCache<OpenAI>()

  constructor(private readonly vendor: ChatCompletionsVendor = OPENAI) {}

  async *generate(request: GenerateRequest, signal: AbortSignal): AsyncIterable<GenerateEvent> {
    const apiKey = request.credential.reveal() ?? ''
    const { vendor } = this
    const client = await this.clients.get(request.endpoint, apiKey, () => vendor.connect(request.endpoint, apiKey))
    const body = chatCompletionsBody(request, vendor.wire(request.endpoint))
    const answer = new OpenAIAnswer(vendor.name, request.credential.reveal())
    try {
      // the SDK sends the request and turns a refusal into its APIError; the stream is read here
      const response = await client.chat.completions.create(body, { signal }).asResponse()
      yield* answerDeltas(response, answer)
      // the SDK streams end quietly when aborted: that is not a finished answer
      signal.throwIfAborted()
    } catch (error) {
      if (signal.aborted) throw signal.reason
      throw classifyVendorError(error, vendor.name, request.credential.reveal())
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
  // OpenAI sends no reasoning text in Chat Completions (only its count, in usage); compatible servers may
  private reasoning = ''
  readonly toolCalls = new ToolCallFragments()

  constructor(
    private readonly vendor: string,
    private readonly secret: string | undefined,
  ) {}

  read({ data }: ServerSentEvent): string | null | typeof STREAM_END {
    if (data.startsWith('[DONE]')) return STREAM_END
    const chunk = JSON.parse(data) as ChatCompletionChunk & ErrorChunk
    // an error sent in the stream (the SDK throws these too)
    if (chunk.error)
      throw vendorStreamError(this.vendor, chunk.error.type ?? chunk.error.code ?? null, chunk.error.message ?? '', this.secret)
    const choice = chunk.choices[0]
    if (choice?.finish_reason) this.finishReason = choice.finish_reason
    this.usage = chatCompletionsUsage(chunk) ?? this.usage
    const delta = choice?.delta
    if (!delta) return null
    if (delta.refusal) this.refusal += delta.refusal
    // a call's first fragment has its id and name; the arguments follow in pieces, by index
    for (const call of delta.tool_calls ?? []) {
      this.toolCalls.add(call.index, call.id ?? null, call.function?.name ?? null, call.function?.arguments ?? '')
    }
    const { text, reasoning } = textAndReasoning(delta as ExtendedDelta)
    this.reasoning += reasoning
    return text || null
  }

  readWhole(body: unknown): string {
    const completion = body as ChatCompletion
    const choice = completion.choices[0]
    this.refusal = choice?.message?.refusal ?? ''
    this.finishReason = choice?.finish_reason ?? null
    this.usage = chatCompletionsUsage(completion) ?? this.usage
    for (const [index, call] of (choice?.message?.tool_calls ?? []).entries()) {
      if (call.type === 'function') this.toolCalls.add(index, call.id, call.function.name, call.function.arguments)
    }
    if (!choice?.message) return ''
    const { text, reasoning } = textAndReasoning(choice.message as ExtendedDelta)
    this.reasoning = reasoning
    return text
  }

  end(): GenerateEvent {
    const reasoning = this.reasoning === '' ? null : { text: this.reasoning, signature: null }
    return { type: 'end', usage: this.usage, finish: openaiFinish(this.finishReason, this.refusal), reasoning }
  }
}
