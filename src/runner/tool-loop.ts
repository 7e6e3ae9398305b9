import { usageOf } from '../domain/records.js'
import type { ToolRound } from '../domain/tool-rounds.js'
import { NO_TOOLS } from '../domain/tools.js'
import { type Answer, type AnswerHooks, produceAnswer } from './answer.js'
import type { Branch } from './parallel.js'
import type { PreparedPrompt } from './prepare.js'
import { difference } from './run-accounting.js'
import type { RunRecorder } from './run-recorder.js'
import type { SteerInbox } from './steer-inbox.js'
import type { ToolRounds } from './tool-rounds.js'

/** What the rounds of a run's tool calls work with. */
export interface ToolLoop {
  /** The answering branch: the run's profile, or the selected parallel candidate (its first answer given). */
  branch: Branch
  prepared: PreparedPrompt
  maxRepairs: number
  steers: SteerInbox
  tools: ToolRounds
  recorder: RunRecorder
  hooks: AnswerHooks
  signal: AbortSignal
  /** Frees the run's capacity while it waits for results. */
  releaseLeases(): void
  /** Puts on the run what it used and how the answer ended, before a round is written with it. */
  account(answer: Answer): void
}

/**
 * The answer through rounds of tool calls: an answer with calls opens a round (written, then
 * announced) and the run waits for its results holding no capacity; with them, and any steer
 * that came meanwhile, the model is asked again, until it answers without calls. A resumed run
 * starts by waiting for its round's missing results.
 */
export async function answerThroughRounds(loop: ToolLoop): Promise<Answer> {
  const { branch, prepared, tools, recorder, steers } = loop
  const { caller, progress } = branch
  let answer = branch.answer
  let before = usageOf()
  // a resumed run's rounds go on with attempts after the waiting round's
  progress.attempt = tools.waiting?.attempt ?? progress.attempt
  for (;;) {
    if (tools.waiting) {
      loop.releaseLeases()
      await tools.results(caller.candidate.tooling ?? NO_TOOLS, loop.signal)
      for (const steer of steers.take()) {
        tools.added.push({ role: 'user', content: steer.text })
        recorder.publish({ type: 'STEER_APPLIED', steerId: steer.steerId })
      }
      progress.attempt++
    }
    const messages = [...prepared.messages, ...tools.added]
    const { output } = prepared
    answer ??= await produceAnswer({ caller, messages, output, maxRepairs: loop.maxRepairs, steers, progress, hooks: loop.hooks })
    if (answer.toolCalls.length === 0) return answer
    loop.account(answer)
    const round: Pick<ToolRound, 'preamble' | 'text' | 'usage' | 'attempt'> = {
      // the steered segments before the calls, then the text said with them
      preamble: progress.transcript.splice(0),
      text: progress.segment,
      usage: difference(caller.usage, before),
      attempt: progress.attempt,
    }
    before = { ...caller.usage }
    await tools.open(answer, round, caller.candidate.tooling ?? NO_TOOLS)
    answer = null
  }
}
