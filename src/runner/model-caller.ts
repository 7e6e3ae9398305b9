import type { CapacityPools, Release } from '../capacity/capacity-pool.js'
import type { Backend } from '../domain/catalog.js'
import { CredentialsError, GenerationError, PromptlineError } from '../domain/errors.js'
import { addUsage, type ChatMessage, type FailoverAttempt, type Finish, type Reasoning, type Usage, usageOf } from '../domain/records.js'
import { sleep } from '../domain/sleep.js'
import type { ToolCall } from '../domain/tools.js'
import { type ModelCallOutcome, startModelCallSpan } from '../domain/tracing.js'
import type { ModelClient, ToolCallDelta } from '../providers/model-client.js'
import { classifyVendorError, ProviderError } from '../providers/provider-error.js'
import type { Candidate } from './prepare.js'
import { loadPricesFor, priceOf } from './pricing.js'
import { ToolCallAssembler } from './tool-calls.js'

const DEFAULT_RETRY = { maxAttempts: 3, baseDelayMs: 250, maxDelayMs: 10_000 }

/** How a model call's answer ended, and the thinking the vendor sent with it. */
export interface CallEnd {
  finish: Finish
  reasoning: Reasoning | null
}

export interface ModelCallerDeps {
  clientFor(backend: Backend): ModelClient
  capacity: CapacityPools
}

/**
 * Makes a run's model calls: walks the profile's candidates in priority order (skipping those
 * without credentials, without sending anything), retries rate limits, overload, 5xx and
 * network failures on the same candidate with bounded exponential backoff that honours
 * retry-after, moves on after auth/model errors or spent retries, and stops at once on a fatal
 * one. Once a candidate answers, later calls of the run (steer segments, repairs) stay on it.
 * Holds the backend's permit only around each call. Records every attempt, usage and cost.
 */
export class ModelCaller {
  readonly attempts: FailoverAttempt[] = []
  readonly usage: Usage = usageOf()
  /** USD; null as soon as one call's model has no price. */
  cost: number | null = 0
  /** The price tables the cost came from. */
  readonly priceTables = new Set<string>()
  private current = 0
  private readonly skipped = new Set<number>()

  constructor(
    private readonly candidates: Candidate[],
    private readonly deps: ModelCallerDeps,
    private readonly signal: AbortSignal,
    /** Leases held per backend for the run; the first is taken at admission. */
    private readonly lease: (backend: Backend) => Promise<Release>,
    /** Told when a vendor call opens and closes (the run's in-flight marker). */
    private readonly calls: { opened(): void; closed(): void },
  ) {}

  /** The candidate the run is on now. */
  get candidate(): Candidate {
    return this.candidates[this.current]!
  }

