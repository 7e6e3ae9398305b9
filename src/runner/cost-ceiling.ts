import type { AdmittedPrompt, Candidate } from './prepare.js'
import { loadPricesFor, priceOf } from './pricing.js'

/** The most a run may cost, or why that cannot be known. */
export type CostCeiling = { usd: number } | { unpriced: string } | { unbounded: string }

/** Tokens a message costs beyond its text (role, separators), taken generously. */
const MESSAGE_OVERHEAD_TOKENS = 8

/**
 * An upper bound on input tokens: a token is at least one byte of UTF-8 in the vendors'
 * tokenizers, so the bytes of what is sent (JSON, which only adds) bound its tokens.
 */
const inputTokensAtMost = (messages: readonly unknown[], candidate: Candidate) =>
  Buffer.byteLength(JSON.stringify(messages)) +
  messages.length * MESSAGE_OVERHEAD_TOKENS +
  Buffer.byteLength(JSON.stringify(candidate.tooling?.tools ?? []))

/** What one candidate may cost over every model call the run may make with it. */
async function candidateCeiling(candidate: Candidate, messages: readonly unknown[], repairs: number): Promise<CostCeiling> {
  const { model, backend, settings } = candidate
  const maxOut = settings.maxTokens
  if (maxOut === null) return { unbounded: `profile '${candidate.profile.id}' sets no maxTokens` }
  await loadPricesFor(backend)
  // each tool round or repair is another call, whose input grows by the answer before it
  const calls = 1 + (candidate.tooling ? candidate.tooling.maxToolRounds : 0) + repairs
  const firstInput = inputTokensAtMost(messages, candidate)
  let usd = 0
  for (let call = 0; call < calls; call++) {
    const input = firstInput + call * maxOut
    const zero = { inputTokens: input, outputTokens: maxOut, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 }
    // a cache write may cost more than plain input: the dearer of the two
    const plain = priceOf(backend, model, zero)
    const written = priceOf(backend, model, { ...zero, cacheWriteTokens: input })
    if (!plain || !written) return { unpriced: model }
    usd += Math.max(plain.usd, written.usd)
  }
  return { usd }
}

/**
 * The most a run of `admitted` may cost, its session's history as it is now in front: every
 * candidate of its failover chains and parallel branches, each at its largest, since any of them
 * may be called. Tool results are not known yet and are not counted.
 */
export async function costCeiling(admitted: AdmittedPrompt, history: readonly unknown[]): Promise<CostCeiling> {
  const messages: unknown[] = [...admitted.leading, ...history, ...admitted.turn]
  const chains = admitted.parallel ?? [admitted.candidates]
  const repairs = admitted.maxRepairs
  let usd = 0
  for (const chain of chains) {
    for (const candidate of chain) {
      const ceiling = await candidateCeiling(candidate, messages, repairs)
      if (!('usd' in ceiling)) return ceiling
      usd += ceiling.usd
    }
  }
  return { usd }
}
