import { z } from 'zod'
import type { PromptInclude } from '../domain/catalog.js'
import type { Alternative, FailoverAttempt, OutputValidation, Reasoning, RunCache, Usage } from '../domain/records.js'
import type { ToolRound } from '../domain/tool-rounds.js'

// The JSON columns of a run's row, parsed as they are read: a row that does not hold what the
// record says fails loudly where it is read, naming the column, instead of travelling on cast.

const usage: z.ZodType<Usage> = z.object({
  inputTokens: z.number(),
  outputTokens: z.number(),
  cacheReadTokens: z.number(),
  cacheWriteTokens: z.number(),
  reasoningTokens: z.number(),
})

const reasoning: z.ZodType<Reasoning> = z.object({ text: z.string(), signature: z.string().nullable() })

const failoverAttempt: z.ZodType<FailoverAttempt> = z.object({
  profileId: z.string(),
  backendId: z.string(),
  model: z.string(),
  outcome: z.enum(['SUCCEEDED', 'FAILED', 'SKIPPED', 'STREAM_INTERRUPTED']),
  errorCode: z.string().nullable(),
  durationMs: z.number(),
  attempt: z.number(),
})

const alternative: z.ZodType<Alternative> = z.object({
  profileId: z.string(),
  backendId: z.string(),
  model: z.string(),
  status: z.enum(['COMPLETED', 'FAILED', 'ABORTED']),
  output: z.string(),
  valid: z.boolean().nullable(),
  errorCode: z.string().nullable(),
  errorMessage: z.string().nullable(),
})

const validation: z.ZodType<OutputValidation> = z.object({ valid: z.boolean(), errors: z.array(z.string()), attempts: z.number() })

const include: z.ZodType<PromptInclude> = z.object({
  key: z.string(),
  promptId: z.string(),
  version: z.number(),
  definitionHash: z.string(),
})

const cache: z.ZodType<RunCache> = z.object({
  hit: z.boolean(),
  sourceRunId: z.string().nullable(),
  ageMs: z.number().nullable(),
  sourceUsage: usage.nullable(),
  sourceCostUsd: z.number().nullable(),
})

/** A round of tool calls: its shape is checked; its messages, calls and results are what the runner wrote. */
const toolRound = z.object({
  preamble: z.array(z.looseObject({ role: z.string(), content: z.string() })),
  text: z.string(),
  calls: z.array(z.looseObject({ callId: z.string(), name: z.string() })),
  results: z.array(z.looseObject({ callId: z.string() })),
  deadline: z.string(),
  reasoning: reasoning.nullable(),
  usage,
  attempt: z.number(),
}) as unknown as z.ZodType<ToolRound>

/** The run row's JSON columns; a list column read as null is the empty list. */
export const RUN_JSON = {
  validation: validation.nullable(),
  failoverAttempts: z.array(failoverAttempt).nullable(),
  alternatives: z.array(alternative).nullable(),
  reasoning: reasoning.nullable(),
  toolRounds: z.array(toolRound).nullable(),
  tags: z.array(z.string()).nullable(),
  includes: z.array(include).nullable(),
  cache: cache.nullable(),
}
