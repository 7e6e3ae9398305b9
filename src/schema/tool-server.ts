import type { ApprovalDecision } from '../domain/tool-rounds.js'
import type { ApprovalPolicy, ToolServer } from '../domain/tool-servers.js'
import { type BuilderTypes, builder } from './builder.js'

const ApprovalModeEnum = builder.enumType('ApprovalMode', {
  description: "Which calls of an MCP server's tools wait for an approval (approveToolCalls) before promptline makes them.",
  values: {
    ALWAYS: { description: 'Every call (the default).' },
    NEVER: { description: 'None: promptline makes each call at once.' },
    BY_TOOL: { description: 'Those of the tools `always` names, and any tool `never` does not name.' },
  },
})

const ApprovalPolicyRef = builder.objectRef<ApprovalPolicy>('ApprovalPolicy').implement({
  description: "Which calls of a server's tools wait for an approval.",
  fields: (t) => ({
    mode: t.field({
      type: ApprovalModeEnum,
      description: 'ALWAYS, NEVER, or BY_TOOL with the lists.',
      resolve: (p) => (typeof p === 'object' ? 'BY_TOOL' : p),
    }),
    always: t.stringList({ description: 'With BY_TOOL: tools whose calls wait.', resolve: (p) => (typeof p === 'object' ? p.always : []) }),
    never: t.stringList({
      description: 'With BY_TOOL: tools whose calls are made at once.',
      resolve: (p) => (typeof p === 'object' ? p.never : []),
    }),
  }),
})

const ServerHeaderRef = builder.objectRef<ToolServer['headers'][number]>('McpServerHeader').implement({
  description: 'A header the server receives; its value is read from an environment variable when promptline connects, and never shown.',
  fields: (t) => ({
    name: t.exposeString('name', { description: 'The header.' }),
    valueEnv: t.exposeString('valueEnv', { description: 'The variable its value is read from.' }),
  }),
})

export const ToolServerRef = builder.objectRef<ToolServer>('McpServer').implement({
  description: 'An MCP server whose tools promptline offers to the model and calls itself (Streamable HTTP).',
  fields: (t) => ({
    label: t.exposeString('label', { description: 'Names the server in calls, results and events.' }),
    url: t.exposeString('url', { description: 'Its Streamable HTTP endpoint.' }),
    allowedTools: t.exposeStringList('allowedTools', {
      nullable: true,
      description: 'The tools offered to the model; null offers every tool the server lists.',
    }),
    requireApproval: t.field({
      type: ApprovalPolicyRef,
      description: 'Which calls wait for an approval.',
      resolve: (s) => s.requireApproval,
    }),
    headers: t.field({
      type: [ServerHeaderRef],
      description: 'Headers sent to it, by the variables they are read from.',
      resolve: (s) => s.headers,
    }),
  }),
})

const ApprovalPolicyInput = builder.inputType('ApprovalPolicyInput', {
  description: "Which calls of a server's tools wait for an approval.",
  fields: (t) => ({
    mode: t.field({ type: ApprovalModeEnum, required: true, description: 'ALWAYS, NEVER, or BY_TOOL with the lists.' }),
    always: t.stringList({ description: 'With BY_TOOL: tools whose calls wait.' }),
    never: t.stringList({ description: 'With BY_TOOL: tools whose calls are made at once.' }),
  }),
})

const ServerHeaderInput = builder.inputType('McpServerHeaderInput', {
  description: 'A header the server receives, read from an environment variable PROMPTLINE_MCP_HEADER_ENVS lists (never a literal secret).',
  fields: (t) => ({
    name: t.string({ required: true, description: 'The header, e.g. Authorization.' }),
    valueEnv: t.string({ required: true, description: "The variable holding the header's whole value (e.g. `Bearer …`)." }),
  }),
})

const ToolServerInput = builder.inputType('McpServerInput', {
  description: 'An MCP server whose tools promptline offers to the model and calls itself; its origin must be in PROMPTLINE_MCP_ORIGINS.',
  fields: (t) => ({
    label: t.string({ required: true, description: 'Names the server: 1-64 characters of A-Z a-z 0-9 _ -' }),
    url: t.string({ required: true, description: 'Its Streamable HTTP endpoint (http or https).' }),
    allowedTools: t.stringList({ description: 'The tools offered to the model (default: every tool it lists).' }),
    requireApproval: t.field({ type: ApprovalPolicyInput, description: 'Which calls wait for an approval (default ALWAYS).' }),
    headers: t.field({ type: [ServerHeaderInput], description: 'Headers sent to it, each read from a variable.' }),
  }),
})

/** The MCP servers field of a prompt, a profile or a request input. */
export const toolServersInputField = (t: PothosSchemaTypes.InputFieldBuilder<BuilderTypes, 'InputObject'>) =>
  t.field({
    type: [ToolServerInput],
    description: 'MCP servers whose tools promptline calls itself (over the lower layers; the same label replaces).',
  })

export const ApprovalDecisionRef = builder.objectRef<ApprovalDecision>('ApprovalDecision').implement({
  description: 'How a call that waited for an approval was decided, and by whom.',
  fields: (t) => ({
    approve: t.exposeBoolean('approve', { description: 'True: promptline made the call; false: it was declined and never made.' }),
    reason: t.exposeString('reason', { nullable: true, description: 'Why, as the decider said (a decline tells the model).' }),
    keyId: t.exposeString('keyId', { nullable: true, description: 'The API key that decided (its id); null where keys are off.' }),
    at: t.field({ type: 'DateTime', description: 'When it was decided.', resolve: (d) => d.at }),
  }),
})

const DecisionInput = builder.inputType('ToolCallDecisionInput', {
  description: 'An approval or a decline of one call.',
  fields: (t) => ({
    callId: t.id({ required: true, description: 'The call (PendingToolCall.callId, with approvalRequired).' }),
    approve: t.boolean({ required: true, description: 'True makes the call; false declines it: the model is told, with the reason.' }),
    reason: t.string({ description: 'Why; a decline gives it to the model.' }),
  }),
})

export const ApproveToolCallsInput = builder.inputType('ApproveToolCallsInput', {
  description: 'Decisions on calls a run waits to have approved.',
  fields: (t) => ({
    runId: t.id({ required: true, description: 'The waiting run.' }),
    decisions: t.field({ type: [DecisionInput], required: true, description: 'Some or all of the calls awaiting approval.' }),
    idempotencyKey: t.string({ description: 'A repeat with the same key takes nothing and answers as the first did.' }),
  }),
})
