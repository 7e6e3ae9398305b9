import { z } from 'zod'
import { contentPartTemplateSchema, type PartTemplate, toContentPart } from './content-parts.js'
import { Secret } from './credentials.js'
import { InvalidRequestError } from './errors.js'
import { boundedJsonObject, jsonOutOfBounds } from './json-bounds.js'
import { compileOutputSchema } from './output-schema.js'
import { compileTemplate } from './template.js'
import { type ToolLayer, toolLayerOf, toolLayerShape } from './tools.js'

/** Prompt, profile and backend ids are the user's own strings. */
export const ID_PATTERN = /^[A-Za-z0-9_.-]{1,128}$/
export const idSchema = z.string().regex(ID_PATTERN, 'must be 1-128 characters of A-Z a-z 0-9 _ . -')
export const envNameSchema = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'must be an environment variable name')

const REASONING_EFFORTS = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh'] as const
const STREAM_FAILURE_POLICIES = ['FAIL', 'RESTART'] as const
export type StreamFailurePolicy = (typeof STREAM_FAILURE_POLICIES)[number]
export const PROMPT_CACHE_MODES = ['AUTO', 'OFF'] as const
export const PROMPT_CACHE_TTLS = ['FIVE_MINUTES', 'ONE_HOUR'] as const
export const PROMPT_CACHE_KEYS = ['SESSION', 'PROMPT', 'NONE'] as const

/** Enum values in files are case-insensitive; the canonical form is `canonical(value)`. */
function looseEnum<const T extends readonly [string, ...string[]]>(values: T, canonical: (v: string) => string) {
  return z.preprocess((v) => (typeof v === 'string' ? canonical(v) : v), z.enum(values))
}

/**
 * One layer of settings (backend, profile or request). `null`/absent inherits; `0` is a value;
 * a blank `reasoningEffort` clears the inherited one; a non-empty `extra` replaces the lower map.
 */
export const settingsLayerSchema = z.strictObject({
  temperature: z.number().min(0).max(2).nullish(),
  maxTokens: z.number().int().min(1).max(1_000_000).nullish(),
  topP: z.number().min(0).max(1).nullish(),
  /** Asks the vendor to sample deterministically (OpenAI's seed). */
  seed: z
    .number()
    .int()
    .min(-(2 ** 53) + 1)
    .max(2 ** 53 - 1)
    .nullish(),
  stop: z.array(z.string().min(1).max(256)).max(16).nullish(),
  reasoningEffort: z
    .string()
    .trim()
    .refine((v) => v === '' || (REASONING_EFFORTS as readonly string[]).includes(v), {
      message: `must be one of ${REASONING_EFFORTS.join(', ')} (or blank to clear)`,
    })
    .nullish(),
  extra: boundedJsonObject().nullish(),
  /** Asks the vendor to cache the request's prefix; each absent field inherits. */
  promptCache: z
    .strictObject({
      mode: looseEnum(PROMPT_CACHE_MODES, (v) => v.toUpperCase()),
      ttl: looseEnum(PROMPT_CACHE_TTLS, (v) => v.toUpperCase()),
      key: looseEnum(PROMPT_CACHE_KEYS, (v) => v.toUpperCase()),
    })
    .partial()
    .nullish(),
  /** An attempt that sends no token for this long ends with STREAM_TIMEOUT. */
  firstTokenTimeoutMs: z.number().int().min(100).max(600_000).nullish(),
  /** An attempt whose stream is silent this long between tokens ends with STREAM_TIMEOUT. */
  streamIdleTimeoutMs: z.number().int().min(100).max(600_000).nullish(),
})
export type SettingsLayer = z.infer<typeof settingsLayerSchema>

const RESPONSE_CACHE_MODES = ['EXACT', 'OFF'] as const

/** One layer of the exact response cache (profile < prompt < request); an absent field inherits. */
export const responseCacheLayerSchema = z.strictObject({
  mode: looseEnum(RESPONSE_CACHE_MODES, (v) => v.toUpperCase()).nullish(),
  /** How long an answer is served, 1 s to 30 days. */
  ttlSeconds: z
    .number()
    .int()
    .min(1)
    .max(30 * 86_400)
    .nullish(),
  /** Answers are shared only within a namespace. */
  namespace: z
    .string()
    .regex(/^[A-Za-z0-9_.:-]{1,64}$/, 'must be 1-64 characters of A-Z a-z 0-9 _ . : -')
    .nullish(),
})
export type ResponseCacheLayer = z.infer<typeof responseCacheLayerSchema>

