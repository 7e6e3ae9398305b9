import { z } from 'zod'
import type { Principal } from '../domain/access.js'
import type { BudgetUsage } from '../domain/budgets.js'
import { idSchema, parseInput } from '../domain/definitions.js'
import { NotFoundError } from '../domain/errors.js'
import type { SessionEvent } from '../domain/events.js'
import type {
  QueueEntryRecord,
  QueueEntryView,
  RunCursor,
  RunFilter,
  RunOrigin,
  RunRecord,
  RunRequest,
  WhenBusy,
} from '../domain/records.js'
import { MAX_TEXT, parseAdmission, parseRunRequest, scheduleKeySchema } from '../domain/run-request.js'
import type { WebhookDelivery } from '../domain/webhooks.js'
import type { SessionEventBus } from '../events/event-bus.js'
import type { PromptQueue } from '../queue/prompt-queue.js'
import type { PreparedPrompt, PromptPreparer } from '../runner/prepare.js'
import type { Store } from '../store/store.js'
import type { BudgetGuard } from './budget-guard.js'
import type { SessionRouter } from './session-router.js'
import type { SessionService } from './session-service.js'

/** Ids the server made (queue entries, runs): opaque, bounded. */
export const recordIdSchema = z.string().min(1).max(128)

const toolResultsSchema = z.strictObject({
  runId: recordIdSchema,
  results: z
    .array(z.strictObject({ callId: z.string().min(1).max(64), output: z.string().max(MAX_TEXT), isError: z.boolean().nullish() }))
    .min(1)
    .max(128),
  idempotencyKey: z.string().min(1).max(256).nullish(),
})

const decisionsSchema = z.strictObject({
  runId: recordIdSchema,
  decisions: z
    .array(z.strictObject({ callId: z.string().min(1).max(64), approve: z.boolean(), reason: z.string().max(4096).nullish() }))
    .min(1)
    .max(128),
  idempotencyKey: z.string().min(1).max(256).nullish(),
})

const steerSchema = z.strictObject({
  sessionId: idSchema,
  queueId: z.string().min(1).max(128),
  steerId: idSchema,
  text: z.string().min(1).max(MAX_TEXT),
})

/**
 * Use cases around running prompts: admission, scheduling, steering, cancelling, reading runs and
 * streams. Those that touch a session's queue run where it lives, through the router.
 */
export class RunService {
  constructor(
    private readonly store: Store,
    private readonly preparer: PromptPreparer,
    private readonly queue: PromptQueue,
    private readonly bus: SessionEventBus,
    private readonly sessions: SessionService,
    private readonly budgets: BudgetGuard,
    private readonly router: SessionRouter,
  ) {}

  /** The caller's budgets with their use in the current window. */
  budgetUsage(tenantId: string): Promise<BudgetUsage[]> {
    return this.budgets.usage(tenantId)
  }

  /** A dry run: resolution and rendering exactly as a run would do them, without a model call. */
  async prepare(tenantId: string, input: Record<string, unknown>): Promise<PreparedPrompt> {
    const { sessionId, ...rest } = input
    const session = sessionId == null ? null : parseInput(idSchema, sessionId, 'sessionId')
    const request = parseRunRequest(rest, '')
    const history = session === null ? [] : await this.router.read(tenantId, session, 'messages', [tenantId, session])
    return this.preparer.prepare(tenantId, session, request, history)
  }

  /** Admits a prompt; `replayOf` names the run whose request it replays. */
  enqueue(
    principal: Principal,
    input: Record<string, unknown>,
    whenBusy: WhenBusy,
    replayOf: string | null = null,
    origin: RunOrigin = 'GRAPHQL',
  ): Promise<QueueEntryRecord> {
    const { tenantId } = principal
    const parsed = parseAdmission(input, principal, false, origin)
    if (replayOf !== null) parsed.request.replayOf = replayOf
    return this.router.change(tenantId, parsed.sessionId, 'enqueue', [tenantId, parsed, whenBusy])
  }

  /** Enqueues and waits for the run to end, or for `timeoutMs` (answering with the entry still running). */
  runPrompt(
    principal: Principal,
    input: Record<string, unknown>,
    whenBusy: WhenBusy,
    timeoutMs: number,
    origin: RunOrigin = 'GRAPHQL',
  ): Promise<{ entry: QueueEntryView; run: RunRecord | null }> {
    const { tenantId } = principal
    const waitMs = Math.min(Math.max(timeoutMs, 0), 3_600_000)
    const parsed = parseAdmission(input, principal, false, origin)
    return this.router.change(tenantId, parsed.sessionId, 'runPrompt', [tenantId, parsed, whenBusy, waitMs], waitMs + 30_000)
  }

  schedule(principal: Principal, input: Record<string, unknown>): Promise<QueueEntryRecord> {
    const { tenantId } = principal
    const parsed = parseAdmission(input, principal, true)
    return this.router.change(tenantId, parsed.sessionId, 'enqueue', [tenantId, parsed, 'ENQUEUE'])
  }

