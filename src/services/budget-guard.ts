import type { ApiKeyRecord, KeyPolicy } from '../domain/api-keys.js'
import { budgetPeriodWindow } from '../domain/api-keys.js'
import { type Budget, type BudgetUsage, budgetWindow, type KeyBudgetUsage } from '../domain/budgets.js'
import { BudgetExceededError, InvalidRequestError } from '../domain/errors.js'
import type { CostCeiling } from '../runner/cost-ceiling.js'
import { type BudgetWindowRef, NANO_PER_USD, ReservationRefused } from '../store/budget-ledger.js'
import type { Store } from '../store/store.js'

/** A window of a cost budget, with how to name the budget in a refusal. */
interface CostWindow extends BudgetWindowRef {
  budget: 'cost' | 'keyCost'
  resetsAt: string | null
}

const usd = (nano: number) => nano / NANO_PER_USD

/**
 * Budgets: the tenants' (PROMPTLINE_BUDGETS: runs, tokens, cost per window) and each stored
 * key's cost budget. Runs and tokens are counted from the store at admission. Cost is reserved:
 * an admission reserves the most its run may cost against every cost budget it falls under, in
 * one guarded update each, so concurrent admissions on any instance never pass a budget; the
 * run's end replaces the reservation by what it cost.
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

  /** Keys' cost budgets with their current window's spend, in one read; null for a key without one. */
  async keyUsages(keys: readonly ApiKeyRecord[]): Promise<(KeyBudgetUsage | null)[]> {
    const budgeted = keys.flatMap((key) => (key.budget ? [{ key, budget: key.budget, ...budgetPeriodWindow(key.budget.period) }] : []))
    const spends = await this.store.budgets.spends(budgeted.map((b) => ({ scope: `key:${b.key.id}`, windowStart: b.start })))
    const usage = new Map(
      budgeted.map(({ key, budget, end }, i) => {
        const spend = spends[i] ?? { usedNanoUsd: 0, reservedNanoUsd: 0 }
        const limit = Math.floor(budget.costUsd * NANO_PER_USD)
        return [
          key.id,
          {
            ...budget,
            usedUsd: usd(spend.usedNanoUsd),
            reservedUsd: usd(spend.reservedNanoUsd),
            remainingUsd: usd(Math.max(0, limit - spend.usedNanoUsd - spend.reservedNanoUsd)),
            resetsAt: end?.toISOString() ?? null,
          },
        ]
      }),
    )
    return keys.map((key) => usage.get(key.id) ?? null)
  }

  /** Throws BudgetExceededError when the tenant's runs or tokens budget has no room for one more prompt. */
  async check(tenantId: string): Promise<void> {
    if (!this.byTenant.has(tenantId)) return
    for (const budget of await this.usage(tenantId)) {
      if (budget.metric === 'cost') continue
      // a run is counted as it is admitted; tokens once spent, so the last run may overshoot them
      if (budget.used + (budget.metric === 'runs' ? 1 : 0) > budget.limit) {
        throw new BudgetExceededError(
          `tenant '${tenantId}' has used its ${budget.metric} budget (${budget.used} of ${budget.limit}) until ${budget.resetsAt}; nothing was queued`,
          budget.metric,
          budget.resetsAt,
          Math.max(0, budget.limit - budget.used),
        )
      }
    }
  }

  /**
   * Reserves entry `queueId`'s largest possible cost under every cost budget of the tenant and
   * the key; false when none applies. Throws BudgetExceededError naming the budget without room,
   * and InvalidRequestError when the cost cannot be bounded (an unpriced model, no maxTokens).
   */
  async reserve(tenantId: string, policy: KeyPolicy | null, keyId: string | null, queueId: string, ceiling: () => Promise<CostCeiling>) {
    const windows = this.costWindows(tenantId, policy, keyId)
    if (windows.length === 0) return false
    const most = await ceiling()
    if ('unpriced' in most)
      throw InvalidRequestError.at(
        'profileId',
        `model '${most.unpriced}' has no known price, and a cost budget applies: give it one in the catalog`,
      )
    if ('unbounded' in most) throw InvalidRequestError.at('settings.maxTokens', `${most.unbounded}, and a cost budget applies: set one`)
    try {
      await this.store.budgets.reserve(queueId, tenantId, Math.ceil(most.usd * NANO_PER_USD), windows)
    } catch (error) {
      if (!(error instanceof ReservationRefused)) throw error
      const { budget, resetsAt, limitNanoUsd } = error.window as CostWindow
      const left = usd(Math.max(0, limitNanoUsd - error.spend.usedNanoUsd - error.spend.reservedNanoUsd))
      throw new BudgetExceededError(
        `the ${budget === 'keyCost' ? "key's" : "tenant's"} cost budget has $${left} left${resetsAt ? ` until ${resetsAt}` : ''}, and this run may cost up to $${most.usd}; nothing was queued`,
        budget,
        resetsAt,
        left,
      )
    }
    return true
  }

  /** Gives back entry `queueId`'s reservation at once (its admission failed, or admitted another entry). */
  release(queueId: string): Promise<void> {
    return this.store.budgets.settle(queueId)
  }

  private costWindows(tenantId: string, policy: KeyPolicy | null, keyId: string | null): CostWindow[] {
    const windows: CostWindow[] = []
    if (policy?.budget && keyId) {
      const { start, end } = budgetPeriodWindow(policy.budget.period)
      windows.push({
        scope: `key:${keyId}`,
        windowStart: start,
        limitNanoUsd: Math.floor(policy.budget.costUsd * NANO_PER_USD),
        spentBefore: async () => 0,
        budget: 'keyCost',
        resetsAt: end?.toISOString() ?? null,
      })
    }
    for (const budget of this.byTenant.get(tenantId) ?? []) {
      if (budget.metric !== 'cost') continue
      const { start, end } = budgetWindow(budget.windowMs)
      windows.push({
        scope: `tenant:${tenantId}:${budget.windowMs}`,
        windowStart: start,
        limitNanoUsd: Math.floor(budget.limit * NANO_PER_USD),
        spentBefore: async () => Math.round((await this.store.runs.usageSince(tenantId, start)).cost * NANO_PER_USD),
        budget: 'cost',
        resetsAt: end.toISOString(),
      })
    }
    return windows
  }
}
