import type { RunCache, RunRecord, RunRequest } from '../domain/records.js'
import { usageOf } from '../domain/records.js'
import { type CachedAnswer, mergeResponseCache, responseCacheKey } from '../domain/response-cache.js'
import type { ResponseCacheStore } from '../store/response-cache-store.js'
import type { AdmittedPrompt, PreparedPrompt } from './prepare.js'
import type { RunAmendment, RunEnding, RunRecorder } from './run-recorder.js'

export interface ResponseCacheDeps {
  store: Pick<ResponseCacheStore, 'find' | 'put'>
  /** Entries a tenant keeps at most; the oldest go first. */
  maxEntries: number
}

/** Answers larger than this are not kept. */
const MAX_KEPT_CHARS = 1024 * 1024

const MISS: RunCache = { hit: false, sourceRunId: null, ageMs: null, sourceUsage: null, sourceCostUsd: null }

/**
 * One run's use of the exact response cache: the key of its prepared request (tenant,
 * namespace, rendered messages, backend, model, effective settings, output contract, tools),
 * the lookup before any model call, and, once the run completed with a valid answer, keeping it.
 * A parallel prompt and a run that asked for no cache (or bypassed it) have no key.
 */
export class RunResponseCache {
  private key: string | null = null
  private ttlSeconds = 0

  constructor(
    private readonly deps: ResponseCacheDeps,
    private readonly request: RunRequest,
  ) {}

  /** The answer kept for the prepared request, or null; the run records the hit or miss. */
  async lookup(prepared: PreparedPrompt, recorder: RunRecorder): Promise<CachedAnswer | null> {
    const policy = mergeResponseCache(prepared.profile.cache, prepared.prompt?.definition.cache, this.request.cache)
    if (policy.mode === 'OFF' || prepared.parallel) return null
    const primary = prepared.candidates[0]!
    this.ttlSeconds = policy.ttlSeconds
    this.key = responseCacheKey({
      tenantId: prepared.tenantId,
      namespace: policy.namespace,
      messages: prepared.messages,
      backendId: primary.backend.id,
      model: primary.model,
      settings: primary.settings,
      output: prepared.output,
      tools: primary.tooling,
    })
    const hit = await this.deps.store.find(prepared.tenantId, this.key, new Date())
    recorder.amend({
      cache: hit
        ? {
            hit: true,
            sourceRunId: hit.sourceRunId,
            ageMs: Math.max(0, Date.now() - Date.parse(hit.createdAt)),
            sourceUsage: hit.sourceUsage,
            sourceCostUsd: hit.sourceCostUsd,
          }
        : MISS,
    })
    return hit
  }

  /** Keeps a run's answer for its key: a completed, valid answer of its own (no hit, no tool calls, no refusal). */
  async keep(run: RunRecord): Promise<void> {
    if (this.key === null || run.cache?.hit !== false || run.status !== 'COMPLETED' || run.output === null) return
    if (!run.validation?.valid || run.finishReason === 'REFUSAL' || run.toolRounds.length > 0 || run.output.length > MAX_KEPT_CHARS) return
    await this.deps.store.put({
      tenantId: run.tenantId,
      key: this.key,
      answer: {
        sourceRunId: run.id,
        output: run.output,
        parsedOutput: run.parsedOutput,
        validation: run.validation,
        finishReason: run.finishReason,
        vendorFinishReason: run.vendorFinishReason,
        sourceUsage: run.usage ?? usageOf(),
        sourceCostUsd: run.costUsd,
        createdAt: new Date().toISOString(),
      },
      expiresAt: new Date(Date.now() + this.ttlSeconds * 1000),
      maxEntries: this.deps.maxEntries,
    })
  }
}

/** A hit, as its run records it: the source's answer with no usage and no cost of its own. */
function answerFromCache(hit: CachedAnswer): RunAmendment {
  return {
    output: hit.output,
    parsedOutput: hit.parsedOutput,
    validation: hit.validation,
    finishReason: hit.finishReason,
    vendorFinishReason: hit.vendorFinishReason,
    usage: usageOf(),
    costUsd: 0,
    priceTable: null,
  }
}

/** A response-cache hit as a run's end: the source's answer, streamed to subscribers as one ordinary token event. */
export function replayHit(recorder: RunRecorder, hit: CachedAnswer, turn: AdmittedPrompt['turn']): Omit<RunEnding, 'unappliedSteerIds'> {
  recorder.amend({ firstTokenAt: new Date().toISOString() })
  if (hit.output !== '') recorder.publish({ type: 'TOKEN_DELTA', text: hit.output, attempt: 0, candidate: null })
  recorder.amend(answerFromCache(hit))
  const transcript = [...turn, { role: 'assistant' as const, content: hit.output }]
  return { status: 'COMPLETED', terminalReason: 'COMPLETED', errorCode: null, errorMessage: null, transcript, history: 'ALL' }
}
