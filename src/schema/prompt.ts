import type { Prompt } from '../domain/catalog.js'
import type { OutputContract, OutputEnforcement, OutputKind, ParallelSpec } from '../domain/definitions.js'
import { NotFoundError } from '../domain/errors.js'
import type { ChatMessage, MessageRole } from '../domain/records.js'
import { builder } from './builder.js'
import { ContentPartInput, ContentPartRef } from './content-part.js'
import { describedValues } from './described.js'
import { encodeCursor, forwardPage, PAGE_DEFAULT, PAGE_MAX, pageArgs, toConnection } from './paging.js'
import { ResponseCacheInput, ResponseCacheLayerRef } from './response-cache.js'
import { ToolCallRef, ToolSettingsRef, toolInputFields } from './tool.js'

export const DefinitionSourceEnum = builder.enumType('DefinitionSource', {
  description: 'Where a definition comes from.',
  values: {
    CATALOG: { description: 'A file in the server catalog folder (read-only through the API).' },
    API: { description: 'Created through the API by this tenant; shadows a catalog definition with the same id.' },
  },
})

export const RoleEnum = builder.enumType('Role', {
  description: 'Who says a message.',
  values: {
    SYSTEM: { value: 'system' as MessageRole, description: 'Instructions to the model; leading system messages go before the history.' },
    USER: { value: 'user' as MessageRole, description: 'The user: prompts, inputs and steers.' },
    ASSISTANT: { value: 'assistant' as MessageRole, description: 'The model: its answers (and its tool calls).' },
    TOOL: { value: 'tool' as MessageRole, description: "A tool's result, in a conversation (not a template role)." },
  },
})

const OutputKindEnum = builder.enumType('OutputKind', {
  description: 'What a run must answer: free text, any JSON, or JSON matching a schema.',
  values: describedValues<OutputKind>({
    TEXT: 'Any text.',
    JSON: 'Text that parses as JSON (one ``` fence around it is taken off).',
    JSON_SCHEMA: "JSON valid against the prompt's JSON Schema.",
  }),
})

export const OutputEnforcementEnum = builder.enumType('OutputEnforcement', {
  description: 'How an output contract is enforced. Every answer is validated (and repaired within maxRepairs) either way.',
  values: describedValues<OutputEnforcement>({
    AUTO: "The vendor's native JSON-schema mode when the schema fits what the vendor takes (docs/providers.md), else validation alone.",
    NATIVE: "The vendor's native JSON-schema mode; a backend or schema that cannot take it is refused at admission. Needs JSON_SCHEMA.",
    VALIDATE: 'Validation alone: the schema is never sent to the vendor.',
  }),
})

export const ChatMessageRef = builder.objectRef<ChatMessage>('ChatMessage').implement({
  description: 'One message: a template in a prompt, or a rendered message sent to a model.',
  fields: (t) => ({
    role: t.field({ type: RoleEnum, description: 'Who says it.', resolve: (m) => m.role }),
    content: t.exposeString('content', { description: 'The template or the rendered text.' }),
    parts: t.field({
      type: [ContentPartRef],
      description: 'Images, files and more text after the content; empty for plain text.',
      resolve: (m) => m.parts ?? [],
    }),
    toolCalls: t.field({
      type: [ToolCallRef],
      description: "An assistant message's tool calls; empty otherwise.",
      resolve: (m) => m.toolCalls ?? [],
    }),
    toolCallId: t.id({ nullable: true, description: 'A TOOL message: the call it answers.', resolve: (m) => m.toolCallId ?? null }),
  }),
})

export const OutputContractRef = builder.objectRef<OutputContract>('OutputContract').implement({
  description: 'The output a prompt promises.',
  fields: (t) => ({
    kind: t.field({ type: OutputKindEnum, description: 'What the answer must be.', resolve: (o) => o.kind }),
    schema: t.field({ type: 'JSON', nullable: true, description: 'The JSON Schema, for JSON_SCHEMA.', resolve: (o) => o.schema }),
    enforcement: t.field({
      type: OutputEnforcementEnum,
      description: 'How the schema is enforced.',
      resolve: (o) => o.enforcement ?? 'AUTO',
    }),
  }),
})

const ParallelSelectEnum = builder.enumType('ParallelSelect', {
  description: 'How a parallel prompt picks its answer.',
  values: {
    FIRST_VALID: { description: 'The first answer that meets the output contract; the others are stopped.' },
    BEST_OF: { description: 'All answer; the judge prompt picks the best.' },
  },
})

