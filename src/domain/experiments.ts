import { z } from 'zod'
import { idSchema } from './definitions.js'
import { boundedJsonObject } from './json-bounds.js'
import { compileOutputSchema } from './output-schema.js'

export type ExperimentStatus = 'QUEUED' | 'RUNNING' | 'COMPLETED' | 'FAILED' | 'CANCELLED'

export type ScorerKind = 'EXACT' | 'CONTAINS' | 'REGEX' | 'JSON_SCHEMA' | 'JSON_PATH_EQUALS' | 'LLM_JUDGE'

/** A check of a run's output: against the item's `expected`, a pattern, a schema or a path. */
export interface Scorer {
  /** Names its scores; unique in an experiment. */
  name: string
  kind: ScorerKind
  pattern: string | null
  schema: Record<string, unknown> | null
  path: string | null
  /** LLM_JUDGE: the judge prompt (its version frozen when the experiment starts), its profile, and the pass mark. */
  judge: JudgeSpec | null
}

/** A judge prompt, rendered with `input`, `output` and `expected`, answering `{ score, reason }`. */
interface JudgeSpec {
  promptId: string
  promptVersion: number | null
  promptLabel: string | null
  profileId: string | null
  /** A score at or above it passes. */
  threshold: number
}

/** What a judge is asked to answer: its run's output contract. */
export const JUDGE_CONTRACT = {
  kind: 'JSON_SCHEMA' as const,
  schema: {
    type: 'object',
    required: ['score', 'reason'],
    properties: { score: { type: 'number', minimum: 0, maximum: 1 }, reason: { type: 'string' } },
  },
}

/** What a scorer made of one output: a value in [0, 1] and whether it passed. */
export interface Score {
  scorer: string
  value: number
  pass: boolean
  reason: string | null
  /** LLM_JUDGE: the judge's run (its own record: its cost is the experiment's judgeCostUsd). */
  judgeRunId?: string | null
}

/** An experiment as it is recorded: what it froze when it started, and how it is going. */
export interface Experiment {
  id: string
  name: string
  status: ExperimentStatus
  datasetId: string
  datasetVersion: number
  promptId: string
  promptVersion: number
  promptLabel: string | null
  profileId: string | null
  repetitions: number
  concurrency: number
  scorers: Scorer[]
  keyId: string | null
  errorMessage: string | null
  createdAt: string
  finishedAt: string | null
}

/** A person's score of a run (scoreRun), by name. */
export interface HumanScore {
  name: string
  value: number
  comment: string | null
  keyId: string | null
  createdAt: string
}

/** How far an experiment is, as its subscribers hear it. */
export interface ExperimentProgress {
  experimentId: string
  status: ExperimentStatus
  done: number
  total: number
}

/** One item × repetition: its run once admitted, its scores once the run ended. */
export interface ExperimentUnit {
  unit: number
  itemId: string
  repetition: number
  runId: string | null
  status: 'PENDING' | 'DONE' | 'FAILED'
  scores: Score[] | null
}

const NAME = /^[A-Za-z0-9_.-]{1,64}$/

/** A scorer as a client gives it; each kind's own field is required. */
export const scorerSchema = z
  .strictObject({
    name: z.string().regex(NAME, 'must be 1-64 characters of A-Z a-z 0-9 _ . -'),
    kind: z.enum(['EXACT', 'CONTAINS', 'REGEX', 'JSON_SCHEMA', 'JSON_PATH_EQUALS', 'LLM_JUDGE']),
    pattern: z.string().min(1).max(1024).nullish(),
    schema: boundedJsonObject().nullish(),
    path: z.string().min(1).max(256).nullish(),
    promptRef: z
      .strictObject({ id: idSchema, version: z.number().int().min(1).nullish(), label: z.string().min(1).max(64).nullish() })
      .nullish(),
    profileId: idSchema.nullish(),
    threshold: z.number().min(0).max(1).nullish(),
  })
  .superRefine((s, ctx) => {
    if (s.kind === 'REGEX') {
      if (!s.pattern) ctx.addIssue({ code: 'custom', message: 'REGEX needs a pattern' })
      else if (regexProblem(s.pattern)) ctx.addIssue({ code: 'custom', message: `pattern: ${regexProblem(s.pattern)}` })
    }
    if (s.kind === 'JSON_SCHEMA') {
      const problem = s.schema ? compileOutputSchema(s.schema).error : 'JSON_SCHEMA needs a schema'
      if (problem) ctx.addIssue({ code: 'custom', message: `schema: ${problem}` })
    }
    if (s.kind === 'JSON_PATH_EQUALS' && !s.path) ctx.addIssue({ code: 'custom', message: 'JSON_PATH_EQUALS needs a path' })
    if (s.kind === 'LLM_JUDGE' && !s.promptRef) ctx.addIssue({ code: 'custom', message: 'LLM_JUDGE needs a promptRef' })
  })
  .transform(
    (s): Scorer => ({
      name: s.name,
      kind: s.kind,
      pattern: s.pattern ?? null,
      schema: s.schema ?? null,
      path: s.path ?? null,
      judge: s.promptRef
        ? {
            promptId: s.promptRef.id,
            promptVersion: s.promptRef.version ?? null,
            promptLabel: s.promptRef.label ?? null,
            profileId: s.profileId ?? null,
            threshold: s.threshold ?? 0.5,
          }
        : null,
    }),
  )

