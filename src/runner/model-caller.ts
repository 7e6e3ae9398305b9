import type { CapacityPools, Release } from '../capacity/capacity-pool.js'
import type { Backend } from '../domain/catalog.js'
import { CredentialsError, GenerationError, PromptlineError, StreamTimeoutError } from '../domain/errors.js'
import { addUsage, type ChatMessage, type FailoverAttempt, type Finish, type Reasoning, type Usage, usageOf } from '../domain/records.js'
import { sleep } from '../domain/sleep.js'
import type { ToolCall } from '../domain/tools.js'
import { type ModelCallOutcome, startModelCallSpan } from '../domain/tracing.js'
import { type FileBytes, NO_FILES } from '../providers/content-parts.js'
import type { ModelClient, ToolCallDelta } from '../providers/model-client.js'
import { classifyVendorError, ProviderError } from '../providers/provider-error.js'
import type { Candidate } from './prepare.js'
import { loadPricesFor, priceOf } from './pricing.js'
import { StreamWatchdog } from './stream-watchdog.js'
import { ToolCallAssembler } from './tool-calls.js'

const DEFAULT_RETRY = { maxAttempts: 3, baseDelayMs: 250, maxDelayMs: 10_000 }

/** What a model call tells as it streams. */
export interface CallListeners {
  /** A text delta; true ends the stream early (a steer is waiting). */
  onDelta(text: string): boolean
  onToolCall?(call: ToolCall, delta: ToolCallDelta, started: boolean): void
  /** The stream broke after its first token (or stalled) and starts again on the next candidate. */
  onRestart?(reason: string, discardedChars: number): void
}

