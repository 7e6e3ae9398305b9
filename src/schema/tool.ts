import type { RunRecord } from '../domain/records.js'
import { pendingCalls, type RoundCall, type ToolResult, type ToolRound } from '../domain/tool-rounds.js'
import { parsedArguments, type ToolCall, type ToolChoice, type ToolLayer, type ToolSpec } from '../domain/tools.js'
import { type BuilderTypes, builder } from './builder.js'
import { ApprovalDecisionRef, ToolServerRef, toolServersInputField } from './tool-server.js'
import { UsageRef } from './usage.js'

const ToolRef = builder.objectRef<ToolSpec>('Tool').implement({
  description: 'A function the model may call; the application runs it and submits its result.',
  fields: (t) => ({
    name: t.exposeString('name', { description: '1-64 characters of A-Z a-z 0-9 _ -' }),
    description: t.exposeString('description', { nullable: true, description: 'What it does, for the model.' }),
    inputSchema: t.field({ type: 'JSON', description: 'The JSON Schema of its arguments object.', resolve: (tool) => tool.inputSchema }),
    strict: t.exposeBoolean('strict', {
      description: 'The vendor is asked to keep to the schema exactly, and the arguments are checked against it.',
    }),
  }),
})

const ToolChoiceModeEnum = builder.enumType('ToolChoiceMode', {
  description: 'Which tools the model must call.',
  values: {
    AUTO: { description: 'Any of them, or none, as the model likes (default).' },
    NONE: { description: 'None: it answers in text.' },
    REQUIRED: { description: 'At least one.' },
    TOOL: { description: 'The one named.' },
  },
})

const ToolChoiceRef = builder.objectRef<ToolChoice>('ToolChoice').implement({
  description: 'Which tools the model must call.',
  fields: (t) => ({
    mode: t.field({
      type: ToolChoiceModeEnum,
      description: 'AUTO, NONE, REQUIRED, or TOOL with its name.',
      resolve: (c) => (typeof c === 'object' ? 'TOOL' : c),
    }),
    name: t.string({ nullable: true, description: 'The tool, for TOOL.', resolve: (c) => (typeof c === 'object' ? c.name : null) }),
  }),
})

export const ToolSettingsRef = builder.objectRef<ToolLayer>('ToolSettings').implement({
  description: 'The tools of a prompt or a profile and how they are called; a null field inherits the lower layer.',
  fields: (t) => ({
    tools: t.field({
      type: [ToolRef],
      description: 'The tools its runs may call (a request adds to them; the same name replaces).',
      resolve: (l) => l.tools ?? [],
    }),
    toolChoice: t.field({
      type: ToolChoiceRef,
      nullable: true,
      description: 'Which tools must be called; null inherits.',
      resolve: (l) => l.toolChoice ?? null,
    }),
    parallelToolCalls: t.boolean({
      nullable: true,
      description: 'Whether the model may call several tools at once; null inherits (the vendor allows it).',
      resolve: (l) => l.parallelToolCalls ?? null,
    }),
    maxToolRounds: t.int({
      nullable: true,
      description: 'Rounds of tool calls a run may make; null inherits (8).',
      resolve: (l) => l.maxToolRounds ?? null,
    }),
    toolTimeoutMs: t.int({
      nullable: true,
      description: 'How long a run waits for results, and one MCP call may take; null inherits (10 minutes).',
      resolve: (l) => l.toolTimeoutMs ?? null,
    }),
    mcpServers: t.field({
      type: [ToolServerRef],
      description: 'MCP servers whose tools promptline calls itself (a request adds to them; the same label replaces).',
      resolve: (l) => l.mcpServers ?? [],
    }),
  }),
})

const ToolInput = builder.inputType('ToolInput', {
  description: 'A function the model may call.',
  fields: (t) => ({
    name: t.string({ required: true, description: '1-64 characters of A-Z a-z 0-9 _ -' }),
    description: t.string({ description: 'What it does, for the model.' }),
    inputSchema: t.field({ type: 'JSON', required: true, description: 'The JSON Schema of its arguments (an object).' }),
    strict: t.boolean({ description: 'Ask the vendor to keep to the schema exactly, and check the arguments against it (default false).' }),
  }),
})

const ToolChoiceInput = builder.inputType('ToolChoiceInput', {
  description: 'Which tools the model must call.',
  fields: (t) => ({
    mode: t.field({ type: ToolChoiceModeEnum, required: true, description: 'AUTO, NONE, REQUIRED, or TOOL with name.' }),
    name: t.string({ description: 'The tool, with TOOL.' }),
  }),
})

/** The tool fields of a prompt, a profile or a request input. */
export function toolInputFields(t: PothosSchemaTypes.InputFieldBuilder<BuilderTypes, 'InputObject'>) {
  return {
    tools: t.field({ type: [ToolInput], description: 'Tools the model may call (over the lower layers; the same name replaces).' }),
    toolChoice: t.field({ type: ToolChoiceInput, description: 'Which tools must be called (default AUTO).' }),
    parallelToolCalls: t.boolean({ description: "Whether the model may call several tools at once (default: the vendor's)." }),
    maxToolRounds: t.int({ description: 'Rounds of tool calls a run may make, 1 to 64 (default 8); one more fails the run.' }),
    toolTimeoutMs: t.int({
      description:
        'How long a run waits for a round of results, 1 000 ms to 24 h (default 10 minutes), before it fails with TOOL_TIMEOUT; also how long one MCP call may take.',
    }),
    mcpServers: toolServersInputField(t),
  }
}

