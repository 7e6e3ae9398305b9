import type { PreparedPrompt } from '../runner/prepare.js'
import { builder } from './builder.js'
import { CredentialSourceRef } from './profile.js'
import { ChatMessageRef, OutputContractRef } from './prompt.js'
import { SettingsOverrideInput, settingsJson } from './settings.js'

const PreparePromptInput = builder.inputType('PreparePromptInput', {
  fields: (t) => ({
    promptId: t.id({ description: 'A catalog prompt; without one, input is sent as a plain user message.' }),
    input: t.string({ description: "The user's text: the plain message, or the prompt's input variable." }),
    profileId: t.id({ description: "Overrides the prompt's default profile." }),
    variables: t.field({ type: 'JSON', description: 'A JSON object with the template variables.' }),
    overrides: t.field({ type: SettingsOverrideInput, description: 'The request settings layer, on top of backend and profile.' }),
    credentialEnv: t.string({ description: "An environment variable to take the API key from, over the profile's." }),
    sessionId: t.id({ description: "Render after this session's conversation history." }),
  }),
})

const PreparedPromptRef = builder.objectRef<PreparedPrompt>('PreparedPrompt').implement({
  description: 'A prompt resolved and rendered exactly as a run would send it; no model was called.',
  fields: (t) => ({
    messages: t.field({ type: [ChatMessageRef], resolve: (p) => p.messages }),
    promptId: t.id({ nullable: true, description: 'Null for a plain input message.', resolve: (p) => p.prompt?.id ?? null }),
    promptVersion: t.int({ nullable: true, resolve: (p) => p.prompt?.version ?? null }),
    definitionHash: t.string({
      nullable: true,
      description: 'sha256 of the canonical prompt definition.',
      resolve: (p) => p.prompt?.definitionHash ?? null,
    }),
    renderedHash: t.exposeString('renderedHash', { description: 'sha256 of the canonical rendered messages.' }),
    profileId: t.id({ resolve: (p) => p.profile.id }),
    backendId: t.id({ resolve: (p) => p.backend.id }),
    model: t.exposeString('model'),
    endpoint: t.string({ nullable: true, resolve: (p) => p.endpoint }),
    settings: t.field({ type: 'JSON', description: 'Effective settings, secrets redacted.', resolve: (p) => settingsJson(p.settings) }),
    output: t.field({ type: OutputContractRef, resolve: (p) => p.output }),
    credential: t.field({ type: CredentialSourceRef, resolve: (p) => p.credential }),
  }),
})

builder.queryField('preparePrompt', (t) =>
  t.field({
    type: PreparedPromptRef,
    description: 'A dry run: resolve profile, settings and credentials and render the messages, without calling a model.',
    args: { input: t.arg({ type: PreparePromptInput, required: true }) },
    resolve: (_root, { input }, ctx) =>
      ctx.services.runs.prepare(ctx.tenantId, {
        promptId: input.promptId == null ? null : String(input.promptId),
        input: input.input,
        profileId: input.profileId == null ? null : String(input.profileId),
        variables: input.variables,
        overrides: input.overrides,
        credentialEnv: input.credentialEnv,
        sessionId: input.sessionId == null ? null : String(input.sessionId),
      }),
  }),
)
