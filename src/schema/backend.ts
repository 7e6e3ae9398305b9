import type { CapacitySnapshot } from '../capacity/capacity-pool.js'
import type { Backend } from '../domain/catalog.js'
import type { BackendKind, Dialect } from '../domain/definitions.js'
import { capabilitiesOf } from '../providers/capabilities.js'
import { builder } from './builder.js'
import { BackendCapabilitiesRef } from './content-part.js'
import { describedValues } from './described.js'
import { settingsJson } from './settings.js'

const BackendKindEnum = builder.enumType('BackendKind', {
  description: 'Which vendor API a backend speaks.',
  values: describedValues<BackendKind>({
    OPENAI: 'The OpenAI chat completions API, through the official openai SDK.',
    ANTHROPIC: 'The Anthropic messages API, through the official @anthropic-ai/sdk.',
    GEMINI: 'The Gemini API (generateContent, with an API key), through the official @google/genai SDK.',
    AZURE_OPENAI:
      'Azure OpenAI chat completions (a deployment as the model, an api-version, an api-key), through the official openai SDK’s AzureOpenAI.',
    FAKE: 'The built-in fake backend: model echo streams the last user message back; no key needed.',
  }),
})

const DialectEnum = builder.enumType('Dialect', {
  description: 'An OpenAI-compatible server an OPENAI backend names, for what it does differently (docs/providers.md).',
  values: describedValues<Dialect>({
    OLLAMA: 'Ollama: no key, max_tokens, no parallel_tool_calls field, not priced.',
    VLLM: 'vLLM: max_tokens, OpenAI’s fields otherwise, not priced.',
    LM_STUDIO: 'LM Studio: no key, max_tokens, no reasoning_effort or parallel_tool_calls, not priced.',
    GROQ: 'Groq: max_completion_tokens, usage also in x_groq, priced as Groq.',
    OPENROUTER: 'OpenRouter: max_tokens, PDFs as files, reasoning deltas, priced as OpenRouter.',
    DEEPSEEK: 'DeepSeek: text only, no JSON schema (contracts validated), no seed or reasoning_effort, reasoning_content deltas.',
    MISTRAL: 'Mistral: no stream_options, the seed as random_seed, thinking as typed content chunks.',
    TOGETHER: 'Together: max_tokens, reasoning deltas, priced as Together.',
  }),
})

const CapacityRef = builder.objectRef<CapacitySnapshot>('BackendCapacity').implement({
  description: "A backend's limits and their use right now.",
  fields: (t) => ({
    maxAccepted: t.exposeInt('maxAccepted', { description: 'Runs accepted at once (from admission to their end).' }),
    maxActive: t.exposeInt('maxActive', { description: 'The most model calls in flight at once: the ceiling of activeLimit.' }),
    maxWaiting: t.exposeInt('maxWaiting', { description: 'Runs allowed to wait for acceptance; past that, CAPACITY.' }),
    accepted: t.exposeInt('accepted', { description: 'Runs holding a lease now.' }),
    active: t.exposeInt('active', { description: 'Model calls in flight now.' }),
    waiting: t.exposeInt('waiting', { description: 'Runs waiting for a lease now.' }),
    activeLimit: t.exposeInt('activeLimit', {
      description:
        'The adaptive limit of model calls in flight now: halved when the vendor answers 429 or overloaded, grown back by one per success while it holds calls back, up to maxActive.',
    }),
    callsWaiting: t.exposeInt('callsWaiting', { description: 'Model calls waiting for activeLimit now.' }),
    pausedUntil: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'Until when the vendor asked for no new calls (its retry-after); null when it did not, or that time has passed.',
      resolve: (c) => c.pausedUntil,
    }),
  }),
})

type ModelPrice = {
  model: string
  inputPerMillion: number
  outputPerMillion: number
  cacheReadPerMillion?: number | null
  cacheWritePerMillion?: number | null
}

const PriceRef = builder.objectRef<ModelPrice>('ModelPrice').implement({
  description: 'USD per million tokens.',
  fields: (t) => ({
    model: t.exposeString('model', { description: 'The model priced.' }),
    inputPerMillion: t.exposeFloat('inputPerMillion', { description: 'USD per million uncached input tokens.' }),
    outputPerMillion: t.exposeFloat('outputPerMillion', { description: 'USD per million output tokens.' }),
    cacheReadPerMillion: t.float({
      nullable: true,
      description: 'USD per million input tokens read from the cache; null: the input price.',
      resolve: (p) => p.cacheReadPerMillion ?? null,
    }),
    cacheWritePerMillion: t.float({
      nullable: true,
      description: 'USD per million input tokens written to the cache; null: the input price.',
      resolve: (p) => p.cacheWritePerMillion ?? null,
    }),
  }),
})

export const BackendRef = builder.objectRef<Backend>('Backend').implement({
  description: 'A provider connection, defined in the server catalog.',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'The backend id.' }),
    kind: t.field({ type: BackendKindEnum, description: 'Which vendor API it speaks.', resolve: (b) => b.kind }),
    dialect: t.field({
      type: DialectEnum,
      nullable: true,
      description: 'The OpenAI-compatible server an OPENAI backend names; null: OpenAI’s own rules (or an unnamed copy at baseUrl).',
      resolve: (b) => b.dialect ?? null,
    }),
    capabilities: t.field({
      type: BackendCapabilitiesRef,
      description: 'What its vendor takes besides text: images, files, native structured output, prompt caching.',
      resolve: (b) => capabilitiesOf(b),
    }),
    baseUrl: t.string({
      nullable: true,
      description: "The API base URL; null leaves it to the vendor SDK's default.",
      resolve: (b) => b.baseUrl ?? null,
    }),
    credentialEnv: t.string({
      nullable: true,
      description: 'The environment variable holding the default API key (never its value).',
      resolve: (b) => b.credentialEnv ?? null,
    }),
    settings: t.field({ type: 'JSON', description: 'The backend settings layer.', resolve: (b) => settingsJson(b.settings) }),
    capacity: t.field({
      type: CapacityRef,
      description: 'Its limits and their use right now.',
      resolve: (b, _args, ctx) => ctx.services.catalog.capacityOf(b),
    }),
    prices: t.field({
      type: [PriceRef],
      description: "The catalog's own prices by model, over the bundled price table (for private or unlisted models).",
      resolve: (b) => Object.entries(b.prices ?? {}).map(([model, price]) => ({ model, ...price })),
    }),
  }),
})

builder.queryField('backends', (t) =>
  t.field({
    type: [BackendRef],
    description: 'Every configured backend.',
    resolve: (_root, _args, ctx) => ctx.services.catalog.listBackends(),
  }),
)
