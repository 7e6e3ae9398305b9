import { z } from 'zod'
import type { ContentPart } from '../domain/content-parts.js'
import { InvalidRequestError } from '../domain/errors.js'
import type { ChatMessage, RunRequest } from '../domain/records.js'
import type { ToolRound } from '../domain/tool-rounds.js'
import {
  mediaPart,
  metadataSchema,
  parseBody,
  promptVariablesSchema,
  refuseUnsupported,
  UnsupportedParameterError,
} from './openai-shapes.js'

const inputPartSchema = z.discriminatedUnion('type', [
  z.object({ type: z.enum(['input_text', 'output_text']), text: z.string() }),
  z.object({
    type: z.literal('input_image'),
    image_url: z.string().nullish(),
    file_id: z.string().nullish(),
    detail: z.string().nullish(),
  }),
  z.object({ type: z.literal('input_file'), file_id: z.string().nullish(), file_url: z.string().nullish() }),
])

const itemSchema = z.union([
  z.object({
    type: z.literal('message').optional(),
    role: z.enum(['user', 'system', 'developer', 'assistant']),
    content: z.union([z.string(), z.array(inputPartSchema)]),
  }),
  z.object({ type: z.literal('function_call'), call_id: z.string(), name: z.string(), arguments: z.string() }),
  z.object({
    type: z.literal('function_call_output'),
    call_id: z.string(),
    output: z.union([z.string(), z.array(inputPartSchema)]),
  }),
  // an earlier response's output item, by the id it had there (clients that keep `store` on send these)
  z.object({ type: z.literal('item_reference'), id: z.string().max(300) }),
])
type InputItem = z.infer<typeof itemSchema>

const responseSchema = z
  .object({
    model: z.string().min(1).max(256).nullish(),
    input: z.union([z.string(), z.array(itemSchema).max(1000)]).nullish(),
    instructions: z.string().nullish(),
    prompt: z.object({ id: z.string(), version: z.string().nullish(), variables: promptVariablesSchema }).nullish(),
    tools: z
      .array(
        z.object({
          type: z.string(),
          name: z.string().nullish(),
          description: z.string().nullish(),
          parameters: z.record(z.string(), z.unknown()).nullish(),
          strict: z.boolean().nullish(),
        }),
      )
      .max(128)
      .nullish(),
    tool_choice: z.union([z.enum(['auto', 'none', 'required']), z.object({ type: z.literal('function'), name: z.string() })]).nullish(),
    parallel_tool_calls: z.boolean().nullish(),
    text: z
      .object({ format: z.object({ type: z.string() }).passthrough().nullish() })
      .passthrough()
      .nullish(),
    reasoning: z.object({ effort: z.string().nullish() }).passthrough().nullish(),
    max_output_tokens: z.number().int().min(1).nullish(),
    temperature: z.number().min(0).max(2).nullish(),
    top_p: z.number().min(0).max(1).nullish(),
    metadata: metadataSchema,
    store: z.boolean().nullish(),
    stream: z.boolean().nullish(),
    background: z.boolean().nullish(),
    previous_response_id: z.string().nullish(),
    conversation: z.union([z.string(), z.object({ id: z.string() })]).nullish(),
    user: z.string().max(256).nullish(),
    profile: z.string().nullish(),
  })
  .passthrough()

export type ResponseRequest = z.infer<typeof responseSchema>

/**
 * Validates a `POST /v1/responses` body; what promptline cannot honour is refused with its
 * `param`. `store` and `include` are taken as OpenAI takes them where they do not apply: every run
 * is a durable record whatever `store` says, and nothing `include` names is made here.
 */
export function parseResponseRequest(body: unknown): ResponseRequest {
  const request = parseBody(responseSchema, body)
  refuseUnsupported(request, ['top_logprobs', 'prompt_cache_key', 'service_tier', 'seed'])
  const other = request.tools?.findIndex((t) => t.type !== 'function' || !t.name) ?? -1
  if (other >= 0) throw new UnsupportedParameterError('promptline runs function tools only', `tools.${other}`)
  if (request.previous_response_id != null && request.conversation != null)
    throw InvalidRequestError.at('conversation', 'give previous_response_id or conversation, not both')
  if (request.model == null && request.prompt == null) throw InvalidRequestError.at('model', 'give a model or a prompt')
  return request
}

const itemsOf = (request: ResponseRequest): InputItem[] => (typeof request.input === 'string' ? [] : (request.input ?? []))

