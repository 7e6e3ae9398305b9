import { randomUUID } from 'node:crypto'
import { z } from 'zod'
import { boundedJsonObject, jsonOutOfBounds } from './json-bounds.js'
import { compileOutputSchema } from './output-schema.js'
import { type ToolServer, toolServerSchema } from './tool-servers.js'

/** A function the model may call: the application runs it and submits its result. */
export interface ToolSpec {
  name: string
  description: string | null
  /** JSON Schema of the arguments object. */
  inputSchema: Record<string, unknown>
  /** The vendor is asked to keep to the schema exactly, and the arguments are validated against it. */
  strict: boolean
  /** The label of the MCP server that serves it (promptline calls it); absent for a function the application runs. */
  server?: string
}

/** Which tool the model must call: any or none as it likes, at least one, none, or this one. */
export type ToolChoice = 'AUTO' | 'NONE' | 'REQUIRED' | { name: string }

/** One layer of tool settings (profile, prompt or request); absent fields inherit. */
export interface ToolLayer {
  tools?: ToolSpec[]
  toolChoice?: ToolChoice
  parallelToolCalls?: boolean
  maxToolRounds?: number
  toolTimeoutMs?: number
  mcpServers?: ToolServer[]
}

/** The tools of a model call, merged from its layers. */
export interface Tooling {
  tools: ToolSpec[]
  toolChoice: ToolChoice
  /** Null: the vendor's default (parallel calls allowed). */
  parallelToolCalls: boolean | null
  /** Rounds of tool calls a run may make before it fails. */
  maxToolRounds: number
  /** How long a run waits for a round's results before it fails with TOOL_TIMEOUT; also how long one MCP call may take. */
  toolTimeoutMs: number
  /** The MCP servers whose allowed tools join `tools` when the run starts. */
  mcpServers: ToolServer[]
}

const DEFAULT_MAX_TOOL_ROUNDS = 8
const DEFAULT_TOOL_TIMEOUT_MS = 10 * 60_000

/** The tooling of a call that declared no tools (a vendor may still answer with calls asked for through `extra`). */
export const NO_TOOLS: Tooling = {
  tools: [],
  toolChoice: 'AUTO',
  parallelToolCalls: null,
  maxToolRounds: DEFAULT_MAX_TOOL_ROUNDS,
  toolTimeoutMs: DEFAULT_TOOL_TIMEOUT_MS,
  mcpServers: [],
}
const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/

const toolSpecSchema = z.strictObject({
  name: z.string().regex(TOOL_NAME, 'must be 1-64 characters of A-Z a-z 0-9 _ -'),
  description: z.string().max(4096).nullish(),
  inputSchema: boundedJsonObject().superRefine((schema, ctx) => {
    if (jsonOutOfBounds(schema) !== null) return
    const problem = compileOutputSchema(schema).error
    if (problem) ctx.addIssue({ code: 'custom', message: `is not a valid JSON Schema: ${problem}` })
    else if (schema.type !== undefined && schema.type !== 'object') ctx.addIssue({ code: 'custom', message: 'must describe an object' })
  }),
  strict: z.boolean().nullish(),
})

const toolChoiceSchema = z.preprocess(
  // GraphQL's ToolChoiceInput ({ mode, name }) and a file's `required` or `{ name }` alike
  (v) => {
    if (typeof v === 'string') return v.toUpperCase()
    if (v && typeof v === 'object' && 'mode' in v) return v.mode === 'TOOL' ? { name: (v as { name?: unknown }).name } : v.mode
    return v
  },
  z.union([z.enum(['AUTO', 'NONE', 'REQUIRED']), z.strictObject({ name: z.string().regex(TOOL_NAME, 'must name a declared tool') })]),
)

/** The tool fields of a prompt (file or API), a profile or a request, each absent to inherit. */
export const toolLayerShape = {
  tools: z
    .array(toolSpecSchema)
    .max(128)
    .superRefine((tools, ctx) => {
      const names = tools.map((t) => t.name)
      const twice = names.find((name, i) => names.indexOf(name) !== i)
      if (twice) ctx.addIssue({ code: 'custom', message: `declares tool '${twice}' twice` })
    })
    .nullish(),
  toolChoice: toolChoiceSchema.nullish(),
  parallelToolCalls: z.boolean().nullish(),
  maxToolRounds: z.number().int().min(1).max(64).nullish(),
  toolTimeoutMs: z
    .number()
    .int()
    .min(1_000)
    .max(24 * 3_600_000)
    .nullish(),
  mcpServers: z
    .array(toolServerSchema)
    .max(16)
    .superRefine((servers, ctx) => {
      const labels = servers.map((s) => s.label)
      const twice = labels.find((label, i) => labels.indexOf(label) !== i)
      if (twice) ctx.addIssue({ code: 'custom', message: `declares server '${twice}' twice` })
    })
    .nullish(),
}

type ParsedToolFields = {
  tools?: { name: string; description?: string | null; inputSchema: Record<string, unknown>; strict?: boolean | null }[] | null
  toolChoice?: ToolChoice | null
  parallelToolCalls?: boolean | null
  maxToolRounds?: number | null
  toolTimeoutMs?: number | null
  mcpServers?: ToolServer[] | null
}