const BACKEND_KINDS = ['OPENAI', 'ANTHROPIC', 'GEMINI', 'AZURE_OPENAI', 'FAKE'] as const
export type BackendKind = (typeof BACKEND_KINDS)[number]
/** Servers that copy OpenAI's Chat Completions, each with its own differences (an OPENAI backend's `dialect`). */
const DIALECTS = ['OLLAMA', 'VLLM', 'LM_STUDIO', 'GROQ', 'OPENROUTER', 'DEEPSEEK', 'MISTRAL', 'TOGETHER'] as const
export type Dialect = (typeof DIALECTS)[number]

const count = (min: number, max: number) => z.number().int().min(min).max(max)

export const backendSchema = z
  .strictObject({
    id: idSchema,
    kind: looseEnum(BACKEND_KINDS, (v) => v.toUpperCase()),
    baseUrl: z.url({ protocol: /^https?$/ }).nullish(),
    credentialEnv: envNameSchema.nullish(),
    /** Azure OpenAI's `api-version` (default 2024-10-21, the latest GA); other kinds take none. */
    apiVersion: z
      .string()
      .regex(/^\d{4}-\d{2}-\d{2}(-preview)?$/, 'must be an Azure api-version such as 2024-10-21')
      .nullish(),
    /** Which OpenAI-compatible server an OPENAI backend's baseUrl is, for what it does differently; none: OpenAI's own rules. */
    dialect: looseEnum(DIALECTS, (v) => v.toUpperCase().replaceAll('-', '_')).nullish(),
    settings: settingsLayerSchema.nullish(),
    /** Runs accepted at once, model calls in flight, runs allowed to wait (defaults 64, 16, 256). */
    capacity: z
      .strictObject({ maxAccepted: count(1, 100_000), maxActive: count(1, 100_000), maxWaiting: count(0, 1_000_000) })
      .partial()
      .nullish(),
    /** Retries of 429/5xx/network failures on the same candidate (defaults 3 attempts, 250 ms doubling, at most 10 s). */
    retry: z
      .strictObject({ maxAttempts: count(1, 10), baseDelayMs: count(0, 60_000), maxDelayMs: count(0, 600_000) })
      .partial()
      .nullish(),
    /** Base URLs besides baseUrl that profiles of this backend may send to (never with this backend's own key). */
    endpoints: z
      .array(z.url({ protocol: /^https?$/ }))
      .max(64)
      .nullish(),
    /** Environment variables, besides credentialEnv, that profiles and requests may name for this backend's key. */
    credentialEnvs: z.array(envNameSchema).max(64).nullish(),
    /** USD per million tokens, by model: overrides the bundled price table (for private or unlisted models). */
    prices: z
      .record(
        z.string(),
        z.strictObject({
          inputPerMillion: z.number().min(0),
          outputPerMillion: z.number().min(0),
          /** Cache reads and writes; the input price when absent. */
          cacheReadPerMillion: z.number().min(0).nullish(),
          cacheWritePerMillion: z.number().min(0).nullish(),
        }),
      )
      .nullish(),
  })
  .refine((b) => b.dialect == null || b.kind === 'OPENAI', {
    message: 'a dialect names an OpenAI-compatible server: only an OPENAI backend takes one',
    path: ['dialect'],
  })
export type BackendDefinition = z.infer<typeof backendSchema>

export const profileSchema = z.strictObject({
  id: idSchema,
  backendId: idSchema,
  model: z.string().trim().min(1).max(256),
  endpoint: z.url({ protocol: /^https?$/ }).nullish(),
  settings: settingsLayerSchema.nullish(),
  credentialEnv: envNameSchema.nullish(),
  /** A direct key, for catalog files only; never echoed anywhere. */
  apiKey: z
    .string()
    .min(1)
    .transform((key) => new Secret(key))
    .nullish(),
  candidates: z.array(idSchema).max(16).nullish(),
  /** The exact response cache for the profile's runs (a prompt's and a request's layers come on top). */
  cache: responseCacheLayerSchema.nullish(),
  /** What a stream that breaks after its first token (or stalls) does: fail the run, or restart on the next candidate. */
  onStreamFailure: looseEnum(STREAM_FAILURE_POLICIES, (v) => v.toUpperCase()).nullish(),
  /** Tools every run of the profile may call (a prompt's and a request's come on top), and how. */
  ...toolLayerShape,
})
export type ProfileDefinition = z.infer<typeof profileSchema>