  async cancelScheduled(tenantId: string, sessionId: string, scheduleKey: string): Promise<boolean> {
    await this.sessions.require(tenantId, sessionId)
    const key = parseInput(scheduleKeySchema, scheduleKey, 'scheduleKey')
    return this.router.change(tenantId, sessionId, 'cancelScheduled', [tenantId, sessionId, key])
  }

  async cancel(tenantId: string, sessionId: string, queueId: string): Promise<{ cancelled: boolean; entry: QueueEntryRecord }> {
    await this.sessions.require(tenantId, sessionId)
    return this.router.change(tenantId, sessionId, 'cancel', [tenantId, sessionId, parseInput(recordIdSchema, queueId, 'queueId')])
  }

  async steer(tenantId: string, input: unknown): Promise<{ steerId: string; queueId: string; runId: string }> {
    const { sessionId, queueId, steerId, text } = parseInput(steerSchema, input, 'input')
    await this.sessions.require(tenantId, sessionId)
    const { runId } = await this.router.change(tenantId, sessionId, 'steer', [tenantId, sessionId, queueId, steerId, text])
    return { steerId, queueId, runId }
  }

  /** Stops a run wherever it runs; answers once its row is durably ABORTED. */
  async abortRun(tenantId: string, runId: string, reason: string | null): Promise<{ aborted: boolean; run: RunRecord }> {
    const why = reason === null ? null : parseInput(z.string().max(4096), reason, 'reason')
    const id = parseInput(recordIdSchema, runId, 'runId')
    const sessionId = await this.elsewhere(tenantId, id)
    if (!sessionId) return this.queue.abortRun(tenantId, id, why)
    return this.router.change(tenantId, sessionId, 'abortRun', [tenantId, id, why])
  }

  /** Gives a waiting run its tool results, at whichever instance holds its session; answers once they are durable. */
  async submitToolResults(tenantId: string, input: unknown): Promise<RunRecord> {
    const { runId, results, idempotencyKey } = parseInput(toolResultsSchema, input, 'input')
    const taken = results.map((r) => ({ callId: r.callId, output: r.output, isError: r.isError ?? false }))
    const key = idempotencyKey ?? null
    const sessionId = await this.elsewhere(tenantId, runId)
    if (!sessionId) return this.queue.submitToolResults(tenantId, runId, taken, key)
    return this.router.change(tenantId, sessionId, 'submitToolResults', [tenantId, runId, taken, key])
  }

  /**
   * Approves or declines calls a run waits to have approved, at whichever instance holds its
   * session; answers once they are durable. `keyId` is recorded as the decider.
   */
  async approveToolCalls(tenantId: string, keyId: string | null, input: unknown): Promise<RunRecord> {
    const { runId, decisions, idempotencyKey } = parseInput(decisionsSchema, input, 'input')
    const decision = {
      decisions: decisions.map((d) => ({ callId: d.callId, approve: d.approve, reason: d.reason ?? null })),
      idempotencyKey: idempotencyKey ?? null,
      keyId,
    }
    const sessionId = await this.elsewhere(tenantId, runId)
    if (!sessionId) return this.queue.decideToolCalls(tenantId, runId, decision)
    return this.router.change(tenantId, sessionId, 'decideToolCalls', [tenantId, runId, decision])
  }

  /** The session whose owner a use case of run `runId` goes to; null when it runs here (or has no session, or no row). */
  private async elsewhere(tenantId: string, runId: string): Promise<string | null> {
    if (this.queue.isRunning(runId)) return null
    return (await this.store.runs.find(tenantId, runId))?.sessionId ?? null
  }

  async queueEntry(tenantId: string, sessionId: string, queueId: string): Promise<QueueEntryView | null> {
    if (!(await this.sessions.get(tenantId, sessionId, 'sessionId'))) return null
    return this.router.read(tenantId, sessionId, 'queueEntry', [tenantId, sessionId, parseInput(recordIdSchema, queueId, 'queueId')])
  }

  /**
   * A run as it is now: live while it runs (asked of the instance running it), from the store
   * once it has ended; `field` names the argument.
   */
  async run(tenantId: string, id: string, field = 'id'): Promise<RunRecord | null> {
    const runId = parseInput(recordIdSchema, id, field)
    if (this.queue.isRunning(runId)) return this.queue.run(tenantId, runId)
    const stored = await this.store.runs.find(tenantId, runId)
    if (!stored?.sessionId || stored.finishedAt !== null) return this.queue.run(tenantId, runId)
    return this.router.read(tenantId, stored.sessionId, 'run', [tenantId, runId])
  }

