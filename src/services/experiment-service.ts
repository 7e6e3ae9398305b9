import { randomUUID } from 'node:crypto'
import { z } from 'zod'
import { type Principal, recordedKeyId } from '../domain/access.js'
import type { DatasetItem } from '../domain/datasets.js'
import { idSchema, parseInput } from '../domain/definitions.js'
import { BudgetExceededError, InvalidRequestError, NotFoundError, PromptlineError } from '../domain/errors.js'
import { compare, type ExperimentComparison, itemResult } from '../domain/experiment-comparison.js'
import { type ExperimentSummary, summarize } from '../domain/experiment-summary.js'
import { type Experiment, type ExperimentProgress, type ExperimentUnit, type HumanScore, scorerSchema } from '../domain/experiments.js'
import { isTerminalRun } from '../domain/lifecycles.js'
import type { Logger } from '../domain/logger.js'
import type { RunRecord } from '../domain/records.js'
import { type WebhookSigners, webhookUrlSchema } from '../domain/webhooks.js'
import type { ExperimentProgressEvents } from '../events/experiment-progress.js'
import { UniqueViolation } from '../store/errors.js'
import type { Store } from '../store/store.js'
import type { DatasetService } from './dataset-service.js'
import type { ExperimentScoring } from './experiment-judge.js'
import type { RunService } from './run-service.js'
import type { SessionService } from './session-service.js'

const scorersSchema = z
  .array(scorerSchema)
  .max(16)
  .superRefine((scorers, ctx) => {
    const names = scorers.map((s) => s.name)
    const twice = names.find((name, i) => names.indexOf(name) !== i)
    if (twice) ctx.addIssue({ code: 'custom', message: `names scorer '${twice}' twice` })
  })

const humanScoreSchema = z.strictObject({
  runId: z.string().min(1).max(128),
  name: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'must be 1-64 characters of A-Z a-z 0-9 _ . -'),
  value: z.number().min(0).max(1),
  comment: z.string().max(4096).nullish(),
})

const rescoreSchema = z.strictObject({ experimentId: idSchema, scorers: scorersSchema.min(1) })

const startSchema = z.strictObject({
  name: z.string().min(1).max(256),
  datasetId: idSchema,
  datasetVersion: z.number().int().min(1).nullish(),
  promptRef: z.strictObject({ id: idSchema, version: z.number().int().min(1).nullish(), label: z.string().min(1).max(64).nullish() }),
  profileId: idSchema.nullish(),
  repetitions: z.number().int().min(1).max(10).nullish(),
  concurrency: z.number().int().min(1).max(32).nullish(),
  scorers: scorersSchema,
  idempotencyKey: z.string().min(1).max(256).nullish(),
  webhookUrl: webhookUrlSchema.nullish(),
})

/** How long a run of an experiment may take before the experiment stops waiting for it. */
const RUN_WAIT_MS = 30 * 60_000
const UNIT_PAGE = 500

/**
 * Experiments: a prompt version (frozen at the start, as is the dataset version) run over a
 * dataset's items, each item × repetition an ordinary run in a session of its own, tagged
 * `experiment:<id>`, under the starting key's limits and budgets, at most `concurrency` at
 * once; each run's output scored as it ends. This instance runs the experiments it started and
 * owns their driving (a timer marks them alive); one whose instance stopped is ended FAILED by
 * the next start, its runs so far kept.
 */
export class ExperimentService {
  private readonly driving = new Map<string, { tenantId: string; id: string; done: Promise<void> }>()
  private heartbeat: NodeJS.Timeout | null = null

  constructor(
    private readonly store: Store,
    private readonly runs: RunService,
    private readonly sessions: SessionService,
    private readonly datasets: DatasetService,
    private readonly scoring: ExperimentScoring,
    private readonly updates: ExperimentProgressEvents,
    /** Whether a tenant's webhooks can be signed: a webhook no one can verify is refused. */
    private readonly signers: Pick<WebhookSigners, 'requireFor'>,
    private readonly logger: Logger,
    /** How often this instance marks its experiments alive, and how old a mark means nobody runs it (the runs' own times). */
    private readonly times: { heartbeatMs: number; staleMs: number },
  ) {}

