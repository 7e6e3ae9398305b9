import { z } from 'zod'
import { type Principal, recordedKeyId } from '../domain/access.js'
import type { ContentPart } from '../domain/content-parts.js'
import { InvalidRequestError } from '../domain/errors.js'
import type { RunOrigin, RunRecord, Usage } from '../domain/records.js'
import { answersExactly } from '../domain/tool-rounds.js'
import type { CatalogService } from './catalog-service.js'
import type { RunService } from './run-service.js'

/** A field of an OpenAI request promptline cannot honour: refused with 400 `unsupported_parameter`, never dropped. */
export class UnsupportedParameterError extends InvalidRequestError {}

/** Refuses the first of `params` the request sets. */
export function refuseUnsupported(request: Record<string, unknown>, params: readonly string[]): void {
  for (const param of params)
    if (request[param] != null) throw new UnsupportedParameterError(`promptline does not support '${param}'`, param)
}

/** Parses a request body; a failure is a 400 naming the field (`param`). */
export function parseBody<T extends z.ZodType>(schema: T, body: unknown): z.infer<T> {
  const parsed = schema.safeParse(body)
  if (parsed.success) return parsed.data
  const issue = parsed.error.issues[0]!
  throw InvalidRequestError.at(issue.path.join('.') || 'body', issue.message)
}

const PROMPT_MODEL = /^prompt:([A-Za-z0-9_.-]{1,128})(?:@([A-Za-z0-9_.-]{1,64})|#(\d{1,9}))?$/

/**
 * What `model` names, as a run request's fields: a profile by id, or a prompt as
 * `prompt:<id>`, `prompt:<id>@<label>` or `prompt:<id>#<version>` (run by `profile` when given,
 * else by the prompt's default profile).
 */
export function modelTarget(model: string, profile: string | null | undefined): Record<string, unknown> {
  const prompt = PROMPT_MODEL.exec(model)
  if (!model.startsWith('prompt:')) return { profileId: model }
  if (!prompt) throw InvalidRequestError.at('model', 'must be a profile id, or prompt:<id>, prompt:<id>@<label> or prompt:<id>#<version>')
  const [, id, label, version] = prompt
  return {
    promptRef: { id, ...(label && { label }), ...(version && { version: Number(version) }) },
    ...(profile != null && { profileId: profile }),
  }
}

/** The prompt's variables: `prompt_variables`, or `metadata.prompt_variables` for SDKs that refuse unknown fields. */
export const promptVariablesSchema = z.record(z.string(), z.unknown()).nullish()

/**
 * `metadata`, whose `prompt_variables` may also be JSON text: OpenAI types `metadata` as strings
 * to strings, so a typed SDK can send the variables only that way.
 */
export const metadataSchema = z
  .object({
    prompt_variables: z
      .union([
        z.record(z.string(), z.unknown()),
        z.string().transform((text, ctx) => {
          const parsed = parseJsonObject(text)
          if (parsed) return parsed
          ctx.addIssue({ code: 'custom', message: 'must be an object of variables, or that object as JSON text' })
          return z.NEVER
        }),
      ])
      .nullish(),
  })
  .passthrough()
  .nullish()

function parseJsonObject(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text)
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null
  } catch {
    return null
  }
}

/** `GET /v1/models`: the profiles and prompts the key may use. */
export async function listModels(catalog: CatalogService, principal: Principal) {
  const { allowedProfiles, allowedPrompts } = principal.policy ?? { allowedProfiles: null, allowedPrompts: null }
  const profiles = (await catalog.listProfiles(principal.tenantId)).filter((p) => !allowedProfiles || allowedProfiles.includes(p.id))
  const prompts = []
  for (let page = await catalog.listPrompts(principal.tenantId, null, 200); page.length > 0; ) {
    prompts.push(...page.filter((p) => !allowedPrompts || allowedPrompts.includes(p.id)))
    page = page.length < 200 ? [] : await catalog.listPrompts(principal.tenantId, page.at(-1)!.id, 200)
  }
  // a key limited to prompts has no use for a bare profile
  const usable = allowedPrompts ? [] : profiles
  return {
    object: 'list',
    data: [
      ...usable.map((p) => ({ id: p.id, object: 'model', created: 0, owned_by: p.backendId })),
      ...prompts.map((p) => ({ id: `prompt:${p.id}`, object: 'model', created: 0, owned_by: 'promptline' })),
    ],
  }
}

