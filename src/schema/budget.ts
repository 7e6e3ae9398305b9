import type { BudgetMetric, BudgetUsage } from '../domain/budgets.js'
import { builder } from './builder.js'

const BudgetMetricEnum = builder.enumType('BudgetMetric', {
  description: 'What a budget counts.',
  values: {
    RUNS: { value: 'runs' as BudgetMetric, description: 'Prompts admitted (enqueued, run or scheduled).' },
    TOKENS: { value: 'tokens' as BudgetMetric, description: 'Input and output tokens of the runs started in the window.' },
    COST: {
      value: 'cost' as BudgetMetric,
      description: 'USD of the runs started in the window, from catalog prices (unpriced models count nothing).',
    },
  },
})

const BudgetUsageRef = builder.objectRef<BudgetUsage>('BudgetUsage').implement({
  description: "One of the caller's budgets and its use in the current window (PROMPTLINE_BUDGETS).",
  fields: (t) => ({
    metric: t.field({ type: BudgetMetricEnum, description: 'What it counts.', resolve: (b) => b.metric }),
    limit: t.exposeFloat('limit', { description: 'At most this much per window.' }),
    used: t.exposeFloat('used', { description: 'Used so far in the current window.' }),
    windowMs: t.exposeFloat('windowMs', { description: 'The window length in milliseconds; windows are aligned to the epoch.' }),
    resetsAt: t.field({ type: 'DateTime', description: 'When the current window ends.', resolve: (b) => b.resetsAt }),
  }),
})

builder.queryField('budgets', (t) =>
  t.field({
    type: [BudgetUsageRef],
    description: "The caller's tenant budgets with their use now; empty when it has none.",
    resolve: (_root, _args, ctx) => ctx.services.runs.budgetUsage(ctx.tenantId),
  }),
)