  /**
   * Ends the experiments nobody runs any more, now and every heartbeat (an instance that stopped
   * stops marking its own), and marks this instance's alive.
   */
  async start(): Promise<void> {
    await this.failStale()
    this.heartbeat = setInterval(() => {
      const keys = [...this.driving.values()].map(({ tenantId, id }) => ({ tenantId, id }))
      const marked = keys.length > 0 ? this.store.experiments.heartbeat(keys) : Promise.resolve()
      marked.then(() => this.failStale()).catch(() => {})
    }, this.times.heartbeatMs)
    this.heartbeat.unref()
  }

  private async failStale(): Promise<void> {
    const stale = new Date(Date.now() - this.times.staleMs)
    const failed = await this.store.experiments.failStale(stale, 'the instance running it stopped; its runs so far are kept')
    if (failed > 0) this.logger.warn('experiments left running by a stopped instance ended FAILED', { count: failed })
  }

  /** Stops marking; the experiments this instance drives are left for the next start to end. */
  close(): void {
    if (this.heartbeat) clearInterval(this.heartbeat)
  }

  /** Freezes the prompt version and the dataset version, writes the experiment and its units, and starts it. */
  async begin(principal: Principal, input: unknown): Promise<Experiment> {
    const { tenantId } = principal
    const asked = parseInput(startSchema, input, 'input')
    if (asked.webhookUrl) this.signers.requireFor(tenantId, 'input.webhookUrl')
    if (asked.idempotencyKey) {
      const earlier = await this.store.experiments.findByKey(tenantId, asked.idempotencyKey)
      if (earlier) return earlier
    }
    const dataset = await this.store.datasets.find(tenantId, asked.datasetId)
    if (!dataset) throw new NotFoundError('dataset', asked.datasetId)
    const datasetVersion = asked.datasetVersion ?? dataset.version
    const items = await this.itemsOf(tenantId, asked.datasetId, datasetVersion)
    if (items.length === 0)
      throw InvalidRequestError.at('input.datasetId', `version ${datasetVersion} of dataset '${dataset.id}' has no items`)
    const { promptRef } = asked
    // a dry run of the first item: the prompt version its label names now, the profile, a rendering that works
    const prepared = await this.runs.prepare(tenantId, {
      // neither a version nor a label: the prompt's production label where it has one, else its newest version
      ...(promptRef.version || promptRef.label
        ? { promptRef: { id: promptRef.id, ...(promptRef.version ? { version: promptRef.version } : { label: promptRef.label }) } }
        : { promptId: promptRef.id }),
      profileId: asked.profileId ?? null,
      variables: items[0]!.variables,
      input: items[0]!.input,
    })
    const repetitions = asked.repetitions ?? 1
    const experiment = {
      id: randomUUID(),
      name: asked.name,
      datasetId: dataset.id,
      datasetVersion,
      promptId: promptRef.id,
      promptVersion: prepared.prompt!.version,
      promptLabel: promptRef.version ? null : prepared.promptLabel,
      profileId: prepared.candidates[0]!.profile.id,
      repetitions,
      concurrency: asked.concurrency ?? 4,
      scorers: await this.scoring.frozen(tenantId, asked.scorers),
      keyId: recordedKeyId(principal),
      idempotencyKey: asked.idempotencyKey ?? null,
      webhookUrl: asked.webhookUrl ?? null,
    }
    const units = items.flatMap((item, i) =>
      Array.from({ length: repetitions }, (_, r) => ({ unit: i * repetitions + r + 1, itemId: item.id, repetition: r + 1 })),
    )
    let created: Experiment
    try {
      created = await this.store.experiments.create(tenantId, experiment, units)
    } catch (error) {
      // the same key, started at the same time elsewhere: that one is the experiment
      if (error instanceof UniqueViolation && asked.idempotencyKey)
        return (await this.store.experiments.findByKey(tenantId, asked.idempotencyKey))!
      throw error
    }
    const done = this.drive(principal, created, new Map(items.map((item) => [item.id, item])))
    this.driving.set(created.id, { tenantId, id: created.id, done })
    void done.finally(() => this.driving.delete(created.id))
    return created
  }