  /**
   * Runs by id (ids from the store, such as queue entries' runIds), as `run` answers each: the
   * ones not running here read in one query, in the order of `ids`.
   */
  async runsById(tenantId: string, ids: readonly string[]): Promise<(RunRecord | null)[]> {
    const stored = await this.store.runs.findMany(
      tenantId,
      ids.filter((id) => !this.queue.isRunning(id)),
    )
    return Promise.all(
      ids.map((id) => {
        const run = stored.get(id)
        // running here, or live on the instance that owns its session: as it is now
        if (this.queue.isRunning(id) || (run?.sessionId && run.finishedAt === null)) return this.run(tenantId, id)
        return run ?? null
      }),
    )
  }

  /**
   * A queue entry by its id alone, with its newest run as \`run\` answers it (null until it
   * starts); null when the tenant has no such entry or run.
   */
  async entryById(tenantId: string, queueId: string): Promise<{ sessionId: string; queueId: string; run: RunRecord | null } | null> {
    const id = parseInput(recordIdSchema, queueId, 'id')
    const stored = await this.store.runs.latestOfEntry(tenantId, id)
    if (stored?.sessionId) return { sessionId: stored.sessionId, queueId: id, run: await this.run(tenantId, stored.id) }
    const entry = await this.store.entries.findById(tenantId, id)
    if (!entry) return null
    return { sessionId: entry.sessionId, queueId: id, run: entry.runId ? await this.run(tenantId, entry.runId) : null }
  }

  /** The session's entry admitted with this idempotency key; null when none was (or its key has expired). */
  entryByIdempotencyKey(tenantId: string, sessionId: string, idempotencyKey: string): Promise<{ queueId: string } | null> {
    return this.store.entries.findByIdempotencyKey(tenantId, sessionId, idempotencyKey)
  }

  /** A queue entry's run, once it has started; null when the entry ended without one (cancelled while queued). */
  async startedRun(tenantId: string, queueId: string): Promise<RunRecord | null> {
    const found = await this.entryById(tenantId, queueId)
    if (!found) throw new NotFoundError('queue entry', queueId)
    if (found.run) return found.run
    const events = (await this.sessionEvents(tenantId, found.sessionId, null))[Symbol.asyncIterator]()
    try {
      // the live stream attaches on its first read, so the run may have started before it: the
      // store is read again once the stream has delivered, and when it ends
      let attached = false
      for (let next = await events.next(); !next.done; next = await events.next()) {
        const event = next.value
        if (event.type === 'RUN_STARTED' && event.run.queueId === queueId) return event.run
        if (event.type === 'QUEUE_ENTRY' && event.entry.queueId === queueId && event.kind === 'FINISHED') break
        if (attached) continue
        attached = true
        const now = await this.entryById(tenantId, queueId)
        if (now?.run) return now.run
      }
      return (await this.entryById(tenantId, queueId))?.run ?? null
    } finally {
      await events.return?.()
    }
  }

  /** The request a run ran; null when it is not kept. */
  requestOf(tenantId: string, runId: string): Promise<RunRequest | null> {
    return this.store.runs.requestOf(tenantId, runId)
  }

  runs(tenantId: string, filter: RunFilter, after: RunCursor | null, take: number): Promise<RunRecord[]> {
    return this.store.runs.list(tenantId, filter, after, take)
  }

  /** The webhook posts of a run's end (none while it is live). */
  webhookDeliveries(tenantId: string, runId: string): Promise<WebhookDelivery[]> {
    return this.store.webhooks.forRun(tenantId, runId)
  }

  /** Every event of a session after `afterSequence` (or from now on), then live. */
  async sessionEvents(tenantId: string, sessionId: string, afterSequence: number | null): Promise<AsyncIterable<SessionEvent>> {
    await this.sessions.require(tenantId, sessionId)
    return this.bus.subscribe({ tenantId, sessionId, afterSequence, unwrittenTail: this.unwrittenTail(tenantId, sessionId) })
  }

  /** The events of one run after `afterSequence` (from its start by default); ends after RUN_FINISHED. */
  async runEvents(tenantId: string, runId: string, afterSequence: number | null): Promise<AsyncIterable<SessionEvent>> {
    const run = await this.run(tenantId, runId, 'runId')
    if (!run?.sessionId) throw new NotFoundError('run', runId)
    const ended = run.finishedAt !== null && !this.queue.isRunning(runId)
    return this.bus.subscribe({
      tenantId,
      sessionId: run.sessionId,
      runId,
      afterSequence: afterSequence ?? 0,
      until: (event) => event.type === 'RUN_FINISHED',
      replayOnly: ended,
      unwrittenTail: this.unwrittenTail(tenantId, run.sessionId),
    })
  }

  /** Asks the session's owner, here or elsewhere, for what it delivered and has not written yet. */
  private unwrittenTail(tenantId: string, sessionId: string) {
    return (afterSequence: number) => this.router.read(tenantId, sessionId, 'unwrittenTail', [tenantId, sessionId, afterSequence])
  }
}