/** The tool fields that were given, canonical (absent ones stay absent, so older definitions keep their hash). */
export function toolLayerOf(parsed: ParsedToolFields): ToolLayer {
  const layer: ToolLayer = {}
  if (parsed.tools) {
    layer.tools = parsed.tools.map((t) => ({
      name: t.name,
      description: t.description ?? null,
      inputSchema: t.inputSchema,
      strict: t.strict ?? false,
    }))
  }
  if (parsed.toolChoice != null) layer.toolChoice = parsed.toolChoice
  if (parsed.parallelToolCalls != null) layer.parallelToolCalls = parsed.parallelToolCalls
  if (parsed.maxToolRounds != null) layer.maxToolRounds = parsed.maxToolRounds
  if (parsed.toolTimeoutMs != null) layer.toolTimeoutMs = parsed.toolTimeoutMs
  if (parsed.mcpServers) layer.mcpServers = parsed.mcpServers
  return layer
}

/**
 * The layers merged, lowest first: tools are joined by name and MCP servers by label (a higher
 * layer's replaces the lower one's), the other fields are the highest layer's that sets them.
 * Null when no layer declares a tool or a server.
 */
export function mergeTooling(layers: readonly (ToolLayer | null | undefined)[]): Tooling | null {
  const tools = new Map<string, ToolSpec>()
  const servers = new Map<string, ToolServer>()
  const merged: Tooling = { ...NO_TOOLS }
  for (const layer of layers) {
    if (!layer) continue
    for (const tool of layer.tools ?? []) tools.set(tool.name, tool)
    for (const server of layer.mcpServers ?? []) servers.set(server.label, server)
    merged.toolChoice = layer.toolChoice ?? merged.toolChoice
    merged.parallelToolCalls = layer.parallelToolCalls ?? merged.parallelToolCalls
    merged.maxToolRounds = layer.maxToolRounds ?? merged.maxToolRounds
    merged.toolTimeoutMs = layer.toolTimeoutMs ?? merged.toolTimeoutMs
  }
  if (tools.size === 0 && servers.size === 0) return null
  merged.tools = [...tools.values()]
  merged.mcpServers = [...servers.values()]
  return merged
}

/** The tool a choice names that is not declared, or null (a server's tools are known once the run lists them). */
export function undeclaredChoice(tooling: Tooling): string | null {
  const { toolChoice } = tooling
  if (typeof toolChoice !== 'object' || tooling.mcpServers.length > 0) return null
  return tooling.tools.some((t) => t.name === toolChoice.name) ? null : toolChoice.name
}

/** A call the model made: its id (normalised), the tool, and the arguments as it wrote them. */
export interface ToolCall {
  callId: string
  name: string
  /** The arguments' JSON text, as the model streamed it. */
  arguments: string
}

// Anthropic ids must match [A-Za-z0-9_-]+; OpenAI's must be at most 40 characters
const ID_UNSAFE = /[^A-Za-z0-9_-]/g
const MAX_ID = 40

/**
 * A call id both vendors accept and unique among `taken` (which it joins): the vendor's id made
 * safe and short enough, or a new one where it sent none or repeated one (parallel calls have
 * shared an id).
 */
export function normalisedCallId(id: string | null, taken: Set<string>): string {
  let safe = (id ?? '').replace(ID_UNSAFE, '_').slice(0, MAX_ID)
  if (safe === '' || taken.has(safe)) safe = `call_${randomUUID().replaceAll('-', '').slice(0, 24)}`
  taken.add(safe)
  return safe
}

/** A call's arguments as JSON, or undefined when they are not JSON (an empty text is `{}`). */
export function parsedArguments(text: string): unknown {
  try {
    return text.trim() === '' ? {} : JSON.parse(text)
  } catch {
    return undefined
  }
}

/** What is wrong with a call's arguments: not JSON, an undeclared tool, or (strict tools) against its schema. */
export function argumentErrors(call: ToolCall, tools: readonly ToolSpec[]): string[] {
  const value = parsedArguments(call.arguments)
  if (value === undefined) return ['the arguments are not JSON']
  const tool = tools.find((t) => t.name === call.name)
  if (!tool) return [`the model called '${call.name}', which is not declared`]
  if (!tool.strict) return []
  const { validate } = compileOutputSchema(tool.inputSchema)
  if (!validate || validate(value)) return []
  return (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? 'is invalid'}`)
}

/**
 * A history every vendor accepts: an assistant's call without a result (a run aborted mid-round)
 * is dropped from it, and so is a result whose call is not there; an assistant message left
 * with neither text nor calls goes too.
 */
export function pairedHistory<M extends { role: string; content: string; toolCalls?: ToolCall[]; toolCallId?: string | null }>(
  messages: readonly M[],
): M[] {
  const answered = new Set(messages.filter((m) => m.role === 'tool' && m.toolCallId).map((m) => m.toolCallId!))
  const called = new Set<string>()
  const paired: M[] = []
  for (const m of messages) {
    if (m.role === 'tool') {
      if (m.toolCallId && called.has(m.toolCallId)) paired.push(m)
      continue
    }
    if (!m.toolCalls || m.toolCalls.length === 0) {
      paired.push(m)
      continue
    }
    const toolCalls = m.toolCalls.filter((c) => answered.has(c.callId))
    for (const c of toolCalls) called.add(c.callId)
    if (toolCalls.length > 0 || m.content !== '') paired.push({ ...m, toolCalls })
  }
  return paired
}
