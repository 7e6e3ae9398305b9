import type { DatasetItem } from '../domain/datasets.js'
import { InvalidRequestError, NotFoundError } from '../domain/errors.js'
import { itemResult } from '../domain/experiment-comparison.js'
import type { ExperimentSummary } from '../domain/experiment-summary.js'
import type { Experiment, ExperimentProgress, ExperimentStatus, ExperimentUnit } from '../domain/experiments.js'
import { builder } from './builder.js'
import { DatasetItemRef } from './dataset.js'
import { describedValues } from './described.js'
import { encodeCursor, forwardPage, pageArgs, toConnection } from './paging.js'
import { RunRef } from './run.js'
import { ScoreRef, ScorerInput, ScorerRef } from './scorer.js'

const ExperimentStatusEnum = builder.enumType('ExperimentStatus', {
  description: 'Where an experiment is.',
  values: describedValues<ExperimentStatus>({
    QUEUED: 'Written, about to start.',
    RUNNING: 'Its runs are under way.',
    COMPLETED: 'Every unit ran (a unit whose run failed counts, unscored).',
    FAILED: 'It stopped: a budget refused a run, or the instance running it stopped (errorMessage says); its runs so far are kept.',
    CANCELLED: 'cancelExperiment stopped it; its runs so far are kept.',
  }),
})

const UnitRef = builder.objectRef<ExperimentUnit>('ExperimentRun').implement({
  description: "One repetition of an item: its run, and the run's scores once it ended.",
  fields: (t) => ({
    repetition: t.exposeInt('repetition', { description: 'From 1.' }),
    status: t.exposeString('status', { description: 'PENDING, DONE (scored), or FAILED (its run could not start or did not complete).' }),
    run: t.field({
      type: RunRef,
      nullable: true,
      description: 'The run; null before it started.',
      resolve: (u, _args, ctx) => (u.runId ? ctx.services.runs.run(ctx.tenantId, u.runId) : null),
    }),
    scores: t.field({
      type: [ScoreRef],
      nullable: true,
      description: 'Its scores; null until its run completed.',
      resolve: (u) => u.scores,
    }),
  }),
})

const ExperimentItemRef = builder.objectRef<{ item: DatasetItem; runs: ExperimentUnit[] }>('ExperimentItem').implement({
  description: 'A dataset item and its runs in the experiment, one per repetition.',
  fields: (t) => ({
    item: t.field({ type: DatasetItemRef, description: 'The item.', resolve: (i) => i.item }),
    runs: t.field({ type: [UnitRef], description: 'Its repetitions, in order.', resolve: (i) => i.runs }),
    meanScore: t.float({
      nullable: true,
      description: "The mean over its scored repetitions of each one's mean score; null before any was scored.",
      resolve: (i) => itemResult(i.runs.map((u) => ({ ...u, output: null }))).meanScore,
    }),
    spread: t.float({
      description: "The repetitions' standard deviation around meanScore (0 for one repetition).",
      resolve: (i) => itemResult(i.runs.map((u) => ({ ...u, output: null }))).spread,
    }),
  }),
})
const ExperimentItemConnection = builder.connectionObject({ type: ExperimentItemRef, name: 'ExperimentItemConnection' })

const SummaryRef = builder.objectRef<ExperimentSummary>('ExperimentSummary').implement({
  description: "What the experiment's runs scored, cost and took so far.",
  fields: (t) => ({
    passRate: t.exposeFloat('passRate', {
      nullable: true,
      description: 'The share of scored runs that passed every scorer; null before any.',
    }),
    meanScores: t.field({
      type: [
        builder.objectRef<ExperimentSummary['meanScores'][number]>('MeanScore').implement({
          description: "A scorer's mean over the scored runs.",
          fields: (f) => ({
            scorer: f.exposeString('scorer', { description: 'The scorer.' }),
            mean: f.exposeFloat('mean', { nullable: true, description: 'Its mean value; null before any run was scored.' }),
          }),
        }),
      ],
      description: "Each scorer's mean.",
      resolve: (s) => s.meanScores,
    }),
    costUsd: t.exposeFloat('costUsd', {
      nullable: true,
      description: "What the task's runs cost in USD; null when a model used has no price.",
    }),
    judgeCostUsd: t.exposeFloat('judgeCostUsd', {
      nullable: true,
      description: "What the LLM judges' runs cost in USD, apart from costUsd (0 without judges); null when one has no price.",
    }),
    latencyP50Ms: t.exposeFloat('latencyP50Ms', { nullable: true, description: "The runs' median time from start to end." }),
    latencyP95Ms: t.exposeFloat('latencyP95Ms', { nullable: true, description: "The runs' 95th percentile time from start to end." }),
    inputTokens: t.int({ description: 'Input tokens of all runs.', resolve: (s) => s.tokens.input }),
    outputTokens: t.int({ description: 'Output tokens of all runs.', resolve: (s) => s.tokens.output }),
    cacheReadTokens: t.int({ description: 'Input tokens read from a prompt cache.', resolve: (s) => s.tokens.cacheRead }),
  }),
})