/** The function_call_output items the input ends with: the results a waiting run may be owed. */
export function trailingOutputsOf(request: ResponseRequest): { callId: string; output: string }[] {
  const items = itemsOf(request)
  const after = items.findLastIndex((i) => !('type' in i) || i.type !== 'function_call_output')
  return items.slice(after + 1).map((i) => {
    const output = i as Extract<InputItem, { type: 'function_call_output' }>
    return { callId: output.call_id, output: textOf(output.output) }
  })
}

/** The ids of the earlier output items the input refers to. */
export const referencedIdsOf = (request: ResponseRequest): string[] =>
  itemsOf(request).flatMap((i) => ('type' in i && i.type === 'item_reference' ? [i.id] : []))

type InputPart = z.infer<typeof inputPartSchema>

const textOf = (content: string | InputPart[]) =>
  typeof content === 'string'
    ? content
    : content.flatMap((p) => (p.type === 'input_text' || p.type === 'output_text' ? [p.text] : [])).join('')

function contentOf(content: string | InputPart[]): { content: string; parts?: ContentPart[] } {
  if (typeof content === 'string') return { content }
  const text = textOf(content)
  const parts = content.flatMap((p) => {
    if (p.type === 'input_image') return [mediaPart('IMAGE', { url: p.image_url, fileId: p.file_id, detail: p.detail })]
    if (p.type === 'input_file') return [mediaPart('FILE', { url: p.file_url, fileId: p.file_id })]
    return []
  })
  return parts.length > 0 ? { content: text, parts } : { content: text }
}

/**
 * `instructions` and `input` as a run's conversation: calls in a row join one assistant message;
 * a referenced item is the message `referenced` holds for its id.
 */
export function conversationOf(request: ResponseRequest, referenced: ReadonlyMap<string, ChatMessage>): ChatMessage[] {
  const messages: ChatMessage[] = request.instructions ? [{ role: 'system', content: request.instructions }] : []
  const items: InputItem[] = typeof request.input === 'string' ? [{ role: 'user', content: request.input }] : itemsOf(request)
  for (const [index, item] of items.entries()) {
    if ('role' in item) messages.push({ role: item.role === 'developer' ? 'system' : item.role, ...contentOf(item.content) })
    else if (item.type === 'function_call_output') messages.push({ role: 'tool', content: textOf(item.output), toolCallId: item.call_id })
    else if (item.type === 'item_reference') {
      const message = referenced.get(item.id)
      if (!message) throw InvalidRequestError.at(`input.${index}.id`, `no output item '${item.id}' of an earlier response`)
      messages.push(message)
    } else {
      const call = { callId: item.call_id, name: item.name, arguments: item.arguments }
      const last = messages.at(-1)
      if (last?.role === 'assistant' && last.toolCalls) last.toolCalls.push(call)
      else messages.push({ role: 'assistant', content: '', toolCalls: [call] })
    }
  }
  return messages
}

/** A `prompt.version`: a number names a version, anything else a label. */
export function promptRefOf(prompt: NonNullable<ResponseRequest['prompt']>) {
  const version = prompt.version ?? null
  if (version === null) return { id: prompt.id }
  return /^\d{1,9}$/.test(version) ? { id: prompt.id, version: Number(version) } : { id: prompt.id, label: version }
}

type InputItemView = { type: string; id: string } & Record<string, unknown>

/** The input items a response ran with: its conversation, or the outputs that resumed it. */
export function inputItemsOf(runId: string, segment: number, request: RunRequest | null, rounds: readonly ToolRound[]): InputItemView[] {
  if (segment > 0) {
    return (rounds[segment - 1]?.results ?? []).map((r) => ({
      type: 'function_call_output',
      id: `fco_${r.callId}`,
      call_id: r.callId,
      output: r.output,
      status: 'completed',
    }))
  }
  return (request?.messages ?? []).flatMap((m, i): InputItemView[] => {
    if (m.role === 'tool') return [{ type: 'function_call_output', id: `fco_${m.toolCallId}`, call_id: m.toolCallId, output: m.content }]
    if (m.toolCalls)
      return m.toolCalls.map((c) => ({
        type: 'function_call',
        id: `fc_${c.callId}`,
        call_id: c.callId,
        name: c.name,
        arguments: c.arguments,
      }))
    const kind = m.role === 'assistant' ? 'output_text' : 'input_text'
    return [{ type: 'message', id: `msg_${runId}_in${i}`, role: m.role, status: 'completed', content: [{ type: kind, text: m.content }] }]
  })
}