/** Where a call is made, for every call type: an MCP server's label, or null (the application). */
const serverField = (t: PothosSchemaTypes.ObjectFieldBuilder<BuilderTypes, Partial<RoundCall>>) =>
  t.string({
    nullable: true,
    description: 'The MCP server promptline makes the call on (its label); null when the application runs it and submits its result.',
    resolve: (c) => c.server ?? null,
  })

export const ToolCallRef = builder.objectRef<ToolCall & Partial<RoundCall>>('ToolCall').implement({
  description: 'A call the model made.',
  fields: (t) => ({
    callId: t.exposeID('callId', { description: 'The id its result names (normalised, so either vendor accepts it).' }),
    name: t.exposeString('name', { description: 'The tool called.' }),
    argumentsText: t.string({ description: 'The arguments as the model wrote them (JSON text).', resolve: (c) => c.arguments }),
    server: serverField(t),
    approvalRequired: t.boolean({
      description: 'The call waited for an approval (approveToolCalls) before promptline would make it.',
      resolve: (c) => c.approvalRequired === true,
    }),
    decision: t.field({
      type: ApprovalDecisionRef,
      nullable: true,
      description: 'How its approval was decided, and by whom; null until then, and for a call that needs none.',
      resolve: (c) => c.decision ?? null,
    }),
  }),
})

export const PendingToolCallRef = builder.objectRef<RoundCall>('PendingToolCall').implement({
  description:
    'A call the run waits for a result of: from the application, or from an MCP server promptline calls (once approved, where it must be).',
  fields: (t) => ({
    callId: t.exposeID('callId', { description: 'The id to submit its result (or decision) with.' }),
    name: t.exposeString('name', { description: 'The tool called.' }),
    server: serverField(t),
    approvalRequired: t.boolean({
      description: 'It waits for an approval: approve or decline it with approveToolCalls.',
      resolve: (c) => c.approvalRequired === true && c.decision === undefined,
    }),
    arguments: t.field({
      type: 'JSON',
      nullable: true,
      description: 'The arguments, parsed; null when the model wrote no valid JSON (see argumentErrors).',
      resolve: (c) => parsedArguments(c.arguments) ?? null,
    }),
    argumentErrors: t.exposeStringList('argumentErrors', {
      description:
        'What is wrong with the arguments: not JSON, an undeclared tool, or (strict tools) against its schema; empty when they are fine.',
    }),
  }),
})

const ToolResultRef = builder.objectRef<ToolResult>('ToolResult').implement({
  description: "What a call answered: the application's submission, or the MCP server's result (content, then structured content as JSON).",
  fields: (t) => ({
    callId: t.exposeID('callId', { description: 'The call it answers.' }),
    output: t.exposeString('output', { description: 'What the tool returned, as the model was given it.' }),
    isError: t.exposeBoolean('isError', { description: 'The tool failed (or the call was declined); the output says how.' }),
    at: t.field({ type: 'DateTime', description: 'When it was submitted or returned.', resolve: (r) => r.at }),
    server: t.string({
      nullable: true,
      description: 'The MCP server that answered (its label); null for a submitted result.',
      resolve: (r) => r.server ?? null,
    }),
    durationMs: t.int({
      nullable: true,
      description: 'How long the MCP call took; null for a submitted result and a declined call.',
      resolve: (r) => r.durationMs ?? null,
    }),
  }),
})

export const ToolRoundRef = builder.objectRef<ToolRound>('ToolRound').implement({
  description: "One round of a run's tool calls: what the model said and called, and the results.",
  fields: (t) => ({
    text: t.exposeString('text', { description: 'The text the model said with its calls.' }),
    calls: t.field({ type: [ToolCallRef], description: 'The calls, in the order made.', resolve: (r) => r.calls }),
    results: t.field({ type: [ToolResultRef], description: 'The results submitted so far.', resolve: (r) => r.results }),
    deadline: t.field({ type: 'DateTime', description: 'When the run stops waiting for the missing results.', resolve: (r) => r.deadline }),
    usage: t.field({
      type: UsageRef,
      description: "What the round's model calls used (also counted in Run.usage).",
      resolve: (r) => r.usage,
    }),
  }),
})

/** The calls a run waits for results of; empty unless it is REQUIRES_ACTION. */
export function pendingToolCalls(run: RunRecord): RoundCall[] {
  const last = run.toolRounds.at(-1)
  return run.status === 'REQUIRES_ACTION' && last ? pendingCalls(last) : []
}

const ToolResultInput = builder.inputType('ToolResultInput', {
  description: "One call's result.",
  fields: (t) => ({
    callId: t.id({ required: true, description: 'The call it answers (PendingToolCall.callId).' }),
    output: t.string({ required: true, description: 'What the tool returned: JSON text or plain text, given to the model as it is.' }),
    isError: t.boolean({ description: 'The tool failed; the output says how (default false).' }),
  }),
})

export const SubmitToolResultsInput = builder.inputType('SubmitToolResultsInput', {
  description: 'Results for a run waiting for them (REQUIRES_ACTION).',
  fields: (t) => ({
    runId: t.id({ required: true, description: 'The waiting run.' }),
    results: t.field({
      type: [ToolResultInput],
      required: true,
      description: 'Some or all of the pending calls; the next round starts once every call has one.',
    }),
    idempotencyKey: t.string({ description: 'A repeat with the same key takes nothing and answers as the first did.' }),
  }),
})
