import type { SettingsLayer } from '../domain/definitions.js'
import { type EffectiveSettings, redactSettings } from '../domain/settings.js'
import { type BuilderTypes, builder } from './builder.js'
import { ContentPartInput } from './content-part.js'
import { ResponseCacheInput } from './response-cache.js'
import { toolInputFields } from './tool.js'

const PromptCacheModeEnum = builder.enumType('PromptCacheMode', {
  description: "Whether a run asks the vendor's prompt cache for its prefix.",
  values: {
    AUTO: {
      description:
        "Anthropic: cache marks on the tools, the system text, the history's end and the request's end; OpenAI: a prompt_cache_key.",
    },
    OFF: { description: 'Nothing is asked (OpenAI still caches long prefixes by itself).' },
  } as const,
})

const PromptCacheTtlEnum = builder.enumType('PromptCacheTtl', {
  description: 'How long a cached prefix should live.',
  values: {
    FIVE_MINUTES: { description: "The vendors' default (Anthropic 5 minutes; OpenAI in memory, minutes)." },
    ONE_HOUR: { description: "Anthropic's 1-hour cache (writes cost more); OpenAI's extended retention (prompt_cache_retention 24h)." },
  } as const,
})

const PromptCacheKeyEnum = builder.enumType('PromptCacheKey', {
  description: "What OpenAI's prompt_cache_key is scoped to (a hash; no id leaves for the vendor).",
  values: {
    SESSION: { description: 'The tenant and session: the runs of one conversation share a cache.' },
    PROMPT: { description: 'The tenant and prompt: all runs of one prompt share a cache.' },
    NONE: { description: 'No key is sent.' },
  } as const,
})

const PromptCacheInput = builder.inputType('PromptCacheInput', {
  description:
    "What a run asks of the vendor's prompt cache; an absent field inherits the lower layer (defaults OFF, FIVE_MINUTES, SESSION).",
  fields: (t) => ({
    mode: t.field({ type: PromptCacheModeEnum, description: 'AUTO asks for caching; OFF does not.' }),
    ttl: t.field({ type: PromptCacheTtlEnum, description: 'How long the cached prefix should live.' }),
    key: t.field({ type: PromptCacheKeyEnum, description: "The scope of OpenAI's prompt_cache_key." }),
  }),
})

export const SettingsOverrideInput = builder.inputType('SettingsOverrideInput', {
  description: 'One layer of generation settings. An absent or null field inherits the lower layer; 0 is a value.',
  fields: (t) => ({
    temperature: t.float({ description: 'Sampling temperature, 0 to 2.' }),
    maxTokens: t.int({ description: 'Most tokens to generate, at least 1.' }),
    topP: t.float({ description: 'Nucleus sampling mass, 0 to 1.' }),
    seed: t.int({ description: "Asks the vendor to sample deterministically (OpenAI's seed; Anthropic takes none)." }),
    stop: t.stringList({ description: 'Stop sequences (replaces the inherited list; [] clears it).' }),
    reasoningEffort: t.string({ description: 'none, minimal, low, medium, high or xhigh; a blank string clears the inherited value.' }),
    extra: t.field({ type: 'JSON', description: 'Vendor parameters passed through; a non-empty map replaces the inherited one whole.' }),
    promptCache: t.field({ type: PromptCacheInput, description: "What to ask of the vendor's prompt cache." }),
    firstTokenTimeoutMs: t.int({
      description:
        'An attempt that streams nothing for this long (100 to 600000 ms) ends with STREAM_TIMEOUT; see the profile onStreamFailure.',
    }),
    streamIdleTimeoutMs: t.int({
      description:
        'An attempt silent this long (100 to 600000 ms) between two tokens ends with STREAM_TIMEOUT; see the profile onStreamFailure.',
    }),
  }),
})

/** Settings as answered: every key present, secret-looking `extra` values shown as "***"; a layer's promptCache as set. */
export function settingsJson(settings: SettingsLayer | EffectiveSettings | null | undefined) {
  return redactSettings({
    temperature: settings?.temperature ?? null,
    maxTokens: settings?.maxTokens ?? null,
    topP: settings?.topP ?? null,
    seed: settings?.seed ?? null,
    stop: settings?.stop ?? null,
    reasoningEffort: settings?.reasoningEffort ?? null,
    extra: settings?.extra ?? {},
    promptCache: settings?.promptCache ?? null,
    firstTokenTimeoutMs: settings?.firstTokenTimeoutMs ?? null,
    streamIdleTimeoutMs: settings?.streamIdleTimeoutMs ?? null,
  })
}

export const PromptRefInput = builder.inputType('PromptRefInput', {
  description:
    "A prompt at a version: give at most one of version and label; neither means the 'production' label when the prompt has it, else 'latest'. Resolved once, at admission.",
  fields: (t) => ({
    id: t.id({ required: true, description: 'The prompt.' }),
    version: t.int({ description: 'A stored version number.' }),
    label: t.string({ description: "A label of the prompt; 'latest' is always the newest version." }),
  }),
})

/** The fields of a run request, shared by the enqueue, schedule and prepare inputs. */
export function runRequestFields(t: PothosSchemaTypes.InputFieldBuilder<BuilderTypes, 'InputObject'>) {
  return {
    promptId: t.id({
      description:
        "A catalog prompt at its 'production' label, else its newest version; without one (or a promptRef), input is sent as a plain user message.",
    }),
    promptRef: t.field({ type: PromptRefInput, description: 'A prompt at a version or label (instead of promptId).' }),
    input: t.string({ description: "The user's text: the plain message, or the prompt's input variable." }),
    parts: t.field({
      type: [ContentPartInput],
      description:
        "Up to 64 images, files or texts for the user message: after the plain input, or after the prompt's last user message. Each backend of the profile must take them (Backend.capabilities).",
    }),
    variables: t.field({ type: 'JSON', description: 'A JSON object with the template variables.' }),
    profileId: t.id({ description: "Overrides the prompt's (or the session's) default profile." }),
    overrides: t.field({ type: SettingsOverrideInput, description: 'The request settings layer, on top of backend and profile.' }),
    credentialEnv: t.string({ description: "An environment variable to take the API key from, over the profile's." }),
    ...toolInputFields(t),
    cache: t.field({
      type: ResponseCacheInput,
      description: "The request's layer of the exact response cache, over the prompt's and the profile's; { mode: OFF } bypasses it.",
    }),
    tags: t.stringList({
      description: 'Up to 16 tags (1-64 characters of A-Z a-z 0-9 _ . : / = -), recorded on the run; usageReport groups by them.',
    }),
  }
}