const ExperimentRef = builder.objectRef<Experiment>('Experiment').implement({
  description:
    'A prompt version run over a dataset version, each item × repetition an ordinary run tagged experiment:<id>, scored as it ends.',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'Its id.' }),
    name: t.exposeString('name', { description: 'Its name.' }),
    status: t.field({ type: ExperimentStatusEnum, description: 'Where it is.', resolve: (e) => e.status }),
    errorMessage: t.exposeString('errorMessage', { nullable: true, description: 'Why it FAILED.' }),
    datasetId: t.exposeID('datasetId', { description: 'The dataset.' }),
    datasetVersion: t.exposeInt('datasetVersion', { description: 'The dataset version it runs, frozen at the start.' }),
    promptId: t.exposeID('promptId', { description: 'The prompt.' }),
    promptVersion: t.exposeInt('promptVersion', { description: 'The prompt version it runs, frozen at the start.' }),
    promptLabel: t.exposeString('promptLabel', {
      nullable: true,
      description: 'The label that named the version at the start; null when a version was named.',
    }),
    profileId: t.exposeID('profileId', { nullable: true, description: 'The profile its runs use.' }),
    repetitions: t.exposeInt('repetitions', { description: 'Runs per item.' }),
    concurrency: t.exposeInt('concurrency', { description: 'Runs at once, at most.' }),
    scorers: t.field({ type: [ScorerRef], description: 'What each run is scored by.', resolve: (e) => e.scorers }),
    createdAt: t.field({ type: 'DateTime', description: 'When it started.', resolve: (e) => e.createdAt }),
    finishedAt: t.field({ type: 'DateTime', nullable: true, description: 'When it ended.', resolve: (e) => e.finishedAt }),
    progress: t.field({
      type: builder.objectRef<{ done: number; total: number }>('ExperimentProgress').implement({
        description: 'How many runs ended, of how many.',
        fields: (f) => ({
          done: f.exposeInt('done', { description: 'Units whose run ended (scored or failed).' }),
          total: f.exposeInt('total', { description: 'Items × repetitions.' }),
        }),
      }),
      description: 'How far it is.',
      resolve: (e, _args, ctx) => ctx.services.experiments.progress(ctx.tenantId, e.id),
    }),
    summary: t.field({
      type: SummaryRef,
      description: 'Scores, cost, latency and tokens so far.',
      resolve: (e, _args, ctx) => ctx.services.experiments.summary(ctx.tenantId, e),
    }),
    items: t.field({
      type: ExperimentItemConnection,
      description: 'Its items in dataset order, each with its runs. Forward paging only.',
      args: pageArgs(t.arg),
      resolve: async (e, args, ctx) => {
        const { first, after } = forwardPage(args, 'experiment-item', 1)
        const skipped = after ? Number(after[0]) : 0
        const units = await ctx.services.experiments.units(ctx.tenantId, e.id, skipped * e.repetitions, (first + 1) * e.repetitions)
        const items = await ctx.services.datasets.itemsById(ctx.tenantId, e.datasetId, [...new Set(units.map((u) => u.itemId))])
        const rows = [...new Set(units.map((u) => u.itemId))].map((itemId, i) => ({
          index: skipped + i + 1,
          item: items.find((item) => item.id === itemId)!,
          runs: units.filter((u) => u.itemId === itemId),
        }))
        return toConnection(rows, first, after !== null, (row) => encodeCursor('experiment-item', String(row.index)))
      },
    }),
  }),
})

const ProgressEventRef = builder.objectRef<ExperimentProgress>('ExperimentProgressEvent').implement({
  description: 'Where an experiment is: sent when it starts, as each run ends (scored or failed), and when it ends.',
  fields: (t) => ({
    experimentId: t.exposeID('experimentId', { description: 'The experiment.' }),
    status: t.field({ type: ExperimentStatusEnum, description: 'Its status.', resolve: (p) => p.status }),
    done: t.exposeInt('done', { description: 'Units whose run ended.' }),
    total: t.exposeInt('total', { description: 'Items × repetitions.' }),
  }),
})

builder.subscriptionField('experimentProgress', (t) =>
  t.field({
    type: ProgressEventRef,
    description: 'An experiment as it is now, then each change from any instance, until it ends (the last event has its end status).',
    args: { id: t.arg.id({ required: true, description: 'The experiment.' }) },
    subscribe: (_root, { id }, ctx) => ctx.services.experiments.watch(ctx.tenantId, String(id)),
    resolve: (progress: ExperimentProgress) => progress,
  }),
)

const ExperimentConnection = builder.connectionObject({ type: ExperimentRef, name: 'ExperimentConnection' })