export interface CallResult {
  text: string
  endedEarly: boolean
  /** How the answer ended; null when it was cut. */
  end: CallEnd | null
  toolCalls: ToolCall[]
}

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
    /** The bytes of the uploaded files the messages' parts name. */
    private readonly files: FileBytes = NO_FILES,
  ) {}

  /** The candidate the run is on now. */
  get candidate(): Candidate {
    return this.candidates[this.current]!
  }

  /**
   * One generation. `onDelta` gets each text delta and returns true to end the stream early
   * (a steer); `onToolCall` each tool-call fragment, with the call it belongs to; `onRestart`
   * hears that a stream broken after its first token (or stalled) starts again on the next
   * candidate, as the run's profile asks (onStreamFailure RESTART). The result says whether it
   * ended early, the calls the model made, and how the answer ended (null when it was cut).
   */
  async call(messages: ChatMessage[], listeners: CallListeners): Promise<CallResult> {
    const { signal } = this
    const restarts = this.candidates[0]!.profile.onStreamFailure === 'RESTART'
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
      for (let attempt = 1; attempt <= retry.maxAttempts; attempt++) {
        let backoffMs = 0
        const release = await pool.permit(signal)
        this.calls.opened()
        const started = performance.now()
        const span = startModelCallSpan(candidate.backend.dialect ?? candidate.backend.kind, candidate.model, candidate.settings)
        const outcome: ModelCallOutcome = {}
        const streamed = { text: '', deltas: 0 }
        try {
          const result = await this.stream(candidate, messages, listeners, streamed, outcome)
          pool.succeeded()
          this.record(candidate, 'SUCCEEDED', null, performance.now() - started, attempt)
          this.current = index
          return result
        } catch (error) {
          if (signal.aborted) {
            outcome.errorType = 'aborted'
            this.charge(candidate, usageOf({ outputTokens: streamed.deltas }))
            throw signal.reason
          }
          const failure =
            error instanceof PromptlineError
              ? new ProviderError(error.message, 'FATAL', null, null, error.code)
              : classifyVendorError(error, candidate.backend.kind, candidate.credential.reveal())
          outcome.errorType = failure.reason
          if (failure.reason === 'RATE_LIMITED' || failure.reason === 'OVERLOADED') pool.throttled(failure.retryAfterMs)
          const interrupted = streamed.deltas > 0 || failure.reason === 'STREAM_TIMEOUT'
          const duration = performance.now() - started
          if (interrupted && restarts && index + 1 < this.candidates.length) {
            this.record(candidate, 'STREAM_INTERRUPTED', failure.reason, duration, attempt)
            this.charge(candidate, usageOf({ outputTokens: streamed.deltas }))
            listeners.onRestart?.(failure.reason, streamed.text.length)
            lastError = failure
            break
          }
          this.record(candidate, 'FAILED', failure.reason, duration, attempt)
          if (streamed.deltas > 0) {
            this.charge(candidate, usageOf({ outputTokens: streamed.deltas }))
            // a stall keeps its own code, so a client can tell it from a broken stream
            const Failure = failure.reason === 'STREAM_TIMEOUT' ? StreamTimeoutError : GenerationError
            throw new Failure(`${failure.message} after ${streamed.deltas} tokens had been streamed; not retried, so no text is repeated`)
          }
          if (failure.kind === 'FATAL') throw error instanceof PromptlineError ? error : new GenerationError(failure.message)
          lastError = failure
          if (failure.kind !== 'RETRYABLE' || attempt === retry.maxAttempts) break
          // a vendor that asks for a longer wait than we allow is left for the next candidate
          if (failure.retryAfterMs !== null && failure.retryAfterMs > retry.maxDelayMs) break
          const backoff = Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** (attempt - 1)) * (0.8 + Math.random() * 0.4)
          backoffMs = failure.retryAfterMs ?? backoff
        } finally {
          span.end(outcome)
          release()
          this.calls.closed()
        }
        // the permit is back in the pool while this run waits: other runs call meanwhile
        await sleep(backoffMs, signal)
      }
    }
    throw this.exhausted(lastError)
  }

  /** One call's stream, watched for stalls: its text and tool calls to the listeners, its usage charged. */
  private async stream(
    candidate: Candidate,
    messages: ChatMessage[],
    listeners: CallListeners,
    streamed: { text: string; deltas: number },
    outcome: ModelCallOutcome,
  ): Promise<CallResult> {
    const { settings } = candidate
    const watchdog = new StreamWatchdog(this.signal, settings.firstTokenTimeoutMs, settings.streamIdleTimeoutMs)
    const toolCalls = new ToolCallAssembler()
    const request = {
      model: candidate.model,
      messages,
      settings,
      endpoint: candidate.endpoint,
      credential: candidate.credential,
      tooling: candidate.tooling,
      promptCacheKey: candidate.promptCacheKey,
      outputSchema: candidate.output.schema,
      files: this.files,
    }
    let reported: Usage | null = null
    let end: CallEnd | null = null
    let endedEarly = false
    try {
      for await (const event of this.deps.clientFor(candidate.backend).generate(request, watchdog.signal)) {
        watchdog.noteEvent()
        if (event.type === 'end') {
          reported = event.usage
          end = { finish: event.finish, reasoning: event.reasoning }
          outcome.finishReason = event.finish.vendorReason ?? undefined
          continue
        }
        if (event.type === 'tool_call') {
          // a call streamed is content like text: a failure after it is not retried
          streamed.deltas++
          const { call, started } = toolCalls.add(event)
          listeners.onToolCall?.(call, event, started)
          continue
        }
        streamed.text += event.text
        streamed.deltas += event.deltas
        if (listeners.onDelta(event.text)) {
          endedEarly = true
          break
        }
      }
      watchdog.signal.throwIfAborted()
    } finally {
      watchdog.close()
    }
    // a stream ended early never reports usage: count the deltas that arrived
    outcome.usage = reported ?? usageOf({ outputTokens: streamed.deltas })
    this.charge(candidate, outcome.usage)
    return { text: streamed.text, endedEarly, end, toolCalls: endedEarly ? [] : toolCalls.calls() }
  }

  /** The error a call ends with once no candidate is left. */
  private exhausted(lastError: ProviderError | null): PromptlineError {
    if (lastError === null) {
      const names = this.candidates.map((c) => c.credential.name ?? `a credentialEnv for profile '${c.profile.id}'`)
      return new CredentialsError(`no candidate has credentials: set ${names.join(' or ')}`)
    }
    const failures = this.attempts.filter((a) => a.outcome === 'FAILED')
    if (failures.length > 0 && failures.every((a) => a.errorCode === 'UNAUTHORIZED')) {
      return new CredentialsError(
        `every candidate's credentials were refused (${[...new Set(failures.map((a) => a.profileId))].join(', ')})`,
      )
    }
    return new GenerationError(`every candidate failed; the last: ${lastError.message}`)
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
      // to 10 µs: a vendor's share of a /v1 request's time is subtracted from it (RequestTiming)
      durationMs: Math.round(durationMs * 100) / 100,
      attempt,
    })
  }
}
