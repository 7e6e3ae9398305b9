import { type Budget, type BudgetUsage, budgetWindow } from '../domain/budgets.js'
import { BudgetExceededError } from '../domain/errors.js'
import type { Store } from '../store/store.js'

/**
 * Per-tenant budgets (runs, tokens, cost per window), checked at admission before anything is
 * written. Counted from the store, so every process sees the same use; two admissions racing
 * past the last unit of a budget may both pass (a budget is a limit on spend, not a lock).
 */
export class BudgetGuard {
  private readonly byTenant = new Map<string, Budget[]>()

  constructor(
    private readonly store: Store,
    budgets: readonly Budget[],
  ) {
    for (const budget of budgets) this.byTenant.set(budget.tenantId, [...(this.byTenant.get(budget.tenantId) ?? []), budget])
  }

  /** Each budget of the tenant with its use in the current window. */
  async usage(tenantId: string): Promise<BudgetUsage[]> {
    return Promise.all(
      (this.byTenant.get(tenantId) ?? []).map(async (budget) => {
        const { start, end } = budgetWindow(budget.windowMs)
        const used =
          budget.metric === 'runs'
            ? await this.store.entries.countSince(tenantId, start)
            : (await this.store.runs.usageSince(tenantId, start))[budget.metric === 'tokens' ? 'tokens' : 'cost']
        return { ...budget, used, resetsAt: end.toISOString() }
      }),
    )
  }

  /** Throws BudgetExceededError when admitting one more prompt would pass a budget. */
  async check(tenantId: string): Promise<void> {
    if (!this.byTenant.has(tenantId)) return
    for (const budget of await this.usage(tenantId)) {
      // a run is counted as it is admitted; tokens and cost once spent, so the last run may overshoot them
      if (budget.used + (budget.metric === 'runs' ? 1 : 0) > budget.limit) {
        throw new BudgetExceededError(
          `tenant '${tenantId}' has used its ${budget.metric} budget (${budget.used} of ${budget.limit}) until ${budget.resetsAt}; nothing was queued`,
          budget.metric,
          budget.resetsAt,
        )
      }
    }
  }
}
