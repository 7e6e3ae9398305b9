import type Anthropic from '@anthropic-ai/sdk'
import type { Message, MessageParam, RawMessageStreamEvent, TextBlockParam, Tool, ToolChoice } from '@anthropic-ai/sdk/resources/messages'
import type { ContentPart } from '../domain/content-parts.js'
import type { ChatMessage, FinishReason, Usage } from '../domain/records.js'
import { usageOf } from '../domain/records.js'
import { parsedArguments, type Tooling } from '../domain/tools.js'
import { ClientCache } from './client-cache.js'
import { base64Of, type FileBytes, textOfParts } from './content-parts.js'
import type { GenerateEvent, GenerateRequest, ModelClient } from './model-client.js'
import { classifyVendorError, vendorStreamError } from './provider-error.js'
import type { ServerSentEvent } from './sse.js'
import { type AnswerReader, answerDeltas, ToolCallFragments, vendorFetch } from './vendor-http.js'

/** Anthropic's usage, in ours: its input_tokens leave the cached ones out, so they are added. */
function anthropicUsage(usage: Message['usage']): Usage {
  const cacheReadTokens = usage.cache_read_input_tokens ?? 0
  const cacheWriteTokens = usage.cache_creation_input_tokens ?? 0
  return usageOf({
    inputTokens: usage.input_tokens + cacheReadTokens + cacheWriteTokens,
    outputTokens: usage.output_tokens,
    cacheReadTokens,
    cacheWriteTokens,
  })
}

// Anthropic's stop_reason in ours (a refusal's text is the answer's own)
const FINISH_REASONS: Record<string, FinishReason> = {
  end_turn: 'STOP',
  stop_sequence: 'STOP',
  max_tokens: 'LENGTH',
  model_context_window_exceeded: 'LENGTH',
  tool_use: 'TOOL_CALLS',
  refusal: 'REFUSAL',
}

type ErrorEvent = { type: 'error'; error?: { type?: string; message?: string } }

type Block = Exclude<MessageParam['content'], string>[number]
type Turn = { role: 'user' | 'assistant'; content: string | Block[] }

/** A part as an Anthropic block: an image, or a document (PDF, or plain text), by URL or inline. */
function anthropicPart(part: ContentPart, files: FileBytes): Block {
  if (part.type === 'TEXT') return { type: 'text', text: part.text ?? '' }
  if (part.type === 'IMAGE') {
    const media_type = part.mediaType as 'image/png'
    return {
      type: 'image',
      source: part.url ? { type: 'url', url: part.url } : { type: 'base64', media_type, data: base64Of(part, files) },
    }
  }
  if (part.url) return { type: 'document', source: { type: 'url', url: part.url } }
  if (part.mediaType === 'text/plain') {
    const data = Buffer.from(base64Of(part, files), 'base64').toString('utf8')
    return { type: 'document', source: { type: 'text', media_type: 'text/plain', data } }
  }
  return { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: base64Of(part, files) } }
}

/** A message's content as Anthropic blocks: thinking to replay, text, parts, calls, or a call's result. */
function blocksOf(m: ChatMessage, files: FileBytes): Block[] {
  if (m.role === 'tool') {
    return [{ type: 'tool_result', tool_use_id: m.toolCallId ?? '', content: m.content, ...(m.isError && { is_error: true }) }]
  }
  const blocks: Block[] = []
  // a turn with thinking and tool calls is replayed with its signed thinking first
  if (m.reasoning?.signature) blocks.push({ type: 'thinking', thinking: m.reasoning.text, signature: m.reasoning.signature })
  if (m.content !== '') blocks.push({ type: 'text', text: m.content })
  for (const part of m.parts ?? []) blocks.push(anthropicPart(part, files))
  for (const call of m.toolCalls ?? [])
    blocks.push({ type: 'tool_use', id: call.callId, name: call.name, input: parsedInput(call.arguments) })
  return blocks
}

/** A call's arguments as the object Anthropic replays; what is not a JSON object goes as an empty one. */
function parsedInput(args: string): Record<string, unknown> {
  const value = parsedArguments(args)
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {}
}

const asBlocks = (content: string | Block[]): Block[] => (typeof content === 'string' ? [{ type: 'text', text: content }] : content)

