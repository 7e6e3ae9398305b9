import type { ExperimentComparison, ItemChange, ItemComparison, ItemResult } from '../domain/experiment-comparison.js'
import { builder } from './builder.js'
import { describedValues } from './described.js'

const ItemChangeEnum = builder.enumType('ItemChange', {
  description: "How an item's score moved from the base experiment to the candidate.",
  values: describedValues<ItemChange>({
    IMPROVED: 'Its mean rose by more than its spread.',
    REGRESSED: 'Its mean fell by more than its spread.',
    UNCHANGED: 'Its mean moved no more than its spread (or one side has no score).',
  }),
})

const ItemResultRef = builder.objectRef<ItemResult>('ExperimentItemResult').implement({
  description: "An item's repetitions in one experiment.",
  fields: (t) => ({
    meanScore: t.exposeFloat('meanScore', { nullable: true, description: 'Its mean score; null when none was scored.' }),
    spread: t.exposeFloat('spread', { description: "The repetitions' standard deviation." }),
    outputs: t.field({
      type: ['String'],
      nullable: { list: false, items: true },
      description: "Each repetition's output (null: no output).",
      resolve: (r) => r.outputs,
    }),
  }),
})

const ComparisonRef = builder.objectRef<ExperimentComparison>('ExperimentComparison').implement({
  description:
    'Two experiments over the same dataset, item by item: an item counts as changed only when its mean moved by more than its spread.',
  fields: (t) => ({
    improvements: t.exposeInt('improvements', { description: 'Items IMPROVED.' }),
    regressions: t.exposeInt('regressions', { description: 'Items REGRESSED.' }),
    unchanged: t.exposeInt('unchanged', { description: 'Items UNCHANGED.' }),
    deltas: t.field({
      type: builder.objectRef<ExperimentComparison['deltas']>('ExperimentDeltas').implement({
        description: 'Candidate minus base; null where one side has none.',
        fields: (f) => ({
          passRate: f.exposeFloat('passRate', { nullable: true, description: 'Of the pass rates.' }),
          meanScore: f.exposeFloat('meanScore', { nullable: true, description: "Of the items' mean scores, over the items both ran." }),
          costUsd: f.exposeFloat('costUsd', { nullable: true, description: 'Of the costs.' }),
          latencyP50Ms: f.exposeFloat('latencyP50Ms', { nullable: true, description: 'Of the median latencies.' }),
        }),
      }),
      description: 'How the whole moved.',
      resolve: (c) => c.deltas,
    }),
    items: t.field({
      type: [
        builder.objectRef<ItemComparison>('ExperimentItemComparison').implement({
          description: 'One item in both experiments.',
          fields: (f) => ({
            itemId: f.exposeID('itemId', { description: 'The dataset item.' }),
            base: f.field({ type: ItemResultRef, description: 'In the base experiment.', resolve: (i) => i.base }),
            candidate: f.field({ type: ItemResultRef, description: 'In the candidate experiment.', resolve: (i) => i.candidate }),
            change: f.field({ type: ItemChangeEnum, description: 'How it moved.', resolve: (i) => i.change }),
          }),
        }),
      ],
      description: 'The items both ran, in the base order.',
      resolve: (c) => c.items,
    }),
  }),
})

builder.queryField('compareExperiments', (t) =>
  t.field({
    type: ComparisonRef,
    description: 'A candidate experiment against a base one, item by item.',
    args: {
      baseId: t.arg.id({ required: true, description: 'The base experiment.' }),
      candidateId: t.arg.id({ required: true, description: 'The candidate experiment.' }),
    },
    resolve: (_root, { baseId, candidateId }, ctx) => ctx.services.experiments.compare(ctx.tenantId, String(baseId), String(candidateId)),
  }),
)