  /** Cancels an experiment that has not ended: no unit starts after, and the runs under way are aborted. */
  async cancel(tenantId: string, id: string): Promise<Experiment> {
    const experiment = await this.store.experiments.find(tenantId, parseInput(idSchema, id, 'id'))
    if (!experiment) throw new NotFoundError('experiment', id)
    if (await this.store.experiments.move(tenantId, id, 'CANCELLED', null, await this.told(tenantId, experiment))) {
      await this.announce(tenantId, id)
      // its runs under way, by its tag: a unit learns its run's id only once the run ended
      const tagged = await this.runs.runs(tenantId, { tag: `experiment:${id}` }, null, experiment.concurrency * 4)
      for (const run of tagged.filter((r) => !isTerminalRun(r.status))) {
        await this.runs.abortRun(tenantId, run.id, 'the experiment was cancelled').catch(() => {})
      }
    }
    return (await this.store.experiments.find(tenantId, id))!
  }

  /**
   * Scores an ended experiment's runs again with `scorers` added (one of the same name replaces
   * the earlier), from the outputs its runs recorded: no model is called.
   */
  async rescore(principal: Principal, input: unknown): Promise<Experiment> {
    const { tenantId } = principal
    const { experimentId, scorers: asked } = parseInput(rescoreSchema, input, 'input')
    const scorers = await this.scoring.frozen(tenantId, asked)
    const experiment = await this.store.experiments.find(tenantId, experimentId)
    if (!experiment) throw new NotFoundError('experiment', experimentId)
    if (experiment.status === 'QUEUED' || experiment.status === 'RUNNING') {
      throw InvalidRequestError.at(
        'input.experimentId',
        `experiment '${experimentId}' is ${experiment.status}: score it again once it ended`,
      )
    }
    const merged = [...experiment.scorers.filter((s) => !scorers.some((n) => n.name === s.name)), ...scorers]
    const units = (await this.allUnits(tenantId, experimentId)).filter((u) => u.status === 'DONE' && u.runId)
    const items = await this.datasets.itemsById(tenantId, experiment.datasetId, [...new Set(units.map((u) => u.itemId))])
    const rescoring = { ...experiment, scorers: merged }
    for (const unit of units) {
      const run = await this.runs.run(tenantId, unit.runId!)
      const scores = await this.scoring.score(principal, rescoring, items.find((i) => i.id === unit.itemId)!, run?.output ?? '')
      await this.store.experiments.updateUnit(tenantId, experimentId, unit.unit, { scores })
    }
    await this.store.experiments.setScorers(tenantId, experimentId, merged)
    return (await this.store.experiments.find(tenantId, experimentId))!
  }

  /** Keeps a person's score of a run (a later one of the same name replaces it); answers the run. */
  async scoreRun(principal: Principal, input: unknown): Promise<RunRecord> {
    const { runId, name, value, comment } = parseInput(humanScoreSchema, input, 'input')
    const run = await this.runs.run(principal.tenantId, runId)
    if (!run) throw new NotFoundError('run', runId)
    await this.store.experiments.scoreRun(principal.tenantId, runId, {
      name,
      value,
      comment: comment ?? null,
      keyId: recordedKeyId(principal),
    })
    return run
  }

  humanScores(tenantId: string, runId: string): Promise<HumanScore[]> {
    return this.store.experiments.runScores(tenantId, runId)
  }

  list(tenantId: string, after: { createdAt: string; id: string } | null, take: number): Promise<Experiment[]> {
    return this.store.experiments.list(tenantId, after, take)
  }

  get(tenantId: string, id: string): Promise<Experiment | null> {
    return this.store.experiments.find(tenantId, parseInput(idSchema, id, 'id'))
  }

  units(tenantId: string, id: string, afterUnit: number, take: number): Promise<ExperimentUnit[]> {
    return this.store.experiments.units(tenantId, id, afterUnit, take)
  }