/** A function tool as either OpenAI API declares it. */
export interface FunctionTool {
  name: string
  description?: string | null
  parameters?: Record<string, unknown> | null
  strict?: boolean | null
}

/** A tool choice: a mode, or the function to call. */
export type FunctionChoice = 'auto' | 'none' | 'required' | { name: string }

/** Declared tools as a run request's tool fields. */
export function toolFields(
  tools: FunctionTool[] | null | undefined,
  choice: FunctionChoice | null | undefined,
  parallel: boolean | null | undefined,
) {
  return {
    ...(tools != null &&
      tools.length > 0 && {
        tools: tools.map((t) => ({
          name: t.name,
          description: t.description ?? null,
          inputSchema: t.parameters ?? { type: 'object', properties: {} },
          strict: t.strict ?? null,
        })),
      }),
    ...(choice != null && { toolChoice: typeof choice === 'string' ? choice.toUpperCase() : choice }),
    ...(parallel != null && { parallelToolCalls: parallel }),
  }
}

/** A response format (`response_format`, `text.format`). */
export interface ResponseFormat {
  type: string
  schema?: Record<string, unknown> | null
}

/**
 * A response format as a run request's output contract: `json_schema` through the contract
 * machinery (the vendor's native mode where it has one, else validated and repaired), `json_object`
 * as JSON; none for text.
 */
export function outputFields(format: ResponseFormat | null | undefined, param: string): { output?: Record<string, unknown> } {
  if (!format || format.type === 'text') return {}
  if (format.type === 'json_object') return { output: { kind: 'JSON' } }
  if (format.type === 'json_schema') return { output: { kind: 'JSON_SCHEMA', schema: format.schema ?? null } }
  throw new UnsupportedParameterError(`promptline does not support the response format '${format.type}'`, param)
}

/** `user`, recorded as the tag `user:<id>` (characters a tag cannot hold become `_`). */
export function userTag(user: string | null | undefined): { tags?: string[] } {
  if (!user) return {}
  return { tags: [`user:${user.replace(/[^A-Za-z0-9_.:/=-]/g, '_')}`.slice(0, 64)] }
}

const NO_USAGE: Usage = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 }

/** A run's token counts (none yet: zeros). */
export const usageOfRun = (run: RunRecord): Usage => run.usage ?? NO_USAGE

/** An image or file part of an OpenAI message, as a content part. */
export function mediaPart(
  kind: 'IMAGE' | 'FILE',
  source: { url?: string | null; fileId?: string | null; detail?: string | null },
): ContentPart {
  return {
    type: kind,
    ...(source.url != null && { url: source.url }),
    ...(source.fileId != null && { fileId: source.fileId }),
    ...(source.detail != null && { detail: source.detail.toUpperCase() as ContentPart['detail'] }),
  }
}

/**
 * The run of this key and surface that waits for exactly the results `answered` gives; null when
 * none does. This is how a stateless client, which resends the whole history, continues its run.
 */
export async function runWaitingFor(
  runs: RunService,
  principal: Principal,
  origin: RunOrigin,
  answered: ReadonlySet<string>,
): Promise<RunRecord | null> {
  if (answered.size === 0) return null
  const waiting = await runs.runs(principal.tenantId, { status: 'REQUIRES_ACTION' }, null, 200)
  const keyId = recordedKeyId(principal)
  return waiting.find((run) => run.origin === origin && run.keyId === keyId && answersExactly(run, answered)) ?? null
}
