import type { PreparedPrompt } from '../runner/prepare.js'
import { builder } from './builder.js'
import { CredentialSourceRef } from './profile.js'
import { ChatMessageRef, OutputContractRef } from './prompt.js'
import { PromptIncludeRef } from './prompt-include.js'
import { runRequestFields, settingsJson } from './settings.js'

const PreparePromptInput = builder.inputType('PreparePromptInput', {
  description: 'A request to resolve and render without running it.',
  fields: (t) => ({
    ...runRequestFields(t),
    sessionId: t.id({ description: "Render after this session's conversation history." }),
  }),
})

const PreparedPromptRef = builder.objectRef<PreparedPrompt>('PreparedPrompt').implement({
  description: 'A prompt resolved and rendered exactly as a run would send it; no model was called.',
  fields: (t) => ({
    messages: t.field({
      type: [ChatMessageRef],
      description: 'The messages a run would send: system, history, then this prompt.',
      resolve: (p) => p.messages,
    }),
    promptId: t.id({ nullable: true, description: 'Null for a plain input message.', resolve: (p) => p.prompt?.id ?? null }),
    promptVersion: t.int({
      nullable: true,
      description: 'The prompt version resolved; null for a plain input.',
      resolve: (p) => p.prompt?.version ?? null,
    }),
    promptLabel: t.exposeString('promptLabel', {
      nullable: true,
      description: "The label that chose the version ('latest' included); null when a version was named or for a plain input.",
    }),
    definitionHash: t.string({
      nullable: true,
      description: 'sha256 of the canonical prompt definition.',
      resolve: (p) => p.prompt?.definitionHash ?? null,
    }),
    renderedHash: t.exposeString('renderedHash', { description: 'sha256 of the canonical rendered messages (includes expanded).' }),
    includes: t.field({
      type: [PromptIncludeRef],
      description: 'The prompts included, at the versions resolved now (a run resolves them at admission).',
      resolve: (p) => p.includes.list,
    }),
    profileId: t.id({ description: 'The profile picked: the request, prompt or session default.', resolve: (p) => p.profile.id }),
    backendId: t.id({ description: "The profile's backend.", resolve: (p) => p.backend.id }),
    model: t.exposeString('model', { description: 'The model the run would ask.' }),
    endpoint: t.string({
      nullable: true,
      description: "The base URL requests would go to; null for the vendor's default.",
      resolve: (p) => p.endpoint,
    }),
    settings: t.field({ type: 'JSON', description: 'Effective settings, secrets redacted.', resolve: (p) => settingsJson(p.settings) }),
    output: t.field({ type: OutputContractRef, description: 'What the answer must be.', resolve: (p) => p.output }),
    credential: t.field({
      type: CredentialSourceRef,
      description: 'Where the API key would come from (never its value).',
      resolve: (p) => p.credential,
    }),
  }),
})

builder.queryField('preparePrompt', (t) =>
  t.field({
    type: PreparedPromptRef,
    description: 'A dry run: resolve profile, settings and credentials and render the messages, without calling a model.',
    args: { input: t.arg({ type: PreparePromptInput, required: true, description: 'What to prepare.' }) },
    resolve: (_root, { input }, ctx) =>
      ctx.services.runs.prepare(ctx.tenantId, {
        promptId: input.promptId == null ? null : String(input.promptId),
        promptRef: input.promptRef,
        input: input.input,
        profileId: input.profileId == null ? null : String(input.profileId),
        variables: input.variables,
        overrides: input.overrides,
        credentialEnv: input.credentialEnv,
        sessionId: input.sessionId == null ? null : String(input.sessionId),
      }),
  }),
)
