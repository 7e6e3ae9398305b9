import type { Content, FunctionCallingConfigMode, Tool as GeminiTool, Part, ToolConfig } from '@google/genai'
import type { ContentPart } from '../domain/content-parts.js'
import type { ChatMessage } from '../domain/records.js'
import { parsedArguments, type Tooling } from '../domain/tools.js'
import { base64Of, type FileBytes, textOfParts } from './content-parts.js'

/** A part inline, as Gemini takes uploaded images and files (it takes no arbitrary URL). */
function geminiPart(part: ContentPart, files: FileBytes): Part {
  if (part.type === 'TEXT') return { text: part.text ?? '' }
  return { inlineData: { mimeType: part.mediaType ?? 'application/pdf', data: base64Of(part, files) } }
}

/** A call's arguments as the object Gemini replays; what is not a JSON object goes as an empty one. */
function argsOf(text: string): Record<string, unknown> {
  const value = parsedArguments(text)
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {}
}

/**
 * A message's parts. A model turn replays its thought signature on its first part, where
 * Gemini put it (the first call, or the text); a tool result is a functionResponse, which names
 * its function.
 */
function partsOf(m: ChatMessage, files: FileBytes, names: ReadonlyMap<string, string>): Part[] {
  if (m.role === 'tool') {
    const id = m.toolCallId ?? ''
    const response = m.isError ? { error: m.content } : { output: m.content }
    return [{ functionResponse: { id, name: names.get(id) ?? '', response } }]
  }
  const parts: Part[] = []
  if (m.content !== '') parts.push({ text: m.content })
  for (const part of m.parts ?? []) parts.push(geminiPart(part, files))
  for (const call of m.toolCalls ?? []) parts.push({ functionCall: { id: call.callId, name: call.name, args: argsOf(call.arguments) } })
  const signature = m.reasoning?.signature
  if (signature && parts.length > 0) {
    const signed = parts.findIndex((p) => p.functionCall) === -1 ? 0 : parts.findIndex((p) => p.functionCall)
    parts[signed] = { ...parts[signed], thoughtSignature: signature }
  }
  return parts
}

/**
 * Gemini takes system text apart (`systemInstruction`) and turns of `user` and `model`: tool
 * results are user turns of functionResponse parts. Turns of one role in a row are merged.
 */
export function geminiContents(messages: ChatMessage[], files: FileBytes): { system: string; contents: Content[] } {
  const system = messages
    .filter((m) => m.role === 'system')
    .flatMap((m) => [m.content, ...textOfParts(m.parts)].filter(Boolean))
    .join('\n\n')
  const names = new Map(messages.flatMap((m) => (m.toolCalls ?? []).map((c): [string, string] => [c.callId, c.name])))
  const contents: Content[] = []
  for (const m of messages) {
    if (m.role === 'system') continue
    const role = m.role === 'assistant' ? 'model' : 'user'
    const parts = partsOf(m, files, names)
    const last = contents.at(-1)
    if (last?.role === role) last.parts!.push(...parts)
    else contents.push({ role, parts })
  }
  return { system, contents }
}

/** The tools and the choice among them, as Gemini's config fields. */
export function geminiTools(tooling: Tooling | null): { tools?: GeminiTool[]; toolConfig?: ToolConfig } {
  if (!tooling) return {}
  const functionDeclarations = tooling.tools.map((t) => ({
    name: t.name,
    ...(t.description !== null && { description: t.description }),
    parametersJsonSchema: t.inputSchema,
  }))
  const { toolChoice } = tooling
  const mode = (typeof toolChoice === 'object' || toolChoice === 'REQUIRED' ? 'ANY' : toolChoice) as FunctionCallingConfigMode
  const allowed = typeof toolChoice === 'object' ? { allowedFunctionNames: [toolChoice.name] } : {}
  return { tools: [{ functionDeclarations }], toolConfig: { functionCallingConfig: { mode, ...allowed } } }
}