  /**
   * One generation. `onDelta` gets each text delta and returns true to end the stream early
   * (a steer); `onToolCall` each tool-call fragment, with the call it belongs to. The result
   * says whether it ended early, the calls the model made, and how the answer ended (null when
   * it was cut).
   */
  async call(
    messages: ChatMessage[],
    onDelta: (text: string) => boolean,
    onToolCall: (call: ToolCall, delta: ToolCallDelta, started: boolean) => void = () => {},
  ): Promise<{ text: string; endedEarly: boolean; end: CallEnd | null; toolCalls: ToolCall[] }> {
    const { signal } = this
    let lastError: ProviderError | null = null
    for (let index = this.current; index < this.candidates.length; index++) {
      const candidate = this.candidates[index]!
      if (!candidate.credential.available) {
        if (!this.skipped.has(index)) {
          this.skipped.add(index)
          this.record(candidate, 'SKIPPED', 'NO_CREDENTIALS', 0, 0)
        }
        continue
      }
      await this.lease(candidate.backend)
      await loadPricesFor(candidate.backend)
      const pool = this.deps.capacity.get(candidate.backend)
      const retry = { ...DEFAULT_RETRY, ...candidate.backend.retry }
      const client = this.deps.clientFor(candidate.backend)
      for (let attempt = 1; attempt <= retry.maxAttempts; attempt++) {
        const release = await pool.permit(signal)
        this.calls.opened()
        const started = performance.now()
        const span = startModelCallSpan(candidate.backend.kind, candidate.model, candidate.settings)
        const outcome: ModelCallOutcome = {}
        let text = ''
        let deltas = 0
        let endedEarly = false
        const toolCalls = new ToolCallAssembler()
        try {
          const request = {
            model: candidate.model,
            messages,
            settings: candidate.settings,
            endpoint: candidate.endpoint,
            credential: candidate.credential,
            tooling: candidate.tooling,
            promptCacheKey: candidate.promptCacheKey,
            outputSchema: candidate.output.schema,
          }
          let reported: Usage | null = null
          let end: CallEnd | null = null
          for await (const event of client.generate(request, signal)) {
            if (event.type === 'end') {
              reported = event.usage
              end = { finish: event.finish, reasoning: event.reasoning }
              outcome.finishReason = event.finish.vendorReason ?? undefined
              continue
            }
            if (event.type === 'tool_call') {
              // a call streamed is content like text: a failure after it is not retried
              deltas++
              const { call, started } = toolCalls.add(event)
              onToolCall(call, event, started)
              continue
            }
            text += event.text
            deltas += event.deltas
            if (onDelta(event.text)) {
              endedEarly = true
              break
            }
          }
          signal.throwIfAborted()
          // a stream ended early never reports usage: count the deltas that arrived
          outcome.usage = reported ?? usageOf({ outputTokens: deltas })
          this.charge(candidate, outcome.usage)
          pool.succeeded()
          this.record(candidate, 'SUCCEEDED', null, performance.now() - started, attempt)
          this.current = index
          return { text, endedEarly, end, toolCalls: endedEarly ? [] : toolCalls.calls() }
        } catch (error) {
          if (signal.aborted) {
            outcome.errorType = 'aborted'
            this.charge(candidate, usageOf({ outputTokens: deltas }))
            throw signal.reason
          }
          const failure =
            error instanceof PromptlineError
              ? new ProviderError(error.message, 'FATAL', null, null, error.code)
              : classifyVendorError(error, candidate.backend.kind, candidate.credential.reveal())
          this.record(candidate, 'FAILED', failure.reason, performance.now() - started, attempt)
          outcome.errorType = failure.reason
          if (failure.reason === 'RATE_LIMITED' || failure.reason === 'OVERLOADED') pool.throttled(failure.retryAfterMs)
          if (deltas > 0) {
            this.charge(candidate, usageOf({ outputTokens: deltas }))
            throw new GenerationError(`${failure.message} after ${deltas} tokens had been streamed; not retried, so no text is repeated`)
          }
          if (failure.kind === 'FATAL') throw error instanceof PromptlineError ? error : new GenerationError(failure.message)
          lastError = failure
          if (failure.kind !== 'RETRYABLE' || attempt === retry.maxAttempts) break
          const backoff = Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** (attempt - 1)) * (0.8 + Math.random() * 0.4)
          // a vendor that asks for a longer wait than we allow is left for the next candidate
          if (failure.retryAfterMs !== null && failure.retryAfterMs > retry.maxDelayMs) break
          span.end(outcome) // the backoff is no part of the call
          await sleep(failure.retryAfterMs ?? backoff, signal)
        } finally {
          span.end(outcome)
          release()
          this.calls.closed()
        }
      }
    }
    if (lastError === null) {
      const names = this.candidates.map((c) => c.credential.name ?? `a credentialEnv for profile '${c.profile.id}'`)
      throw new CredentialsError(`no candidate has credentials: set ${names.join(' or ')}`)
    }
    const failures = this.attempts.filter((a) => a.outcome === 'FAILED')
    if (failures.every((a) => a.errorCode === 'UNAUTHORIZED')) {
      throw new CredentialsError(
        `every candidate's credentials were refused (${[...new Set(failures.map((a) => a.profileId))].join(', ')})`,
      )
    }
    throw new GenerationError(`every candidate failed; the last: ${lastError.message}`)
  }

  private charge(candidate: Candidate, usage: Usage): void {
    addUsage(this.usage, usage)
    if (usage.inputTokens === 0 && usage.outputTokens === 0) return
    const price = priceOf(candidate.backend, candidate.model, usage)
    if (price) this.priceTables.add(price.table)
    this.cost = price && this.cost !== null ? this.cost + price.usd : null
  }

  private record(
    candidate: Candidate,
    outcome: FailoverAttempt['outcome'],
    errorCode: string | null,
    durationMs: number,
    attempt: number,
  ): void {
    this.attempts.push({
      profileId: candidate.profile.id,
      backendId: candidate.backend.id,
      model: candidate.model,
      outcome,
      errorCode,
      durationMs: Math.round(durationMs),
      attempt,
    })
  }
}