const ParallelRef = builder.objectRef<ParallelSpec>('ParallelCandidates').implement({
  description: 'Several profiles answer at once; one answer is selected, the others are kept as alternatives.',
  fields: (t) => ({
    profiles: t.exposeIDList('profiles', { description: 'The profiles that answer at once, in order.' }),
    select: t.field({ type: ParallelSelectEnum, description: 'How the answer is picked.', resolve: (p) => p.select }),
    judgePromptId: t.exposeID('judgePromptId', {
      nullable: true,
      description:
        'For BEST_OF: a prompt given the variables input and candidates ([{ index, profileId, output }]) that answers {"best": index}.',
    }),
  }),
})

export const PromptRef = builder.objectRef<Prompt>('Prompt').implement({
  description: 'A named prompt definition: message templates, default profile and output contract.',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'The prompt id (yours, or the catalog file name).' }),
    description: t.exposeString('description', { nullable: true, description: 'What the prompt is for; null when none was given.' }),
    source: t.field({ type: DefinitionSourceEnum, description: 'Catalog file or API.', resolve: (p) => p.source }),
    version: t.exposeInt('version', { description: 'Bumped whenever the definition changes.' }),
    definitionHash: t.exposeString('definitionHash', { description: 'sha256 of the canonical definition.' }),
    messages: t.field({ type: [ChatMessageRef], description: 'The message templates.', resolve: (p) => p.definition.messages }),
    defaultProfileId: t.id({
      nullable: true,
      description: 'The profile used when a request names none; null: the session default applies.',
      resolve: (p) => p.definition.defaultProfileId,
    }),
    output: t.field({ type: OutputContractRef, description: 'What a run must answer.', resolve: (p) => p.definition.output }),
    maxRepairs: t.int({
      description: 'Repair generations allowed when output fails its contract.',
      resolve: (p) => p.definition.maxRepairs,
    }),
    variables: t.exposeStringList('variables', { description: 'Variables the templates refer to, in order of first use.' }),
    parallel: t.field({
      type: ParallelRef,
      nullable: true,
      description: 'Set when several profiles answer at once; null otherwise.',
      resolve: (p) => p.definition.parallel ?? null,
    }),
    cache: t.field({
      type: ResponseCacheLayerRef,
      nullable: true,
      description: "The prompt's layer of the exact response cache; null when unset.",
      resolve: (p) => p.definition.cache ?? null,
    }),
    tooling: t.field({
      type: ToolSettingsRef,
      description: 'The tools its runs may call (with those of the profile and the request), and how.',
      resolve: (p) => p.definition,
    }),
    updatedAt: t.field({ type: 'DateTime', description: 'When this version was saved.', resolve: (p) => p.updatedAt }),
  }),
})

const PromptInspectionRef = builder.objectRef<Prompt>('PromptInspection').implement({
  description: 'A structural look at a prompt: its canonical definition and the variables it needs.',
  fields: (t) => ({
    prompt: t.field({ type: PromptRef, description: 'The prompt itself.', resolve: (p) => p }),
    id: t.exposeID('id', { description: 'The prompt id.' }),
    version: t.exposeInt('version', { description: 'The current version.' }),
    definitionHash: t.exposeString('definitionHash', { description: 'sha256 of the canonical definition.' }),
    definition: t.field({
      type: 'JSON',
      description: 'The canonical definition that definitionHash covers.',
      resolve: (p) => p.definition,
    }),
    variables: t.exposeStringList('variables', { description: 'Variables the templates refer to, in order of first use.' }),
  }),
})

const promptCursor = (p: Prompt) => encodeCursor('prompt', p.id)
const PromptConnection = builder.connectionObject({ type: PromptRef, name: 'PromptConnection' })

builder.queryFields((t) => ({
  prompts: t.field({
    type: PromptConnection,
    description: `Prompts visible to the caller, by id. Forward paging only: first (default ${PAGE_DEFAULT}, at most ${PAGE_MAX}) and after.`,
    args: pageArgs(t.arg),
    resolve: async (_root, args, ctx) => {
      const { first, after } = forwardPage(args, 'prompt', 1)
      const prompts = await ctx.services.catalog.listPrompts(ctx.tenantId, after?.[0] ?? null, first + 1)
      return toConnection(prompts, first, after !== null, promptCursor)
    },
  }),
  prompt: t.field({
    type: PromptRef,
    nullable: true,
    description: 'A prompt by id, or null.',
    args: { id: t.arg.id({ required: true, description: 'The prompt id.' }) },
    resolve: (_root, { id }, ctx) => ctx.services.catalog.getPrompt(ctx.tenantId, String(id)),
  }),
  inspectPrompt: t.field({
    type: PromptInspectionRef,
    description: 'The canonical definition of a prompt, its hash and its variables. NOT_FOUND when it does not exist.',
    args: { id: t.arg.id({ required: true, description: 'The prompt id.' }) },
    resolve: (_root, { id }, ctx) => ctx.services.catalog.inspectPrompt(ctx.tenantId, String(id)),
  }),
}))