  /** How many units ended, of how many. */
  async progress(tenantId: string, id: string): Promise<{ done: number; total: number }> {
    const units = await this.allUnits(tenantId, id)
    return { done: units.filter((u) => u.status !== 'PENDING').length, total: units.length }
  }

  /** The experiment's progress as it is, then each change from any instance, until it ended. */
  async *watch(tenantId: string, id: string): AsyncGenerator<ExperimentProgress> {
    if (!(await this.get(tenantId, id))) throw new NotFoundError('experiment', id)
    const updates = this.updates.subscribe(tenantId, id, () => this.progressNow(tenantId, id))
    try {
      for await (const update of updates) {
        yield update
        if (update.status !== 'QUEUED' && update.status !== 'RUNNING') return
      }
    } finally {
      await updates.return?.()
    }
  }

  private async progressNow(tenantId: string, id: string): Promise<ExperimentProgress | null> {
    const experiment = await this.store.experiments.find(tenantId, id)
    return experiment && { experimentId: id, status: experiment.status, ...(await this.progress(tenantId, id)) }
  }

  /** What experiment.completed tells of an experiment ending now: what ran, how far, and its summary. */
  private async told(tenantId: string, experiment: Experiment): Promise<Record<string, unknown>> {
    const { name, promptId, promptVersion, datasetId, datasetVersion } = experiment
    const [{ summary }, progress] = await Promise.all([this.results(tenantId, experiment), this.progress(tenantId, experiment.id)])
    return { name, promptId, promptVersion, datasetId, datasetVersion, ...progress, ...summary }
  }

  /** Tells the experiment's subscribers, on every instance, where it is now. */
  private async announce(tenantId: string, id: string): Promise<void> {
    const now = await this.progressNow(tenantId, id)
    if (now) this.updates.publish(tenantId, now)
  }

  async summary(tenantId: string, experiment: Experiment): Promise<ExperimentSummary> {
    return (await this.results(tenantId, experiment)).summary
  }

  /** Two experiments' items side by side: what improved, what regressed, beyond each item's spread. */
  async compare(tenantId: string, baseId: string, candidateId: string): Promise<ExperimentComparison> {
    const [base, candidate] = await Promise.all(
      Object.entries({ baseId, candidateId }).map(async ([field, id]) => {
        const experiment = await this.store.experiments.find(tenantId, parseInput(idSchema, id, field))
        if (!experiment) throw new NotFoundError('experiment', id, `${field}: experiment '${id}' not found`)
        return this.results(tenantId, experiment)
      }),
    )
    return compare(base!, candidate!)
  }

  /** The summary, and each item's result over its repetitions. */
  private async results(tenantId: string, experiment: Experiment) {
    const units = await this.allUnits(tenantId, experiment.id)
    const runs = await Promise.all(units.map((u) => (u.runId ? this.runs.run(tenantId, u.runId) : Promise.resolve(null))))
    const judged = (u: ExperimentUnit) => (u.scores ?? []).flatMap((s) => (s.judgeRunId ? [s.judgeRunId] : []))
    const judges = await Promise.all(units.map((u) => Promise.all(judged(u).map((id) => this.runs.run(tenantId, id)))))
    const summary = summarize(
      experiment.scorers,
      units.map((u, i) => ({
        scores: u.scores,
        run: runs[i] ? runFacts(runs[i]!) : null,
        judgeCosts: judges[i]!.map((j) => j?.costUsd ?? null),
      })),
    )
    const byItem = new Map<string, (ExperimentUnit & { output: string | null })[]>()
    for (const [i, u] of units.entries()) byItem.set(u.itemId, [...(byItem.get(u.itemId) ?? []), { ...u, output: runs[i]?.output ?? null }])
    return { summary, items: new Map([...byItem].map(([itemId, of]) => [itemId, itemResult(of)])) }
  }

