import { z } from 'zod'
import { type Principal, recordedKeyId } from './access.js'
import type { KeyPolicy } from './api-keys.js'
import { contentPartSchema, toContentPart } from './content-parts.js'
import {
  envNameSchema,
  idSchema,
  outputContractOf,
  outputContractSchema,
  parseInput,
  responseCacheLayerSchema,
  settingsLayerSchema,
} from './definitions.js'
import { boundedJsonObject } from './json-bounds.js'
import { promptRefShape } from './prompt-labels.js'
import type { ChatMessage, RunOrigin, RunRequest } from './records.js'
import { toolLayerOf, toolLayerShape } from './tools.js'
import { webhookUrlSchema } from './webhooks.js'

/** The longest user text a request may carry (an input, a steer). */
export const MAX_TEXT = 1024 * 1024

/** A tag: a short word to group runs and their usage by. */
const tagSchema = z.string().regex(/^[A-Za-z0-9_.:/=-]{1,64}$/, 'must be 1-64 characters of A-Z a-z 0-9 _ . : / = -')
const MAX_TAGS = 16

const toolCallSchema = z.strictObject({
  callId: z.string().min(1).max(64),
  name: z.string().min(1).max(64),
  arguments: z.string().max(MAX_TEXT),
})

/** A message of a conversation a request carries whole (the OpenAI surfaces' messages and input items). */
const conversationMessageSchema = z.strictObject({
  role: z.enum(['system', 'user', 'assistant', 'tool']),
  content: z.string().max(MAX_TEXT),
  parts: z.array(contentPartSchema).max(64).nullish(),
  toolCalls: z.array(toolCallSchema).max(128).nullish(),
  toolCallId: z.string().min(1).max(64).nullish(),
  isError: z.boolean().nullish(),
})

/** What a caller asks to run; validated once, at the service boundary. */
const runRequestSchema = z
  .strictObject({
    promptId: idSchema.nullish(),
    promptRef: z.strictObject({ id: idSchema, ...promptRefShape }).nullish(),
    input: z.string().max(MAX_TEXT).nullish(),
    variables: boundedJsonObject('must be a JSON object of variable values').nullish(),
    profileId: idSchema.nullish(),
    overrides: settingsLayerSchema.nullish(),
    credentialEnv: envNameSchema.nullish(),
    cache: responseCacheLayerSchema.nullish(),
    parts: z.array(contentPartSchema).max(64).nullish(),
    messages: z.array(conversationMessageSchema).min(1).max(1000).nullish(),
    output: outputContractSchema.nullish(),
    ...toolLayerShape,
    tags: z
      .array(tagSchema)
      .max(MAX_TAGS, `at most ${MAX_TAGS} tags`)
      .refine((tags) => new Set(tags).size === tags.length, 'names a tag twice')
      .nullish(),
  })
  .refine((r) => r.promptId != null || r.promptRef != null || r.input != null || r.messages != null, {
    message: 'give a promptId, a promptRef or an input text',
    path: ['promptId'],
  })
  .refine((r) => r.promptId == null || r.promptRef == null, { message: 'give promptId or promptRef, not both', path: ['promptRef'] })
  .refine((r) => r.promptRef?.version == null || r.promptRef.label == null, {
    message: 'give at most one of version and label',
    path: ['promptRef', 'label'],
  })

/** Parses an untrusted run request; a failure is an INVALID_REQUEST naming the field, rooted at `root`. */
export function parseRunRequest(value: unknown, root: string): RunRequest {
  const parsed = parseInput(runRequestSchema, value, root)
  const tools = toolLayerOf(parsed)
  const ref = parsed.promptRef
  return {
    promptId: ref?.id ?? parsed.promptId ?? null,
    input: parsed.input ?? null,
    variables: parsed.variables ?? null,
    profileId: parsed.profileId ?? null,
    overrides: parsed.overrides ?? null,
    credentialEnv: parsed.credentialEnv ?? null,
    // absent when none is given, so a request's stored form (and its idempotency hash) stays as it was
    ...(Object.keys(tools).length > 0 && { tools }),
    ...(ref?.version != null && { promptVersion: ref.version }),
    ...(ref?.label != null && { promptLabel: ref.label }),
    ...(parsed.tags != null && parsed.tags.length > 0 && { tags: parsed.tags }),
    ...(parsed.cache != null && { cache: parsed.cache }),
    ...(parsed.parts != null && parsed.parts.length > 0 && { parts: parsed.parts.map(toContentPart) }),
    ...(parsed.messages != null && { messages: parsed.messages.map(toChatMessage) }),
    ...(parsed.output != null && { output: outputContractOf(parsed.output) }),
  }
}

/** A parsed conversation message without its nulls, as a model receives it. */
function toChatMessage(parsed: z.infer<typeof conversationMessageSchema>): ChatMessage {
  return {
    role: parsed.role,
    content: parsed.content,
    ...(parsed.parts != null && parsed.parts.length > 0 && { parts: parsed.parts.map(toContentPart) }),
    ...(parsed.toolCalls != null && parsed.toolCalls.length > 0 && { toolCalls: parsed.toolCalls }),
    ...(parsed.toolCallId != null && { toolCallId: parsed.toolCallId }),
    ...(parsed.isError != null && { isError: parsed.isError }),
  }
}

/** A client's key for retrying an admission safely. */
const idempotencyKeySchema = z.string().min(1).max(256)

/** A scheduled prompt's key: the same key before it fires replaces it. */
export const scheduleKeySchema = z.string().min(1).max(256)

const scheduleSchema = z.strictObject({
  scheduleKey: scheduleKeySchema,
  debounceMs: z.number().int().min(0).max(86_400_000).nullish(),
})

/**
 * A prompt to admit, validated once where the request arrives: plain data, so it goes to the
 * session's owner as it is and nothing re-parses it there.
 */
export interface AdmissionInput {
  sessionId: string
  idempotencyKey: string | null
  /** The entry's own webhook; the session's applies when null. */
  webhookUrl: string | null
  request: RunRequest
  /** A scheduled prompt's key and debounce. */
  schedule: { key: string; debounceMs: number } | null
  /** The API key admitting it (its id), recorded on the run; null where keys are off. */
  keyId: string | null
  /** That key's limits, budget and allow-lists; null for a bootstrap key or with keys off. */
  policy: KeyPolicy | null
  /** The surface it came through. */
  origin: RunOrigin
}

/** Parses an untrusted admission (`input.*`); a failure is an INVALID_REQUEST naming the field. */
export function parseAdmission(
  input: Record<string, unknown>,
  principal: Principal,
  scheduled = false,
  origin: RunOrigin = 'GRAPHQL',
): AdmissionInput {
  const { sessionId, idempotencyKey, webhookUrl, ...rest } = input
  let request = rest
  let schedule: AdmissionInput['schedule'] = null
  if (scheduled) {
    const { scheduleKey, debounceMs, ...others } = rest
    const parsed = parseInput(scheduleSchema, { scheduleKey, debounceMs }, 'input')
    schedule = { key: parsed.scheduleKey, debounceMs: parsed.debounceMs ?? 0 }
    request = others
  }
  return {
    sessionId: parseInput(idSchema, sessionId, 'input.sessionId'),
    idempotencyKey: idempotencyKey == null ? null : parseInput(idempotencyKeySchema, idempotencyKey, 'input.idempotencyKey'),
    webhookUrl: webhookUrl == null ? null : parseInput(webhookUrlSchema, webhookUrl, 'input.webhookUrl'),
    request: parseRunRequest(request, 'input'),
    schedule,
    keyId: recordedKeyId(principal),
    policy: principal.policy,
    origin,
  }
}
