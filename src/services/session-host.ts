import { randomUUID } from 'node:crypto'
import type { KeyPolicy } from '../domain/api-keys.js'
import { BudgetExceededError, ForbiddenError, NotFoundError, QueueFullError, RateLimitedError, SessionBusyError } from '../domain/errors.js'
import type { Metrics } from '../domain/metrics.js'
import type { AdmissionFacts, QueueEntryRecord, QueueEntryView, RunRecord, SessionStatus, WhenBusy } from '../domain/records.js'
import type { AdmissionInput } from '../domain/run-request.js'
import { inSpan } from '../domain/tracing.js'
import type { WebhookSigners } from '../domain/webhooks.js'
import type { UnwrittenTail } from '../events/session-stream.js'
import type { AdmitRequest, PromptQueue } from '../queue/prompt-queue.js'
import type { ToolCallDecisions } from '../queue/run-supervisor.js'
import { costCeiling } from '../runner/cost-ceiling.js'
import type { AdmittedPrompt, PromptPreparer } from '../runner/prepare.js'
import type { SubmittedResult } from '../runner/tool-rounds.js'
import type { SessionMemory } from '../store/session-memory.js'
import type { Store } from '../store/store.js'
import type { BudgetGuard } from './budget-guard.js'
import type { KeyLimiter } from './key-limits.js'
import type { SessionOperations } from './session-operations.js'

export interface SessionHostDeps {
  store: Store
  memory: SessionMemory
  queue: PromptQueue
  preparer: PromptPreparer
  budgets: BudgetGuard
  limiter: KeyLimiter
  signers: WebhookSigners
  metrics: Metrics
}

/** Throws ForbiddenError when the key may not run the admitted prompt or its profile. */
function requireAllowed(policy: KeyPolicy | null, admitted: AdmittedPrompt): void {
  if (policy?.allowedPrompts && !(admitted.prompt && policy.allowedPrompts.includes(admitted.prompt.id)))
    throw new ForbiddenError(
      admitted.prompt ? `this key may not run prompt '${admitted.prompt.id}'` : 'this key may run only its allowed prompts',
    )
  const profiles = [...(admitted.parallel?.flat() ?? admitted.candidates)].map((c) => c.profile.id)
  const refused = policy?.allowedProfiles ? profiles.find((id) => !policy.allowedProfiles!.includes(id)) : undefined
  if (refused) throw new ForbiddenError(`this key may not run profile '${refused}'`)
}

/** Why an admission was refused, as the metrics count it; null for any other failure. */
function refusalReason(error: unknown): string | null {
  if (error instanceof QueueFullError) return error.limit
  if (error instanceof SessionBusyError) return 'sessionBusy'
  if (error instanceof BudgetExceededError) return 'budget'
  if (error instanceof RateLimitedError) return error.limit
  return null
}

/**
 * Where the sessions this instance holds are served: every operation of `SessionOperations`, run
 * on the session's queue, its live run, its history and its stream, which this instance alone
 * keeps while it holds the session. The router calls it here, or another instance's router on
 * the same typed operation.
 */
export class SessionHost implements SessionOperations {
  constructor(private readonly deps: SessionHostDeps) {}

  /** Admits a validated prompt: resolved and rendered, kept with its entry for the run; a refusal is counted by reason. */
  async enqueue(tenantId: string, input: AdmissionInput, whenBusy: WhenBusy): Promise<QueueEntryRecord> {
    try {
      return await inSpan('promptline.admit', { 'promptline.tenant.id': tenantId }, () => this.admit(tenantId, input, whenBusy))
    } catch (error) {
      const reason = refusalReason(error)
      if (reason) this.deps.metrics.admissionRefused(reason)
      throw error
    }
  }

  private async admit(tenantId: string, input: AdmissionInput, whenBusy: WhenBusy): Promise<QueueEntryRecord> {
    const { memory, preparer, budgets, signers, limiter } = this.deps
    const { sessionId, idempotencyKey, schedule, keyId, policy, origin } = input
    const session = await memory.find(tenantId, sessionId)
    if (!session) throw new NotFoundError('session', sessionId)
    const webhookUrl = input.webhookUrl ?? session.webhookUrl
    if (webhookUrl) signers.requireFor(tenantId, 'input.webhookUrl')
    // the session's webhook is copied into the entry, so the run's end finds it without the session
    const request = webhookUrl ? { ...input.request, webhookUrl } : input.request
    await budgets.check(tenantId)
    await limiter.requireTokens(keyId, policy)
    const admitted = await preparer.admit(tenantId, sessionId, request)
    requireAllowed(policy, admitted)
    const { tokensPerMinute, concurrentRuns } = policy?.limits ?? {}
    const admission: AdmissionFacts = {
      promptVersion: admitted.prompt?.version ?? null,
      promptLabel: admitted.promptLabel,
      splitBucket: admitted.splitBucket,
      keyId,
      ...(origin !== 'GRAPHQL' && { origin }),
      ...(admitted.includes.list.length > 0 && { includes: admitted.includes.list }),
      ...(tokensPerMinute && { tokensPerMinute }),
      ...(concurrentRuns && { concurrentRuns }),
    }
    const queueId = randomUUID()
    return this.reserveAndQueue(
      { tenantId, sessionId, request, idempotencyKey, admitted, admission, whenBusy, queueId, ...(schedule && { schedule }) },
      policy,
    )
  }