  /** Runs the units, `concurrency` at a time, until all ran or the experiment ended otherwise. */
  private async drive(principal: Principal, experiment: Experiment, items: Map<string, DatasetItem>): Promise<void> {
    const { tenantId, id } = { tenantId: principal.tenantId, id: experiment.id }
    try {
      if (!(await this.store.experiments.move(tenantId, id, 'RUNNING'))) return
      const pending = await this.allUnits(tenantId, id)
      let failure: string | null = null
      const worker = async () => {
        for (let unit = pending.shift(); unit && failure === null; unit = pending.shift()) {
          if ((await this.store.experiments.find(tenantId, id))?.status !== 'RUNNING') return
          failure = await this.runUnit(principal, experiment, unit, items.get(unit.itemId)!)
        }
      }
      await Promise.all(Array.from({ length: experiment.concurrency }, worker))
      const told = await this.told(tenantId, experiment)
      if (failure) await this.store.experiments.move(tenantId, id, 'FAILED', failure, told)
      else await this.store.experiments.move(tenantId, id, 'COMPLETED', null, told)
      await this.announce(tenantId, id)
    } catch (error) {
      this.logger.error('an experiment stopped unexpectedly', { experimentId: id, error: (error as Error).message })
      await this.store.experiments.move(tenantId, id, 'FAILED', 'it stopped unexpectedly; its runs so far are kept').catch(() => {})
    }
  }

  /** One unit: its session, its run (waited for), its scores. Answers why the experiment must stop, or null. */
  private async runUnit(principal: Principal, experiment: Experiment, unit: ExperimentUnit, item: DatasetItem): Promise<string | null> {
    const { tenantId } = principal
    const sessionId = `exp-${experiment.id.slice(0, 8)}-${unit.unit}`
    const request = {
      sessionId,
      promptRef: { id: experiment.promptId, version: experiment.promptVersion },
      profileId: experiment.profileId,
      variables: item.variables,
      input: item.input,
      tags: [`experiment:${experiment.id}`],
      idempotencyKey: `experiment:${experiment.id}:${unit.unit}`,
    }
    try {
      await this.sessions.create(tenantId, { id: sessionId, title: `experiment ${experiment.name}, unit ${unit.unit}` })
      const { entry, run } = await this.runs.runPrompt(principal, request, 'ENQUEUE', RUN_WAIT_MS, 'EXPERIMENT')
      const ran = run ?? (entry.runId ? await this.runs.run(tenantId, entry.runId) : null)
      if (ran) await this.store.experiments.updateUnit(tenantId, experiment.id, unit.unit, { runId: ran.id })
      const scores = ran?.status === 'COMPLETED' ? await this.scoring.score(principal, experiment, item, ran.output ?? '') : null
      await this.store.experiments.updateUnit(tenantId, experiment.id, unit.unit, { status: scores ? 'DONE' : 'FAILED', scores })
      await this.announce(tenantId, experiment.id)
      return null
    } catch (error) {
      await this.store.experiments.updateUnit(tenantId, experiment.id, unit.unit, { status: 'FAILED' })
      if (error instanceof BudgetExceededError) return `a budget refused unit ${unit.unit}: ${error.message}`
      if (error instanceof PromptlineError) return null
      throw error
    }
  }

  private async allUnits(tenantId: string, id: string): Promise<ExperimentUnit[]> {
    const all: ExperimentUnit[] = []
    for (let after = 0; ; ) {
      const page = await this.store.experiments.units(tenantId, id, after, UNIT_PAGE)
      all.push(...page)
      if (page.length < UNIT_PAGE) return all
      after = page.at(-1)!.unit
    }
  }

  private async itemsOf(tenantId: string, datasetId: string, version: number): Promise<DatasetItem[]> {
    const all: DatasetItem[] = []
    for (let after = 0; ; ) {
      const page = await this.datasets.items(tenantId, datasetId, version, after, UNIT_PAGE)
      all.push(...page)
      if (page.length < UNIT_PAGE) return all
      after = page.at(-1)!.position
    }
  }
}

/** What a summary needs of a run: its cost, how long it took, what it used. */
function runFacts(run: RunRecord) {
  const latencyMs = run.finishedAt ? Date.parse(run.finishedAt) - Date.parse(run.startedAt) : null
  return { costUsd: run.costUsd, latencyMs, usage: run.usage }
}
