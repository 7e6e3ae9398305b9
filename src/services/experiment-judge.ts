import { randomUUID } from 'node:crypto'
import type { Principal } from '../domain/access.js'
import type { DatasetItem } from '../domain/datasets.js'
import { type Experiment, JUDGE_CONTRACT, judgeScore, type Score, type Scorer, scoreOutput } from '../domain/experiments.js'
import type { RunService } from './run-service.js'
import type { SessionService } from './session-service.js'

/** How long a judge's run may take. */
const JUDGE_WAIT_MS = 10 * 60_000

const asText = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value ?? null))

/**
 * The scorers of an experiment applied to one output: the deterministic ones at once, an
 * LLM_JUDGE by a run of its judge prompt (rendered with `input`, `output` and `expected`,
 * answering `{ score, reason }` through an output contract) in a session of its own, tagged as
 * the experiment's and `judge`: its own record, so its cost and latency stay apart from the task's.
 */
export class ExperimentScoring {
  constructor(
    private readonly runs: RunService,
    private readonly sessions: SessionService,
  ) {}

  /** The scorers with each judge's prompt version resolved now (a dry run checks its prompt and profile). */
  async frozen(tenantId: string, scorers: Scorer[]): Promise<Scorer[]> {
    return Promise.all(
      scorers.map(async (scorer) => {
        if (!scorer.judge || scorer.judge.promptVersion !== null) return scorer
        const { promptId, promptLabel, profileId } = scorer.judge
        const ref = promptLabel ? { promptRef: { id: promptId, label: promptLabel } } : { promptId }
        const prepared = await this.runs.prepare(tenantId, {
          ...ref,
          profileId,
          variables: { input: '', output: '', expected: '' },
          output: JUDGE_CONTRACT,
        })
        return { ...scorer, judge: { ...scorer.judge, promptVersion: prepared.prompt!.version } }
      }),
    )
  }

  /** Every scorer's score of `output`, in the scorers' order. */
  score(principal: Principal, experiment: Experiment, item: DatasetItem, output: string): Promise<Score[]> {
    return Promise.all(
      experiment.scorers.map((scorer) =>
        scorer.judge
          ? this.judge(principal, experiment, scorer, item, output)
          : Promise.resolve(scoreOutput(scorer, output, item.expected)),
      ),
    )
  }

  private async judge(principal: Principal, experiment: Experiment, scorer: Scorer, item: DatasetItem, output: string): Promise<Score> {
    const { promptId, promptVersion, profileId } = scorer.judge!
    const sessionId = `exp-${experiment.id.slice(0, 8)}-judge-${randomUUID().slice(0, 8)}`
    await this.sessions.create(principal.tenantId, { id: sessionId, title: `judge ${scorer.name} of experiment ${experiment.name}` })
    const request = {
      sessionId,
      promptRef: { id: promptId, version: promptVersion },
      profileId,
      variables: { input: item.input ?? asText(item.variables), output, expected: asText(item.expected) },
      output: JUDGE_CONTRACT,
      tags: [`experiment:${experiment.id}`, 'judge'],
    }
    const { run } = await this.runs.runPrompt(principal, request, 'ENQUEUE', JUDGE_WAIT_MS, 'EXPERIMENT')
    if (run?.status !== 'COMPLETED')
      return {
        scorer: scorer.name,
        value: 0,
        pass: false,
        reason: `the judge's run did not complete (${run?.status ?? 'still running'}${run?.errorMessage ? `: ${run.errorMessage}` : ''})`,
        judgeRunId: run?.id ?? null,
      }
    return judgeScore(scorer, run.parsedOutput, run.id)
  }
}