  /**
   * Reserves the entry's largest cost under its cost budgets, then queues it; a reservation the
   * entry did not take (refused, or a retry answered with the entry it first admitted) is given back.
   */
  private async reserveAndQueue(entry: AdmitRequest & { queueId: string }, policy: KeyPolicy | null): Promise<QueueEntryRecord> {
    const { queue, budgets } = this.deps
    const { tenantId, sessionId, queueId, admission } = entry
    const ceiling = async () => costCeiling(entry.admitted, await queue.messages(tenantId, sessionId))
    let reserved: boolean
    try {
      reserved = await budgets.reserve(tenantId, policy, admission.keyId, queueId, ceiling)
    } catch (error) {
      // a retry of an admission that landed answers its entry, even once the budget is spent
      const earlier = error instanceof BudgetExceededError ? await queue.earlier(entry) : null
      if (earlier) return earlier
      throw error
    }
    if (!reserved) return queue.admit(entry)
    admission.budgetReserved = true
    try {
      const queued = await queue.admit(entry)
      if (queued.queueId !== queueId) await budgets.release(queueId)
      return queued
    } catch (error) {
      await budgets.release(queueId)
      throw error
    }
  }

  /** Admits, then waits for the run to end or for `waitMs` (answering with the entry still running). */
  async runPrompt(tenantId: string, input: AdmissionInput, whenBusy: WhenBusy, waitMs: number) {
    const { queue } = this.deps
    const admitted = await this.enqueue(tenantId, input, whenBusy)
    // a retry may answer with an entry that has already ended
    if (admitted.finishedAt === null) await queue.waitForEntry(admitted.queueId, waitMs)
    const entry = await queue.entry(tenantId, admitted.sessionId, admitted.queueId)
    return { entry: entry!, run: entry?.runId ? await queue.run(tenantId, entry.runId) : null }
  }

  cancelScheduled(tenantId: string, sessionId: string, scheduleKey: string): Promise<boolean> {
    return this.deps.queue.cancelScheduled(tenantId, sessionId, scheduleKey)
  }

  cancel(tenantId: string, sessionId: string, queueId: string) {
    return this.deps.queue.cancel(tenantId, sessionId, queueId)
  }

  steer(tenantId: string, sessionId: string, queueId: string, steerId: string, text: string) {
    return this.deps.queue.steer(tenantId, sessionId, queueId, steerId, text)
  }

  abortRun(tenantId: string, runId: string, reason: string | null) {
    return this.deps.queue.abortRun(tenantId, runId, reason)
  }

  submitToolResults(tenantId: string, runId: string, results: SubmittedResult[], idempotencyKey: string | null) {
    return this.deps.queue.submitToolResults(tenantId, runId, results, idempotencyKey)
  }

  decideToolCalls(tenantId: string, runId: string, decision: ToolCallDecisions) {
    return this.deps.queue.decideToolCalls(tenantId, runId, decision)
  }

  /** Cancels the session's whole queue (aborting its running entry), then deletes it. */
  async deleteSession(tenantId: string, id: string): Promise<string> {
    const { queue, store } = this.deps
    await queue.clearSession(tenantId, id)
    await store.sessions.delete(tenantId, id)
    queue.forget(tenantId, id)
    return id
  }

  queueEntry(tenantId: string, sessionId: string, queueId: string): Promise<QueueEntryView | null> {
    return this.deps.queue.entry(tenantId, sessionId, queueId)
  }

  run(tenantId: string, runId: string): Promise<RunRecord | null> {
    return this.deps.queue.run(tenantId, runId)
  }

  async unwrittenTail(tenantId: string, sessionId: string, afterSequence: number): Promise<UnwrittenTail> {
    return this.deps.queue.unwrittenTail(tenantId, sessionId, afterSequence)
  }

  messages(tenantId: string, sessionId: string) {
    return this.deps.queue.messages(tenantId, sessionId)
  }

  status(tenantId: string, sessionId: string): Promise<SessionStatus> {
    return this.deps.queue.status(tenantId, sessionId)
  }

  lastSequence(tenantId: string, sessionId: string): Promise<number> {
    return this.deps.queue.lastSequence(tenantId, sessionId)
  }

  /** Terminal entries (when asked) from the store, then the outstanding ones live, in queueSequence order. */
  async queueOf(tenantId: string, sessionId: string, includeTerminal: boolean): Promise<QueueEntryView[]> {
    const { queue, store } = this.deps
    const outstanding = await queue.outstanding(tenantId, sessionId)
    if (!includeTerminal) return outstanding
    // an entry leaves the outstanding ones only once its end is written, so none falls between the two reads
    const live = new Set(outstanding.map((e) => e.queueId))
    const stored = (await store.entries.forSession(tenantId, sessionId, true)).filter((e) => !live.has(e.queueId))
    return [...stored.map((e) => ({ ...e, position: null })), ...outstanding].sort((a, b) => a.queueSequence - b.queueSequence)
  }
}