const ROLES = ['system', 'user', 'assistant'] as const
export type Role = (typeof ROLES)[number]
const OUTPUT_KINDS = ['TEXT', 'JSON', 'JSON_SCHEMA'] as const
export type OutputKind = (typeof OUTPUT_KINDS)[number]
const OUTPUT_ENFORCEMENTS = ['AUTO', 'NATIVE', 'VALIDATE'] as const
/** How a schema is enforced: the vendor's native mode where the schema fits (AUTO), always (NATIVE), or validation alone. */
export type OutputEnforcement = (typeof OUTPUT_ENFORCEMENTS)[number]

const templateText = z
  .string()
  .max(1_000_000)
  .superRefine((content, ctx) => {
    const problem = compileTemplate(content).error
    if (problem) ctx.addIssue({ code: 'custom', message: problem })
  })

const messageTemplateSchema = z
  .strictObject({
    role: looseEnum(ROLES, (v) => v.toLowerCase()),
    content: templateText,
    /** Images, files and more text after the content; a TEXT part's text is a template too. */
    parts: z.array(contentPartTemplateSchema).max(64).nullish(),
  })
  .superRefine((message, ctx) => {
    if (message.role !== 'user' && message.parts?.some((p) => p.type !== 'TEXT'))
      ctx.addIssue({ code: 'custom', path: ['parts'], message: `a ${message.role} message takes TEXT parts only` })
    for (const [i, part] of (message.parts ?? []).entries()) {
      const problem = part.text != null && compileTemplate(part.text).error
      if (problem) ctx.addIssue({ code: 'custom', path: ['parts', i, 'text'], message: problem })
    }
  })

/** A message template as a definition keeps it: `parts` absent when it has none, so older definitions keep their hash. */
export interface MessageTemplate {
  role: Role
  content: string
  parts?: PartTemplate[]
}

/** Every template text of the messages: contents and TEXT parts. */
export const templateTextsOf = (messages: readonly MessageTemplate[]): string[] =>
  messages.flatMap((m) => [m.content, ...(m.parts ?? []).flatMap((p) => (p.type === 'TEXT' && p.text ? [p.text] : []))])

/** The variables IMAGE and FILE parts take their source from. */
export const partVariablesOf = (messages: readonly MessageTemplate[]): string[] =>
  messages.flatMap((m) => (m.parts ?? []).flatMap((p) => (p.variable ? [p.variable] : [])))

/** An output contract as a prompt or a request gives it. */
export const outputContractSchema = z
  .strictObject({
    kind: looseEnum(OUTPUT_KINDS, (v) => v.toUpperCase()),
    schema: boundedJsonObject().nullish(),
    enforcement: looseEnum(OUTPUT_ENFORCEMENTS, (v) => v.toUpperCase()).nullish(),
  })
  .superRefine((output, ctx) => {
    if (output.enforcement === 'NATIVE' && output.kind !== 'JSON_SCHEMA')
      ctx.addIssue({ code: 'custom', path: ['enforcement'], message: 'NATIVE needs kind JSON_SCHEMA' })
    if (output.kind !== 'JSON_SCHEMA') {
      if (output.schema != null) ctx.addIssue({ code: 'custom', path: ['schema'], message: 'is only allowed with kind JSON_SCHEMA' })
      return
    }
    if (output.schema == null) return ctx.addIssue({ code: 'custom', path: ['schema'], message: 'is required with kind JSON_SCHEMA' })
    // a schema out of bounds has its issue already, and is never compiled (a deep one would overflow the stack)
    if (jsonOutOfBounds(output.schema) !== null) return
    const problem = compileOutputSchema(output.schema).error
    if (problem) ctx.addIssue({ code: 'custom', path: ['schema'], message: `is not a valid JSON Schema: ${problem}` })
  })
/** `enforcement` is absent for AUTO, so definitions from before it keep their hash. */
export type OutputContract = {
  kind: OutputKind
  schema: Record<string, unknown> | null
  enforcement?: Exclude<OutputEnforcement, 'AUTO'>
}

const PARALLEL_SELECTS = ['FIRST_VALID', 'BEST_OF'] as const
type ParallelSelect = (typeof PARALLEL_SELECTS)[number]

