import type { Score, Scorer } from './experiments.js'
import type { Usage } from './records.js'

/** A unit's part in a summary: its scores, and what its run used and how long it took. */
export interface ScoredUnit {
  scores: Score[] | null
  run: { costUsd: number | null; latencyMs: number | null; usage: Usage | null } | null
  /** What its judges' runs cost (each null when unpriced). */
  judgeCosts: (number | null)[]
}

export interface ExperimentSummary {
  /** The share of scored units that passed every scorer; null before any was scored. */
  passRate: number | null
  meanScores: { scorer: string; mean: number | null }[]
  /** What the task's runs cost; null when one has no price. */
  costUsd: number | null
  /** What the judges' runs cost, apart; null when one has no price (0 without judges). */
  judgeCostUsd: number | null
  latencyP50Ms: number | null
  latencyP95Ms: number | null
  tokens: { input: number; output: number; cacheRead: number }
}

/** The sum, or null when one is unknown. */
const total = (values: (number | null)[]): number | null =>
  values.some((c) => c === null) ? null : values.reduce<number>((a, b) => a + b!, 0)

const mean = (values: number[]): number | null => (values.length === 0 ? null : values.reduce((a, b) => a + b, 0) / values.length)

/** The value below which `share` of the sorted values lie (nearest rank). */
function percentile(sorted: number[], share: number): number | null {
  if (sorted.length === 0) return null
  return sorted[Math.min(sorted.length - 1, Math.ceil(share * sorted.length) - 1)]!
}

/** The experiment's units summed up: pass rate, each scorer's mean, cost, latency and tokens of the runs. */
export function summarize(scorers: readonly Scorer[], units: readonly ScoredUnit[]): ExperimentSummary {
  const scored = units.filter((u) => u.scores !== null)
  const runs = units.flatMap((u) => (u.run ? [u.run] : []))
  const latencies = runs.flatMap((r) => (r.latencyMs === null ? [] : [r.latencyMs])).sort((a, b) => a - b)
  const costs = runs.map((r) => r.costUsd)
  const judgeCosts = units.flatMap((u) => u.judgeCosts)
  return {
    passRate: scored.length === 0 ? null : scored.filter((u) => u.scores!.every((s) => s.pass)).length / scored.length,
    meanScores: scorers.map((s) => ({
      scorer: s.name,
      mean: mean(scored.flatMap((u) => u.scores!.filter((x) => x.scorer === s.name).map((x) => x.value))),
    })),
    costUsd: total(costs),
    judgeCostUsd: total(judgeCosts),
    latencyP50Ms: percentile(latencies, 0.5),
    latencyP95Ms: percentile(latencies, 0.95),
    tokens: {
      input: runs.reduce((a, r) => a + (r.usage?.inputTokens ?? 0), 0),
      output: runs.reduce((a, r) => a + (r.usage?.outputTokens ?? 0), 0),
      cacheRead: runs.reduce((a, r) => a + (r.usage?.cacheReadTokens ?? 0), 0),
    },
  }
}
