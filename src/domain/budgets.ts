import type { BudgetPeriod } from './api-keys.js'
import { ID_PATTERN } from './definitions.js'

/** What a budget counts: admitted prompts, tokens in and out of finished runs, or their cost in USD. */
const BUDGET_METRICS = ['runs', 'tokens', 'cost'] as const
export type BudgetMetric = (typeof BUDGET_METRICS)[number]

/** A tenant may spend at most `limit` of `metric` per fixed window of `windowMs`. */
export interface Budget {
  tenantId: string
  metric: BudgetMetric
  limit: number
  windowMs: number
}

/** A budget with what its tenant has used in the current window. */
export interface BudgetUsage extends Budget {
  used: number
  /** When the current window ends and the count starts again (ISO). */
  resetsAt: string
}

/** A key's cost budget with its spend in the current window (USD). */
export interface KeyBudgetUsage {
  costUsd: number
  period: BudgetPeriod
  usedUsd: number
  reservedUsd: number
  remainingUsd: number
  /** Null for TOTAL. */
  resetsAt: string | null
}

const UNITS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000 }

/** The fixed window `now` falls in: windows are aligned to the epoch, so every process agrees. */
export function budgetWindow(windowMs: number, now = Date.now()): { start: Date; end: Date } {
  const start = Math.floor(now / windowMs) * windowMs
  return { start: new Date(start), end: new Date(start + windowMs) }
}

/**
 * Parses `tenant:metric=limit/window` entries separated by commas or white space, e.g.
 * `acme:runs=1000/1d acme:cost=20/30d globex:tokens=500000/1h`. Windows are minutes, hours or days.
 */
export function parseBudgets(text: string): Budget[] {
  const entries = text.split(/[\s,]+/).filter(Boolean)
  return entries.map((entry, index) => {
    const match = /^([^:]+):([a-z]+)=([0-9]+(?:\.[0-9]+)?)\/([0-9]+)([mhd])$/.exec(entry)
    const where = `entry ${index + 1} ('${entry}')`
    if (!match) throw new Error(`${where} is not tenant:metric=limit/window, e.g. acme:runs=1000/1d`)
    const [, tenantId, metric, limit, count, unit] = match
    if (!ID_PATTERN.test(tenantId!)) throw new Error(`${where} names a tenant that is not 1-128 characters of A-Z a-z 0-9 _ . -`)
    if (!(BUDGET_METRICS as readonly string[]).includes(metric!)) throw new Error(`${where} counts '${metric}'; use runs, tokens or cost`)
    const windowMs = Number(count) * UNITS[unit!]!
    if (windowMs <= 0) throw new Error(`${where} has an empty window`)
    return { tenantId: tenantId!, metric: metric as BudgetMetric, limit: Number(limit), windowMs }
  })
}