const parallelSchema = z
  .strictObject({
    profiles: z.array(idSchema).min(2).max(8),
    select: looseEnum(PARALLEL_SELECTS, (v) => v.toUpperCase()),
    judgePromptId: idSchema.nullish(),
  })
  .superRefine((parallel, ctx) => {
    if (parallel.select === 'BEST_OF' && !parallel.judgePromptId)
      ctx.addIssue({ code: 'custom', path: ['judgePromptId'], message: 'is required with BEST_OF' })
    if (parallel.select !== 'BEST_OF' && parallel.judgePromptId)
      ctx.addIssue({ code: 'custom', path: ['judgePromptId'], message: 'is only used with BEST_OF' })
    if (new Set(parallel.profiles).size !== parallel.profiles.length)
      ctx.addIssue({ code: 'custom', path: ['profiles'], message: 'lists a profile twice' })
  })

/** Several profiles answer at once; one answer is selected, the others kept as alternatives. */
export interface ParallelSpec {
  profiles: string[]
  select: ParallelSelect
  judgePromptId: string | null
}

export const promptSchema = z.strictObject({
  id: idSchema,
  description: z.string().max(4096).nullish(),
  messages: z.array(messageTemplateSchema).min(1).max(256),
  defaultProfileId: idSchema.nullish(),
  output: outputContractSchema.nullish(),
  maxRepairs: z.number().int().min(0).max(10).nullish(),
  parallel: parallelSchema.nullish(),
  cache: responseCacheLayerSchema.nullish(),
  ...toolLayerShape,
})

/** The part of a prompt that decides what a run does; hashed into `definitionHash`. Its tool fields are absent when unset. */
export interface PromptDefinition extends ToolLayer {
  messages: MessageTemplate[]
  defaultProfileId: string | null
  output: OutputContract
  maxRepairs: number
  /** Absent (not null) when unused, so older definitions keep their hash. */
  parallel?: ParallelSpec
  /** The response cache for the prompt's runs; absent when unset. */
  cache?: ResponseCacheLayer
}

/** Normalizes a parsed prompt into its description and its canonical definition. */
export function toPromptDefinition(parsed: z.infer<typeof promptSchema>): { description: string | null; definition: PromptDefinition } {
  return {
    description: parsed.description ?? null,
    definition: {
      messages: parsed.messages.map((m) => ({
        role: m.role,
        content: m.content,
        ...(m.parts && m.parts.length > 0 && { parts: m.parts.map(toContentPart) }),
      })),
      defaultProfileId: parsed.defaultProfileId ?? null,
      output: outputContractOf(parsed.output),
      maxRepairs: parsed.maxRepairs ?? 0,
      ...(parsed.parallel && {
        parallel: {
          profiles: parsed.parallel.profiles,
          select: parsed.parallel.select,
          judgePromptId: parsed.parallel.judgePromptId ?? null,
        },
      }),
      ...(parsed.cache && { cache: parsed.cache }),
      ...toolLayerOf(parsed),
    },
  }
}

/** A parsed output contract (absent: TEXT), without its nulls. */
export function outputContractOf(output: z.infer<typeof outputContractSchema> | null | undefined): OutputContract {
  const enforcement = output?.enforcement ?? 'AUTO'
  return { kind: output?.kind ?? 'TEXT', schema: output?.schema ?? null, ...(enforcement !== 'AUTO' && { enforcement }) }
}

const issuePath = (issue: z.core.$ZodIssue, root: string): string =>
  issue.path.reduce<string>((acc, key) => (typeof key === 'number' ? `${acc}[${key}]` : acc ? `${acc}.${String(key)}` : String(key)), root)

/** Formats a zod error as `path: message` items joined by "; ", the paths rooted at `root`. */
export function describeIssues(error: z.ZodError, root = ''): string {
  return error.issues
    .map((issue) => {
      const path = issuePath(issue, root)
      return path ? `${path}: ${issue.message}` : issue.message
    })
    .join('; ')
}

/** Parses untrusted input; a failure is an INVALID_REQUEST naming the field(s), rooted at `root`. */
export function parseInput<T>(schema: z.ZodType<T>, value: unknown, root: string): T {
  const parsed = schema.safeParse(value)
  if (parsed.success) return parsed.data
  throw new InvalidRequestError(describeIssues(parsed.error, root), issuePath(parsed.error.issues[0]!, root) || root)
}
