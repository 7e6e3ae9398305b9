import { z } from 'zod'
import { envNameSchema, idSchema, parseInput, settingsLayerSchema } from '../domain/definitions.js'
import { NotFoundError } from '../domain/errors.js'
import type { SessionEvent } from '../domain/events.js'
import type { QueueEntryRecord, QueueEntryView, RunCursor, RunFilter, RunRecord, RunRequest, WhenBusy } from '../domain/records.js'
import type { SessionEventBus } from '../events/event-bus.js'
import type { PromptQueue } from '../queue/prompt-queue.js'
import type { PreparedPrompt, PrepareRequest, PromptPreparer } from '../runner/prepare.js'
import type { Store } from '../store/store.js'
import type { SessionService } from './session-service.js'

const MAX_TEXT = 1024 * 1024

const runRequestSchema = z
  .strictObject({
    sessionId: idSchema,
    promptId: idSchema.nullish(),
    input: z.string().max(MAX_TEXT).nullish(),
    variables: z.record(z.string(), z.unknown(), { error: 'must be a JSON object of variable values' }).nullish(),
    profileId: idSchema.nullish(),
    overrides: settingsLayerSchema.nullish(),
    credentialEnv: envNameSchema.nullish(),
  })
  .refine((r) => r.promptId != null || r.input != null, { message: 'give a promptId or an input text', path: ['promptId'] })

const scheduleSchema = z.strictObject({
  scheduleKey: z.string().min(1).max(256),
  debounceMs: z.number().int().min(0).max(86_400_000).nullish(),
})

const steerSchema = z.strictObject({
  sessionId: idSchema,
  queueId: z.string().min(1).max(128),
  steerId: idSchema,
  text: z.string().min(1).max(MAX_TEXT),
})

/** Use cases around running prompts: admission, scheduling, steering, cancelling, reading runs and streams. */
export class RunService {
  constructor(
    private readonly store: Store,
    private readonly preparer: PromptPreparer,
    private readonly queue: PromptQueue,
    private readonly bus: SessionEventBus,
    private readonly sessions: SessionService,
  ) {}

  /** A dry run: resolution and rendering exactly as a run would do them, without a model call. */
  prepare(request: PrepareRequest): Promise<PreparedPrompt> {
    return this.preparer.prepare(request)
  }

  /** Validates a request fully (a dry run against the session) without admitting it. */
  private async check(tenantId: string, input: Record<string, unknown>): Promise<{ sessionId: string; request: RunRequest }> {
    const { sessionId, ...parsed } = parseInput(runRequestSchema, input, 'input')
    await this.sessions.require(tenantId, sessionId)
    const request: RunRequest = {
      promptId: parsed.promptId ?? null,
      input: parsed.input ?? null,
      variables: parsed.variables ?? null,
      profileId: parsed.profileId ?? null,
      overrides: parsed.overrides ?? null,
      credentialEnv: parsed.credentialEnv ?? null,
    }
    await this.preparer.check({ tenantId, sessionId, ...request })
    return { sessionId, request }
  }

  async enqueue(tenantId: string, input: Record<string, unknown>, whenBusy: WhenBusy): Promise<QueueEntryRecord> {
    const { sessionId, request } = await this.check(tenantId, input)
    return this.queue.admit({ tenantId, sessionId, request, whenBusy })
  }

  /** Enqueues and waits for the run to end, or for `timeoutMs` (answering with the entry still running). */
  async runPrompt(
    tenantId: string,
    input: Record<string, unknown>,
    whenBusy: WhenBusy,
    timeoutMs: number,
  ): Promise<{ entry: QueueEntryView; run: RunRecord | null }> {
    const admitted = await this.enqueue(tenantId, input, whenBusy)
    await this.queue.waitForEntry(admitted.queueId, Math.min(Math.max(timeoutMs, 0), 3_600_000))
    const entry = await this.queueEntry(tenantId, admitted.sessionId, admitted.queueId)
    return { entry: entry!, run: entry?.runId ? await this.run(tenantId, entry.runId) : null }
  }

  async schedule(tenantId: string, input: Record<string, unknown>): Promise<QueueEntryRecord> {
    const { scheduleKey, debounceMs, ...rest } = input
    const schedule = parseInput(scheduleSchema, { scheduleKey, debounceMs }, 'input')
    const { sessionId, request } = await this.check(tenantId, rest)
    return this.queue.admit({
      tenantId,
      sessionId,
      request,
      whenBusy: 'ENQUEUE',
      schedule: { key: schedule.scheduleKey, debounceMs: schedule.debounceMs ?? 0 },
    })
  }

  async cancelScheduled(tenantId: string, sessionId: string, scheduleKey: string): Promise<boolean> {
    await this.sessions.require(tenantId, sessionId)
    return this.queue.cancelScheduled(tenantId, sessionId, scheduleKey)
  }

  async cancel(tenantId: string, sessionId: string, queueId: string): Promise<{ cancelled: boolean; entry: QueueEntryRecord }> {
    await this.sessions.require(tenantId, sessionId)
    return this.queue.cancel(tenantId, sessionId, queueId)
  }

  async steer(tenantId: string, input: unknown): Promise<{ steerId: string; queueId: string; runId: string }> {
    const { sessionId, queueId, steerId, text } = parseInput(steerSchema, input, 'input')
    await this.sessions.require(tenantId, sessionId)
    const { runId } = await this.queue.steer(tenantId, sessionId, queueId, steerId, text)
    return { steerId, queueId, runId }
  }

  abortRun(tenantId: string, runId: string, reason: string | null): Promise<{ aborted: boolean; run: RunRecord }> {
    return this.queue.abortRun(tenantId, runId, reason)
  }

  async queueEntry(tenantId: string, sessionId: string, queueId: string): Promise<QueueEntryView | null> {
    if (!(await this.sessions.get(tenantId, sessionId))) return null
    return this.queue.entry(tenantId, sessionId, queueId)
  }

  /** A run as it is now: live while it runs, from the store once it has ended. */
  run(tenantId: string, id: string): Promise<RunRecord | null> {
    return this.queue.run(tenantId, id)
  }

  runs(tenantId: string, filter: RunFilter, after: RunCursor | null, take: number): Promise<RunRecord[]> {
    return this.store.runs.list(tenantId, filter, after, take)
  }

  /** Every event of a session after `afterSequence` (or from now on), then live. */
  async sessionEvents(tenantId: string, sessionId: string, afterSequence: number | null): Promise<AsyncIterable<SessionEvent>> {
    await this.sessions.require(tenantId, sessionId)
    await this.bus.open(tenantId, sessionId)
    return this.bus.subscribe({ tenantId, sessionId, afterSequence })
  }

  /** The events of one run after `afterSequence` (from its start by default); ends after RUN_FINISHED. */
  async runEvents(tenantId: string, runId: string, afterSequence: number | null): Promise<AsyncIterable<SessionEvent>> {
    const run = await this.run(tenantId, parseInput(z.string().min(1).max(128), runId, 'runId'))
    if (!run?.sessionId) throw new NotFoundError('run', runId)
    const ended = run.finishedAt !== null && !this.queue.isRunning(runId)
    return this.bus.subscribe({
      tenantId,
      sessionId: run.sessionId,
      runId,
      afterSequence: afterSequence ?? 0,
      until: (event) => event.type === 'RUN_FINISHED',
      replayOnly: ended,
    })
  }
}