/**
 * Anthropic takes system text apart from the turns, and turns that alternate user/assistant:
 * tool results are user turns of tool_result blocks. Plain text stays a string.
 */
function toAnthropicMessages(messages: ChatMessage[], files: FileBytes): { system: string; turns: Turn[] } {
  const system = messages
    .filter((m) => m.role === 'system')
    .flatMap((m) => [m.content, ...textOfParts(m.parts)].filter(Boolean))
    .join('\n\n')
  const turns: Turn[] = []
  for (const m of messages) {
    if (m.role === 'system') continue
    const role = m.role === 'assistant' ? 'assistant' : 'user'
    const plain = m.role !== 'tool' && !m.toolCalls?.length && !m.reasoning?.signature && !m.parts?.length
    const content: string | Block[] = plain ? m.content : blocksOf(m, files)
    const last = turns.at(-1)
    if (!last || last.role !== role) turns.push({ role, content })
    else if (typeof last.content === 'string' && typeof content === 'string') last.content += `\n\n${content}`
    else last.content = [...asBlocks(last.content), ...asBlocks(content)]
  }
  return { system, turns }
}

type CacheControl = { type: 'ephemeral'; ttl?: '5m' | '1h' }

/**
 * Anthropic caches only what is marked: the tools, the system text, the end of the history and
 * the end of the request (four marks, Anthropic's most). The next request of a session reads
 * the prefix its predecessor wrote.
 */
function markForCache(
  tools: Tool[] | undefined,
  system: string,
  turns: Turn[],
  cache: CacheControl,
): { tools?: Tool[]; system?: TextBlockParam[]; turns: Turn[] } {
  const marked = (turn: Turn | undefined): Turn | undefined => {
    if (!turn) return turn
    const blocks = asBlocks(turn.content)
    const last = blocks.at(-1)
    // thinking cannot be marked; such a turn (an assistant's with calls) ends with its calls anyway
    if (!last || last.type === 'thinking' || last.type === 'redacted_thinking') return turn
    return { ...turn, content: [...blocks.slice(0, -1), { ...last, cache_control: cache } as Block] }
  }
  const lastTool = tools?.at(-1)
  const history = turns.length - 2
  return {
    ...(tools && lastTool && { tools: [...tools.slice(0, -1), { ...lastTool, cache_control: cache }] }),
    ...(system !== '' && { system: [{ type: 'text', text: system, cache_control: cache }] }),
    turns: turns.map((turn, i) => (i === history || i === turns.length - 1 ? marked(turn)! : turn)),
  }
}

/** The tools and the choice among them, as Anthropic's request fields. */
function anthropicTools(tooling: Tooling | null) {
  if (!tooling) return {}
  const tools: Tool[] = tooling.tools.map((t) => ({
    name: t.name,
    ...(t.description !== null && { description: t.description }),
    input_schema: t.inputSchema as Tool['input_schema'],
  }))
  const { toolChoice } = tooling
  const single = tooling.parallelToolCalls === false && toolChoice !== 'NONE' && { disable_parallel_tool_use: true }
  const choice: ToolChoice =
    typeof toolChoice === 'object'
      ? { type: 'tool', name: toolChoice.name, ...single }
      : toolChoice === 'NONE'
        ? { type: 'none' }
        : { type: toolChoice === 'REQUIRED' ? 'any' : 'auto', ...single }
  return { tools, tool_choice: choice }
}

/**
 * Anthropic messages, streamed, through the official SDK. Retries are ours, so the SDK makes
 * none. The SDK sends the request and raises its errors; the event stream is read by
 * `serverSentEvents`, like OpenAI's.
 */
export class AnthropicModelClient implements ModelClient {
  private readonly clients = new ClientCache<Anthropic>()

