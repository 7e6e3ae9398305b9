import type { ParallelSpec } from '../domain/definitions.js'
import { GenerationError, PromptlineError } from '../domain/errors.js'
import { validateOutput } from '../domain/output-validation.js'
import type { Alternative } from '../domain/records.js'
import { type Answer, type AnswerHooks, type AnswerProgress, produceAnswer } from './answer.js'
import type { ModelCaller } from './model-caller.js'
import type { Candidate, PreparedPrompt, PromptPreparer } from './prepare.js'
import type { TokenCoalescer } from './token-coalescer.js'

/** One answer being produced: by the run's profile, or by one profile of a parallel prompt. */
export interface Branch {
  /** A judge's call of a BEST_OF prompt: counted, never an alternative. */
  judge: boolean
  /** For a parallel prompt: the profile its tokens are tagged with. */
  tag: string | null
  caller: ModelCaller
  progress: AnswerProgress
  coalescer: TokenCoalescer
  status: Alternative['status'] | 'RUNNING'
  answer: Answer | null
  error: unknown
}

/** Starts a branch on a chain of candidates; its tokens are tagged with `tag`. */
type BranchFactory = (chain: Candidate[], signal: AbortSignal, tag: string | null, judge?: boolean) => Branch

/** Why a parallel candidate was stopped: another one was selected first. */
class NotSelected extends Error {}

export interface ParallelRun {
  prepared: PreparedPrompt
  chains: Candidate[][]
  spec: ParallelSpec
  signal: AbortSignal
  maxRepairs: number
  branch: BranchFactory
  hooks: (b: Branch) => AnswerHooks
  preparer: PromptPreparer
}

/**
 * A parallel prompt: every profile answers at once under its own backend's capacity, tokens
 * tagged with the profile. FIRST_VALID takes the first valid answer and stops the others;
 * BEST_OF lets all finish and asks the judge prompt which is best.
 */
export async function runParallel(p: ParallelRun): Promise<Branch> {
  const { prepared, chains, spec, signal, maxRepairs } = p
  const stops = chains.map(() => new AbortController())
  const started = chains.map((chain, i) => p.branch(chain, AbortSignal.any([signal, stops[i]!.signal]), chain[0]!.profile.id))
  let winner: Branch | null = null
  await Promise.all(
    started.map(async (b) => {
      try {
        const { messages, output } = prepared
        b.answer = await produceAnswer({
          caller: b.caller,
          messages,
          output,
          maxRepairs,
          steers: null,
          progress: b.progress,
          hooks: p.hooks(b),
        })
        b.status = 'COMPLETED'
      } catch (error) {
        if (signal.aborted) throw signal.reason
        b.status = error instanceof NotSelected ? 'ABORTED' : 'FAILED'
        b.error = error
      }
      if (spec.select === 'FIRST_VALID' && !winner && b.answer?.validation.valid) {
        winner = b
        for (const [i, other] of started.entries()) if (other !== b) stops[i]!.abort(new NotSelected('another candidate answered first'))
      }
    }),
  )
  signal.throwIfAborted()
  // in declaration order, so the judge sees the candidates as the prompt lists them
  const completed = started.filter((b) => b.status === 'COMPLETED')
  if (completed.length === 0) {
    const first = started.find((b) => b.error instanceof PromptlineError)?.error
    throw first ?? new GenerationError('every parallel profile failed')
  }
  if (winner) return winner
  const valid = completed.filter((b) => b.answer!.validation.valid)
  const pool = valid.length > 0 ? valid : completed
  if (spec.select === 'FIRST_VALID' || pool.length === 1 || !spec.judgePromptId) return pool[0]!
  return pool[await judge(p, spec.judgePromptId, pool)] ?? pool[0]!
}

/** Asks the judge prompt (variables `input` and `candidates`) for `{"best": index}`; 0 if it cannot tell. */
async function judge(p: ParallelRun, judgePromptId: string, pool: Branch[]): Promise<number> {
  const { prepared, signal } = p
  const candidates = pool.map((b, index) => ({ index, profileId: b.caller.candidate.profile.id, output: b.answer!.text }))
  const judging = await p.preparer.prepare(
    prepared.tenantId,
    null,
    {
      promptId: judgePromptId,
      input: null,
      variables: { ...prepared.variables, candidates },
      profileId: null,
      overrides: null,
      credentialEnv: null,
    },
    [],
  )
  const judgeBranch = p.branch(judging.candidates, signal, `judge:${judgePromptId}`, true)
  try {
    const { text } = await judgeBranch.caller.call(judging.messages, { onDelta: () => false })
    judgeBranch.status = 'COMPLETED'
    judgeBranch.progress.text = text
    const verdict = validateOutput(judging.output.kind === 'TEXT' ? { kind: 'JSON', schema: null } : judging.output, text)
    const best = (verdict.parsed as { best?: unknown } | undefined)?.best
    return typeof best === 'number' && Number.isInteger(best) && best >= 0 && best < pool.length ? best : 0
  } catch (error) {
    if (signal.aborted) throw signal.reason
    judgeBranch.status = 'FAILED'
    judgeBranch.error = error
    return 0
  }
}

/** A branch that was not selected, as the run keeps it. */
export function alternativeOf(b: Branch): Alternative {
  const { candidate } = b.caller
  const error = b.error instanceof PromptlineError ? b.error : null
  return {
    profileId: candidate.profile.id,
    backendId: candidate.backend.id,
    model: candidate.model,
    status: b.status === 'RUNNING' ? 'ABORTED' : b.status,
    output: b.answer?.text ?? b.progress.text,
    valid: b.answer ? b.answer.validation.valid : null,
    errorCode: error?.code ?? (b.status === 'FAILED' ? 'INTERNAL' : null),
    errorMessage: error?.message ?? (b.error instanceof NotSelected ? b.error.message : null),
  }
}
