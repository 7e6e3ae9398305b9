import { addUsage, type RunRecord, type Usage, usageOf } from '../domain/records.js'
import { redactSettings } from '../domain/settings.js'
import type { Answer } from './answer.js'
import type { Branch } from './parallel.js'
import type { Candidate } from './prepare.js'
import type { RunAmendment } from './run-recorder.js'

/** How the model's last answer (or its round of calls) ended. */
export function finishOf(answer: Answer): RunAmendment {
  return {
    finishReason: answer.end?.finish.reason ?? null,
    vendorFinishReason: answer.end?.finish.vendorReason ?? null,
    refusal: answer.end?.finish.refusal ?? null,
    reasoning: answer.end?.reasoning ?? null,
  }
}

/** What a run resumed after a restart had used before it: its later calls add to it. */
export interface Carried {
  usage: Usage
  cost: number | null
  attempts: RunRecord['failoverAttempts']
  priceTable: string | null
}

export const carriedOf = (run: Readonly<RunRecord>): Carried => ({
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

/** The profile that answered (after a failover, or a parallel selection), as the run reports it. */
export function answeredBy(candidate: Candidate): RunAmendment {
  return {
    profileId: candidate.profile.id,
    backendId: candidate.backend.id,
    model: candidate.model,
    settings: redactSettings(candidate.settings),
    outputEnforcement: candidate.output.enforcement,
  }
}

/** Output, usage, cost and attempts of every branch (and of the run before a restart). */
export function tallied(output: string, branches: Branch[], carried: Carried | null): RunAmendment {
  const usage = usageOf()
  let costUsd: number | null = branches.length === 0 && !carried ? null : 0
  const tables = new Set<string>()
  if (carried) {
    addUsage(usage, carried.usage)
    costUsd = carried.cost
    for (const table of carried.priceTable?.split(', ') ?? []) tables.add(table)
  }
  for (const b of branches) {
    addUsage(usage, b.caller.usage)
    costUsd = costUsd === null || b.caller.cost === null ? null : costUsd + b.caller.cost
    for (const table of b.caller.priceTables) tables.add(table)
  }
  return {
    output,
    usage,
    costUsd,
    priceTable: costUsd === null || tables.size === 0 ? null : [...tables].sort().join(', '),
    failoverAttempts: [...(carried?.attempts ?? []), ...branches.flatMap((b) => b.caller.attempts)],
  }
}