const PromptMessageInput = builder.inputType('PromptMessageInput', {
  description: 'One message template.',
  fields: (t) => ({
    role: t.field({ type: RoleEnum, required: true, description: 'Who says it.' }),
    content: t.string({ required: true, description: 'Template text; {{ name }} or {{ a.b }} insert variables.' }),
    parts: t.field({
      type: [ContentPartInput],
      description:
        'Up to 64 parts after the content: TEXT (a template), and in a user message IMAGE and FILE (a url, a fileId, or a variable holding one).',
    }),
  }),
})

const OutputContractInput = builder.inputType('OutputContractInput', {
  description: 'The output a prompt promises.',
  fields: (t) => ({
    kind: t.field({ type: OutputKindEnum, required: true, description: 'What the answer must be.' }),
    schema: t.field({ type: 'JSON', description: 'A JSON Schema; required with JSON_SCHEMA, refused otherwise.' }),
    enforcement: t.field({ type: OutputEnforcementEnum, description: 'How the schema is enforced; default AUTO.' }),
  }),
})

const ParallelInput = builder.inputType('ParallelCandidatesInput', {
  description: 'Several profiles answering at once.',
  fields: (t) => ({
    profiles: t.idList({ required: true, description: '2 to 8 profiles.' }),
    select: t.field({ type: ParallelSelectEnum, required: true, description: 'How the answer is picked.' }),
    judgePromptId: t.id({ description: 'Required with BEST_OF.' }),
  }),
})

const UpsertPromptInput = builder.inputType('UpsertPromptInput', {
  description: 'A prompt definition of this tenant.',
  fields: (t) => ({
    id: t.id({ required: true, description: '1-128 characters of A-Z a-z 0-9 _ . -' }),
    description: t.string({ description: 'What the prompt is for (not part of the definition hash).' }),
    messages: t.field({ type: [PromptMessageInput], required: true, description: '1 to 256 message templates.' }),
    defaultProfileId: t.id({ description: 'The profile used when a request names none.' }),
    output: t.field({ type: OutputContractInput, description: 'Defaults to TEXT.' }),
    maxRepairs: t.int({ description: '0 to 10; default 0.' }),
    parallel: t.field({ type: ParallelInput, description: 'Run several profiles at once and select one answer.' }),
    cache: t.field({ type: ResponseCacheInput, description: "The prompt's layer of the exact response cache (over the profile's)." }),
    ...toolInputFields(t),
  }),
})

const UpsertPromptPayload = builder.objectRef<{ prompt: Prompt }>('UpsertPromptPayload').implement({
  description: 'The saved prompt.',
  fields: (t) => ({
    prompt: t.field({ type: PromptRef, description: 'The prompt as saved, with its version.', resolve: (p) => p.prompt }),
  }),
})

const DeletePromptPayload = builder.objectRef<{ deletedId: string }>('DeletePromptPayload').implement({
  description: 'The deleted prompt.',
  fields: (t) => ({ deletedId: t.exposeID('deletedId', { description: 'The id of the prompt deleted.' }) }),
})

builder.mutationFields((t) => ({
  upsertPrompt: t.field({
    type: UpsertPromptPayload,
    authScopes: { admin: true },
    description: "Creates or changes this tenant's prompt; the version is bumped only when the definition changes. Needs an admin key.",
    errors: { types: [NotFoundError] },
    args: { input: t.arg({ type: UpsertPromptInput, required: true, description: 'The definition.' }) },
    resolve: async (_root, { input }, ctx) => ({ prompt: await ctx.services.catalog.upsertPrompt(ctx, input) }),
  }),
  deletePrompt: t.field({
    type: DeletePromptPayload,
    authScopes: { admin: true },
    description: "Deletes this tenant's prompt (a catalog prompt it shadowed becomes visible again). Needs an admin key.",
    errors: { types: [NotFoundError] },
    args: { id: t.arg.id({ required: true, description: 'The prompt to delete.' }) },
    resolve: async (_root, { id }, ctx) => ({ deletedId: await ctx.services.catalog.deletePrompt(ctx.tenantId, String(id)) }),
  }),
}))