function regexProblem(pattern: string): string | null {
  try {
    new RegExp(pattern)
    return null
  } catch (error) {
    return (error as Error).message
  }
}

const parsedJson = (text: string): { value: unknown } | null => {
  try {
    return { value: JSON.parse(text) }
  } catch {
    return null
  }
}

/** The value at a path like `$.answer.items[0]` or `answer.items.0`; undefined when there is none. */
function valueAtPath(value: unknown, path: string): unknown {
  const steps = path
    .replace(/^\$\.?/, '')
    .split(/\.|\[(\d+)\]/)
    .filter((step) => step !== undefined && step !== '')
  let at = value
  for (const step of steps) {
    if (at === null || typeof at !== 'object') return undefined
    at = (at as Record<string, unknown>)[step]
  }
  return at
}

/** Whether two JSON values are equal (objects by their keys, in any order). */
function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false
  if (Array.isArray(a) !== Array.isArray(b)) return false
  const keys = Object.keys(a)
  if (keys.length !== Object.keys(b).length) return false
  return keys.every((k) => jsonEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]))
}

const verdict = (scorer: Scorer, pass: boolean, reason: string | null = null): Score => ({
  scorer: scorer.name,
  value: pass ? 1 : 0,
  pass,
  reason,
})

/** A judge's parsed answer as a score; its run's id goes with it. */
export function judgeScore(scorer: Scorer, answer: unknown, judgeRunId: string | null): Score {
  const { score, reason } = (answer ?? {}) as { score?: unknown; reason?: unknown }
  if (typeof score !== 'number') return { scorer: scorer.name, value: 0, pass: false, reason: 'the judge gave no score', judgeRunId }
  const value = Math.min(1, Math.max(0, score))
  return {
    scorer: scorer.name,
    value,
    pass: value >= scorer.judge!.threshold,
    reason: typeof reason === 'string' ? reason : null,
    judgeRunId,
  }
}

/**
 * One output scored: EXACT and CONTAINS compare with `expected` as text (a string as it is,
 * other JSON as JSON text); REGEX tests the pattern; JSON_SCHEMA parses the output and validates
 * it; JSON_PATH_EQUALS compares the output's value at the path with `expected`'s.
 */
export function scoreOutput(scorer: Scorer, output: string, expected: unknown): Score {
  const wanted = typeof expected === 'string' ? expected : JSON.stringify(expected ?? null)
  switch (scorer.kind) {
    case 'EXACT':
      return verdict(scorer, output.trim() === wanted.trim())
    case 'CONTAINS':
      return verdict(scorer, output.includes(wanted))
    case 'REGEX':
      return verdict(scorer, new RegExp(scorer.pattern!).test(output))
    case 'JSON_SCHEMA': {
      const parsed = parsedJson(output)
      if (!parsed) return verdict(scorer, false, 'the output is not JSON')
      const { validate } = compileOutputSchema(scorer.schema!)
      const pass = validate!(parsed.value) as boolean
      return verdict(scorer, pass, pass ? null : (validate!.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`).join('; '))
    }
    case 'LLM_JUDGE':
      throw new Error('an LLM judge is scored by its run, not here')
    case 'JSON_PATH_EQUALS': {
      const parsed = parsedJson(output)
      if (!parsed) return verdict(scorer, false, 'the output is not JSON')
      const got = valueAtPath(parsed.value, scorer.path!)
      return verdict(scorer, jsonEqual(got, valueAtPath(expected, scorer.path!)), got === undefined ? `nothing at ${scorer.path}` : null)
    }
  }
}
