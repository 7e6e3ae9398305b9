import { MAX_USAGE_GROUPS, type UsageDimension, type UsageGroup, type UsageGroupKey } from '../domain/usage-report.js'
import { builder } from './builder.js'
import { describedValues } from './described.js'
import { UsageRef } from './usage.js'

const UsageDimensionEnum = builder.enumType('UsageDimension', {
  description: 'What usageReport groups runs by.',
  values: describedValues<UsageDimension>({
    PROMPT: 'The prompt (null: plain inputs).',
    VERSION: 'The prompt version run.',
    LABEL: "The label that chose the version ('latest' included; null when a version was named).",
    PROFILE: 'The profile that answered (after failover).',
    MODEL: 'The model that answered (after failover).',
    KEY: 'The API key that admitted the run (null where keys are off).',
    TAG: "Each of the run's tags: a run with two tags counts in both groups, and a run without tags in none.",
    DAY: 'The UTC day the run started (YYYY-MM-DD).',
  }),
})

const UsageGroupKeyRef = builder.objectRef<UsageGroupKey>('UsageGroupKey').implement({
  description: "A group's values of the dimensions asked for; the fields of other dimensions are null.",
  fields: (t) => ({
    promptId: t.id({ nullable: true, description: 'PROMPT.', resolve: (k) => k.promptId ?? null }),
    promptVersion: t.int({ nullable: true, description: 'VERSION.', resolve: (k) => k.promptVersion ?? null }),
    promptLabel: t.string({ nullable: true, description: 'LABEL.', resolve: (k) => k.promptLabel ?? null }),
    profileId: t.id({ nullable: true, description: 'PROFILE.', resolve: (k) => k.profileId ?? null }),
    model: t.string({ nullable: true, description: 'MODEL.', resolve: (k) => k.model ?? null }),
    keyId: t.string({ nullable: true, description: 'KEY.', resolve: (k) => k.keyId ?? null }),
    tag: t.string({ nullable: true, description: 'TAG.', resolve: (k) => k.tag ?? null }),
    day: t.string({ nullable: true, description: 'DAY, as YYYY-MM-DD (UTC).', resolve: (k) => k.day ?? null }),
  }),
})

const UsageGroupRef = builder.objectRef<UsageGroup>('UsageGroup').implement({
  description: 'What the runs of one group used.',
  fields: (t) => ({
    key: t.field({ type: UsageGroupKeyRef, description: 'Which group.', resolve: (g) => g.key }),
    runs: t.exposeInt('runs', { description: 'Runs started in the window, whatever their end.' }),
    usage: t.field({ type: UsageRef, description: 'Their tokens, cache reads and writes apart.', resolve: (g) => g.usage }),
    cost: t.float({
      nullable: true,
      description: 'Their cost in USD; null when one of them used tokens on a model without a price.',
      resolve: (g) => g.costUsd,
    }),
  }),
})

type Report = { from: Date; to: Date; groupBy: UsageDimension[]; groups: UsageGroup[]; truncated: boolean }

const UsageReportRef = builder.objectRef<Report>('UsageReport').implement({
  description: 'Usage of your runs in a window, grouped; computed by the database, not by loading runs.',
  fields: (t) => ({
    from: t.field({ type: 'DateTime', description: 'The window starts here (included).', resolve: (r) => r.from }),
    to: t.field({ type: 'DateTime', description: 'The window ends here (excluded).', resolve: (r) => r.to }),
    groupBy: t.field({ type: [UsageDimensionEnum], description: 'The dimensions, in the order asked.', resolve: (r) => r.groupBy }),
    groups: t.field({ type: [UsageGroupRef], description: 'One per combination of values, ordered by them.', resolve: (r) => r.groups }),
    truncated: t.exposeBoolean('truncated', {
      description: `True when there were more than ${MAX_USAGE_GROUPS} groups and the rest were left out.`,
    }),
  }),
})

builder.queryField('usageReport', (t) =>
  t.field({
    type: UsageReportRef,
    description:
      'Runs, tokens (cache reads and writes apart) and cost of your runs started in [from, to) (at most 366 days), grouped by the dimensions given (none: one group of all).',
    args: {
      from: t.arg({ type: 'DateTime', required: true, description: 'Start of the window (included).' }),
      to: t.arg({ type: 'DateTime', required: true, description: 'End of the window (excluded).' }),
      groupBy: t.arg({ type: [UsageDimensionEnum], required: true, description: 'The dimensions to group by, in order.' }),
    },
    resolve: async (_root, args, ctx) => {
      const { groups, truncated } = await ctx.services.usage.report(ctx.tenantId, args)
      return { from: args.from, to: args.to, groupBy: args.groupBy, groups, truncated }
    },
  }),
)
