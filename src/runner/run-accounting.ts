import { addUsage, type RunRecord, type Usage, usageOf } from '../domain/records.js'
import { redactSettings } from '../domain/settings.js'
import type { Answer } from './answer.js'
import type { Branch } from './parallel.js'
import type { Candidate } from './prepare.js'

/** How the model's last answer (or its round of calls) ended, on the run. */
export function recordFinish(run: RunRecord, answer: Answer): void {
  Object.assign(run, {
    finishReason: answer.end?.finish.reason ?? null,
    vendorFinishReason: answer.end?.finish.vendorReason ?? null,
    refusal: answer.end?.finish.refusal ?? null,
    reasoning: answer.end?.reasoning ?? null,
  } satisfies Partial<RunRecord>)
}

/** What a run resumed after a restart had used before it: its later calls add to it. */
export interface Carried {
  usage: Usage
  cost: number | null
  attempts: RunRecord['failoverAttempts']
  priceTable: string | null
}

export const carriedOf = (run: RunRecord): Carried => ({
  usage: run.usage ?? usageOf(),
  cost: run.costUsd,
  attempts: run.failoverAttempts,
  priceTable: run.priceTable,
})

export function difference(total: Usage, before: Usage): Usage {
  return usageOf({
    inputTokens: total.inputTokens - before.inputTokens,
    outputTokens: total.outputTokens - before.outputTokens,
    cacheReadTokens: total.cacheReadTokens - before.cacheReadTokens,
    cacheWriteTokens: total.cacheWriteTokens - before.cacheWriteTokens,
    reasoningTokens: total.reasoningTokens - before.reasoningTokens,
  })
}

/** The run reports the profile that answered (after a failover, or a parallel selection). */
export function follow(run: RunRecord, candidate: Candidate): void {
  Object.assign(run, {
    profileId: candidate.profile.id,
    backendId: candidate.backend.id,
    model: candidate.model,
    settings: redactSettings(candidate.settings),
    outputEnforcement: candidate.output.enforcement,
  })
}

/** Output, usage, cost and attempts of every branch (and of the run before a restart), on the run. */
export function tally(run: RunRecord, output: string, branches: Branch[], carried: Carried | null): void {
  run.output = output
  run.usage = usageOf()
  run.costUsd = branches.length === 0 && !carried ? null : 0
  const tables = new Set<string>()
  if (carried) {
    addUsage(run.usage, carried.usage)
    run.costUsd = carried.cost
    for (const table of carried.priceTable?.split(', ') ?? []) tables.add(table)
  }
  for (const b of branches) {
    addUsage(run.usage, b.caller.usage)
    run.costUsd = run.costUsd === null || b.caller.cost === null ? null : run.costUsd + b.caller.cost
    for (const table of b.caller.priceTables) tables.add(table)
  }
  run.priceTable = run.costUsd === null || tables.size === 0 ? null : [...tables].sort().join(', ')
  run.failoverAttempts = [...(carried?.attempts ?? []), ...branches.flatMap((b) => b.caller.attempts)]
}