  async *generate(request: GenerateRequest, signal: AbortSignal): AsyncIterable<GenerateEvent> {
    const apiKey = request.credential.reveal() ?? ''
    const client = await this.clients.get(request.endpoint, apiKey, async () => {
      const { default: Anthropic } = await import('@anthropic-ai/sdk')
      return new Anthropic({ apiKey, baseURL: request.endpoint ?? undefined, maxRetries: 0, timeout: 10 * 60_000, fetch: vendorFetch })
    })
    const { settings } = request
    const { system, turns } = toAnthropicMessages(request.messages, request.files)
    const tooling = anthropicTools(request.tooling)
    const { promptCache } = settings
    const cache: CacheControl = { type: 'ephemeral', ...(promptCache.ttl === 'ONE_HOUR' && { ttl: '1h' }) }
    const marked = promptCache.mode === 'AUTO' ? markForCache(tooling.tools, system, turns, cache) : { turns }
    const body = {
      model: request.model,
      max_tokens: settings.maxTokens ?? 1024,
      messages: marked.turns,
      stream: true as const,
      ...(system !== '' && { system }),
      ...tooling,
      ...(marked.system && { system: marked.system }),
      ...(marked.tools && { tools: marked.tools }),
      ...(request.outputSchema && { output_config: { format: { type: 'json_schema' as const, schema: request.outputSchema } } }),
      ...(settings.temperature != null && { temperature: settings.temperature }),
      ...(settings.topP != null && { top_p: settings.topP }),
      ...(settings.stop != null && settings.stop.length > 0 && { stop_sequences: settings.stop }),
      ...settings.extra,
    }
    const answer = new AnthropicAnswer(request.credential.reveal())
    try {
      // the SDK sends the request and turns a refusal into its APIError; the stream is read here
      const response = await client.messages.create(body, { signal }).asResponse()
      yield* answerDeltas(response, answer)
      // the SDK streams end quietly when aborted: that is not a finished answer
      signal.throwIfAborted()
    } catch (error) {
      if (signal.aborted) throw signal.reason
      throw classifyVendorError(error, 'Anthropic', request.credential.reveal())
    }
    yield answer.end()
  }
}

/** What an Anthropic answer said besides its text, read event by event (or from a whole message). */
class AnthropicAnswer implements AnswerReader {
  private usage = usageOf()
  private finishReason: string | null = null
  private thinking = ''
  private signature: string | null = null
  readonly toolCalls = new ToolCallFragments()

  constructor(private readonly secret: string | undefined) {}

  read(sse: ServerSentEvent): string | null {
    if (sse.event === 'ping' || sse.data === '') return null
    const event = JSON.parse(sse.data) as RawMessageStreamEvent | ErrorEvent
    // an error sent in the stream (the SDK throws these too)
    if (sse.event === 'error' || event.type === 'error') {
      const { type = null, message = '' } = ('error' in event && event.error) || {}
      throw vendorStreamError('Anthropic', type, message, this.secret)
    }
    if (event.type === 'message_start') this.usage = anthropicUsage(event.message.usage)
    else if (event.type === 'content_block_start' && event.content_block.type === 'tool_use') {
      // the input arrives as input_json_delta fragments; the block's own `input` is an empty placeholder
      this.toolCalls.add(event.index, event.content_block.id, event.content_block.name, '')
    } else if (event.type === 'content_block_delta') {
      const { delta } = event
      if (delta.type === 'text_delta') return delta.text
      if (delta.type === 'input_json_delta') this.toolCalls.add(event.index, null, null, delta.partial_json)
      else if (delta.type === 'thinking_delta') this.thinking += delta.thinking
      else if (delta.type === 'signature_delta') this.signature = delta.signature
    } else if (event.type === 'message_delta') {
      this.usage.outputTokens = event.usage.output_tokens
      this.finishReason = event.delta.stop_reason ?? this.finishReason
    }
    return null
  }

  readWhole(body: unknown): string {
    const message = body as Message
    let text = ''
    for (const [index, block] of message.content.entries()) {
      if (block.type === 'text') text += block.text
      else if (block.type === 'tool_use') this.toolCalls.add(index, block.id, block.name, JSON.stringify(block.input))
      else if (block.type === 'thinking') [this.thinking, this.signature] = [this.thinking + block.thinking, block.signature]
    }
    this.finishReason = message.stop_reason
    this.usage = anthropicUsage(message.usage)
    return text
  }

  end(): GenerateEvent {
    const { finishReason } = this
    return {
      type: 'end',
      usage: this.usage,
      finish: { reason: FINISH_REASONS[finishReason ?? ''] ?? 'OTHER', vendorReason: finishReason, refusal: null },
      reasoning: this.thinking === '' && this.signature === null ? null : { text: this.thinking, signature: this.signature },
    }
  }
}