builder.queryField('experiments', (t) =>
  t.field({
    type: ExperimentConnection,
    description: 'Your experiments, newest first. Forward paging only.',
    args: pageArgs(t.arg),
    resolve: async (_root, args, ctx) => {
      const { first, after } = forwardPage(args, 'experiment', 2)
      const rows = await ctx.services.experiments.list(ctx.tenantId, after && { createdAt: after[0]!, id: after[1]! }, first + 1)
      return toConnection(rows, first, after !== null, (e) => encodeCursor('experiment', e.createdAt, e.id))
    },
  }),
)

builder.queryField('experiment', (t) =>
  t.field({
    type: ExperimentRef,
    nullable: true,
    description: 'An experiment by id, or null.',
    args: { id: t.arg.id({ required: true, description: 'The experiment id.' }) },
    resolve: (_root, { id }, ctx) => ctx.services.experiments.get(ctx.tenantId, String(id)),
  }),
)

const ExperimentPayload = builder.objectRef<{ experiment: Experiment }>('ExperimentPayload').implement({
  description: 'The experiment, as it is now.',
  fields: (t) => ({ experiment: t.field({ type: ExperimentRef, description: 'The experiment.', resolve: (p) => p.experiment }) }),
})

builder.mutationField('startExperiment', (t) =>
  t.field({
    type: ExperimentPayload,
    description:
      "Starts an experiment: the prompt version (a label is resolved now) and the dataset version are frozen, the first item is prepared as a dry run, and the runs start, `concurrency` at once, under the key's limits and budgets. The same idempotencyKey again answers the same experiment.",
    errors: { types: [InvalidRequestError, NotFoundError] },
    args: {
      input: t.arg({
        type: builder.inputType('StartExperimentInput', {
          description: 'What to run, over what, and how to score it.',
          fields: (f) => ({
            name: f.string({ required: true, description: 'A name for people.' }),
            datasetId: f.id({ required: true, description: 'The dataset.' }),
            datasetVersion: f.int({ description: 'Its version (default the newest).' }),
            promptRef: f.field({
              type: builder.inputType('ExperimentPromptRefInput', {
                description: 'The prompt, at a version or a label (default its production label, else its newest version).',
                fields: (g) => ({
                  id: g.id({ required: true, description: 'The prompt.' }),
                  version: g.int({ description: 'A version.' }),
                  label: g.string({ description: 'A label, resolved to its version now.' }),
                }),
              }),
              required: true,
              description: 'The prompt version to run.',
            }),
            profileId: f.id({ description: "The profile (default the prompt's)." }),
            repetitions: f.int({ description: 'Runs per item, 1 to 10 (default 1).' }),
            concurrency: f.int({ description: 'Runs at once, 1 to 32 (default 4).' }),
            scorers: f.field({
              type: [ScorerInput],
              required: true,
              description: 'Up to 16 scorers; each run that completes is scored by all.',
            }),
            idempotencyKey: f.string({ description: 'A repeat with the same key answers the experiment the first started.' }),
            webhookUrl: f.string({
              description:
                "Where experiment.completed is posted (signed as a run's webhooks are) when it ends, whatever its end: data.status says which, with its progress and summary.",
            }),
          }),
        }),
        required: true,
        description: 'The experiment.',
      }),
    },
    resolve: async (_root, { input }, ctx) => ({ experiment: await ctx.services.experiments.begin(ctx, input) }),
  }),
)

builder.mutationField('scoreExperiment', (t) =>
  t.field({
    type: ExperimentPayload,
    description:
      "Scores an ended experiment's runs again with more scorers (one of the same name replaces the earlier), from the outputs they recorded: no model is called.",
    errors: { types: [InvalidRequestError, NotFoundError] },
    args: {
      input: t.arg({
        type: builder.inputType('ScoreExperimentInput', {
          description: 'The experiment and the scorers to add.',
          fields: (f) => ({
            experimentId: f.id({ required: true, description: 'The experiment (ended).' }),
            scorers: f.field({ type: [ScorerInput], required: true, description: 'From 1 to 16 scorers.' }),
          }),
        }),
        required: true,
        description: 'What to score again, and with what.',
      }),
    },
    resolve: async (_root, { input }, ctx) => ({ experiment: await ctx.services.experiments.rescore(ctx, input) }),
  }),
)

builder.mutationField('cancelExperiment', (t) =>
  t.field({
    type: ExperimentPayload,
    description: 'Cancels an experiment that has not ended: no run starts after, and the runs under way are aborted.',
    errors: { types: [NotFoundError] },
    args: { id: t.arg.id({ required: true, description: 'The experiment.' }) },
    resolve: async (_root, { id }, ctx) => ({ experiment: await ctx.services.experiments.cancel(ctx.tenantId, String(id)) }),
  }),
)
