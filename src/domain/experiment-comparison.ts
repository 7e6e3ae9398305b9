import type { ExperimentSummary } from './experiment-summary.js'
import type { ExperimentUnit } from './experiments.js'

/** An item's repetitions in one experiment: their mean score, how far they spread, and their outputs. */
export interface ItemResult {
  /** The mean over its scored repetitions of each one's mean over the scorers; null when none was scored. */
  meanScore: number | null
  /** The repetitions' standard deviation around that mean (0 for one repetition). */
  spread: number
  outputs: (string | null)[]
}

export type ItemChange = 'IMPROVED' | 'REGRESSED' | 'UNCHANGED'

export interface ItemComparison {
  itemId: string
  base: ItemResult
  candidate: ItemResult
  change: ItemChange
}

export interface ExperimentComparison {
  improvements: number
  regressions: number
  unchanged: number
  deltas: { passRate: number | null; meanScore: number | null; costUsd: number | null; latencyP50Ms: number | null }
  items: ItemComparison[]
}

const mean = (values: number[]): number | null => (values.length === 0 ? null : values.reduce((a, b) => a + b, 0) / values.length)

/** One item's result from its units (with each unit's run output). */
export function itemResult(units: readonly (ExperimentUnit & { output: string | null })[]): ItemResult {
  const values = units.flatMap((u) => (u.scores && u.scores.length > 0 ? [mean(u.scores.map((s) => s.value))!] : []))
  const meanScore = mean(values)
  const spread = meanScore === null ? 0 : Math.sqrt(mean(values.map((v) => (v - meanScore) ** 2))!)
  return { meanScore, spread, outputs: units.map((u) => u.output) }
}

/**
 * Whether the candidate's item got better or worse: only when its mean moved by more than the
 * repetitions' spread (the larger of the two), so a flaky item does not count as changed.
 */
function changeOf(base: ItemResult, candidate: ItemResult): ItemChange {
  if (base.meanScore === null || candidate.meanScore === null) return 'UNCHANGED'
  const moved = candidate.meanScore - base.meanScore
  if (Math.abs(moved) <= Math.max(base.spread, candidate.spread) || Math.abs(moved) < 1e-9) return 'UNCHANGED'
  return moved > 0 ? 'IMPROVED' : 'REGRESSED'
}

const delta = (a: number | null, b: number | null) => (a === null || b === null ? null : b - a)
const overall = (items: ItemResult[]) => mean(items.flatMap((i) => (i.meanScore === null ? [] : [i.meanScore])))

/** Two experiments' items side by side (those both ran), counted, with the summaries' differences (candidate − base). */
export function compare(
  base: { summary: ExperimentSummary; items: Map<string, ItemResult> },
  candidate: { summary: ExperimentSummary; items: Map<string, ItemResult> },
): ExperimentComparison {
  const items = [...base.items.keys()]
    .filter((id) => candidate.items.has(id))
    .map((itemId) => {
      const [b, c] = [base.items.get(itemId)!, candidate.items.get(itemId)!]
      return { itemId, base: b, candidate: c, change: changeOf(b, c) }
    })
  const count = (change: ItemChange) => items.filter((i) => i.change === change).length
  return {
    improvements: count('IMPROVED'),
    regressions: count('REGRESSED'),
    unchanged: count('UNCHANGED'),
    deltas: {
      passRate: delta(base.summary.passRate, candidate.summary.passRate),
      meanScore: delta(overall(items.map((i) => i.base)), overall(items.map((i) => i.candidate))),
      costUsd: delta(base.summary.costUsd, candidate.summary.costUsd),
      latencyP50Ms: delta(base.summary.latencyP50Ms, candidate.summary.latencyP50Ms),
    },
    items,
  }
}
