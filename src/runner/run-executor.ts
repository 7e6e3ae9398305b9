import { randomUUID } from 'node:crypto'
import type { CapacityPools, Release } from '../capacity/capacity-pool.js'
import type { Backend } from '../catalog/catalog.js'
import { PromptlineError } from '../errors.js'
import type { SessionEventBus } from '../events/event-bus.js'
import type { SessionEventData } from '../events/events.js'
import type { Logger } from '../logger.js'
import type { ModelClient } from '../providers/model-client.js'
import type { QueueEntryRecord, RunRecord, TerminalReason } from '../store/records.js'
import type { RunStore } from '../store/run-store.js'
import type { SaveQueue } from '../store/save-queue.js'
import { ModelCaller } from './model-caller.js'
import { repairInstruction, validateOutput, type ValidationResult } from './output-validation.js'
import type { ChatMessage, PromptPreparer } from './prepare.js'
import { redactSettings } from './settings.js'
import type { SteerInbox } from './steer-inbox.js'
import { TokenCoalescer, type CoalescerOptions } from './token-coalescer.js'

/** Why a run was stopped from outside; the abort signal's reason. */
export class RunStop {
  constructor(
    readonly reason: Extract<TerminalReason, 'ABORTED' | 'CANCELLED' | 'SUPERSEDED' | 'SHUTDOWN'>,
    readonly message: string,
  ) {}
}

export interface RunContext {
  entry: QueueEntryRecord
  signal: AbortSignal
  steers: SteerInbox
  /** The run row exists (PREPARING): the entry can point at it. */
  onRunCreated(run: RunRecord): void
  /** The model call starts: the entry becomes RUNNING. */
  onGenerating(): void
}

export interface RunResult {
  /** Terminal, not yet finalized (see `finalize`). */
  run: RunRecord
  /** The messages this run added to the conversation, its final answer last. */
  transcript: ChatMessage[]
  stoppedBy: RunStop | null
}

export interface RunExecutorDeps {
  preparer: PromptPreparer
  clientFor(backend: Backend): ModelClient
  capacity: CapacityPools
  bus: SessionEventBus
  runs: RunStore
  saves: SaveQueue
  logger: Logger
  coalescer: CoalescerOptions
  heartbeatMs: number
}

const now = () => new Date().toISOString()

/**
 * Executes one queue entry (DESIGN §2): a durable run row; resolution; a lease on the backend
 * (waiting in line as WAITING_CAPACITY, or CAPACITY at once past its limit) before anything is
 * rendered; rendering; generation with failover, steering and repairs; a typed outcome. Tokens
 * go from the model stream through one coalescer to the event bus; nothing on that path awaits
 * the database, and row writes go through the ordered save queue.
 */
export class RunExecutor {
  constructor(private readonly deps: RunExecutorDeps) {}

  async execute(context: RunContext): Promise<RunResult> {
    const { entry, signal } = context
    const { bus, saves, runs } = this.deps
    const run: RunRecord = {
      id: randomUUID(),
      tenantId: entry.tenantId,
      sessionId: entry.sessionId,
      queueId: entry.queueId,
      status: 'PREPARING',
      promptId: entry.request.promptId,
      promptVersion: null,
      profileId: null,
      backendId: null,
      model: null,
      definitionHash: null,
      renderedHash: null,
      settings: {},
      output: null,
      parsedOutput: null,
      validation: null,
      failoverAttempts: [],
      usage: null,
      costUsd: null,
      startedAt: now(),
      firstTokenAt: null,
      finishedAt: null,
      heartbeatAt: now(),
      errorCode: null,
      errorMessage: null,
      terminalReason: null,
    }
    const publish = (data: SessionEventData) => bus.publish(run.tenantId, entry.sessionId, run.id, data)
    const save = () => {
      const snapshot = { ...run }
      saves.enqueue(run.id, () => runs.update(snapshot), 'row')
    }
    const inserted = { ...run }
    saves.enqueue(run.id, () => runs.insert(inserted))
    context.onRunCreated(run)
    publish({ type: 'RUN_STARTED', run: { ...run } })

    const heartbeat = setInterval(() => {
      run.heartbeatAt = now()
      const at = run.heartbeatAt
      saves.enqueue(run.id, () => runs.heartbeat(run.id, at))
    }, this.deps.heartbeatMs)
    let attempt = 0
    const coalescer = new TokenCoalescer((text) => publish({ type: 'TOKEN_DELTA', text, attempt }), this.deps.coalescer)
    const leases = new Map<string, Release>()
    const lease = async (backend: Backend) => {
      if (leases.has(backend.id)) return leases.get(backend.id)!
      const release = await this.deps.capacity.get(backend).lease(signal, () => {
        run.status = 'WAITING_CAPACITY'
        save()
      })
      leases.set(backend.id, release)
      return release
    }
    let caller: ModelCaller | null = null
    let answer = ''
    let segment = ''
    const transcript: ChatMessage[] = []
    try {
      const resolution = await this.deps.preparer.resolve({ tenantId: run.tenantId, sessionId: entry.sessionId, ...entry.request })
      signal.throwIfAborted()
      Object.assign(run, {
        promptVersion: resolution.prompt?.version ?? null,
        definitionHash: resolution.prompt?.definitionHash ?? null,
        profileId: resolution.profile.id,
        backendId: resolution.backend.id,
        model: resolution.model,
        settings: redactSettings(resolution.settings),
      } satisfies Partial<RunRecord>)
      // admission: a lease on the first backend with credentials, before anything is rendered
      const first = resolution.candidates.find((c) => c.credential.available) ?? resolution.candidates[0]!
      await lease(first.backend)
      const prepared = await this.deps.preparer.complete(resolution)
      signal.throwIfAborted()
      Object.assign(run, { renderedHash: prepared.renderedHash, status: 'GENERATING' } satisfies Partial<RunRecord>)
      save()
      context.onGenerating()

      caller = new ModelCaller(resolution.candidates, this.deps, signal, lease)
      let messages = [...prepared.messages]
      transcript.push(...prepared.turn)
      let validation: ValidationResult
      for (;;) {
        // one attempt: model calls until no steer is waiting
        answer = ''
        for (;;) {
          segment = ''
          const { endedEarly } = await caller.call(messages, (text) => {
            if (run.firstTokenAt === null) run.firstTokenAt = now()
            segment += text
            answer += text
            coalescer.push(text)
            return context.steers.waiting
          })
          this.follow(run, caller)
          const steers = context.steers.take()
          if (steers.length === 0 && !endedEarly) break
          coalescer.restart()
          if (segment !== '') {
            messages = [...messages, { role: 'assistant', content: segment }]
            transcript.push({ role: 'assistant', content: segment })
          }
          for (const steer of steers) {
            messages = [...messages, { role: 'user', content: steer.text }]
            transcript.push({ role: 'user', content: steer.text })
            publish({ type: 'STEER_APPLIED', steerId: steer.steerId })
          }
        }
        coalescer.flush()
        run.status = 'VALIDATING'
        validation = validateOutput(prepared.output, answer)
        if (validation.valid || attempt >= (prepared.prompt?.definition.maxRepairs ?? 0)) break
        // a repair: the same lease, the answer and what was wrong with it, a fresh permit
        coalescer.restart()
        attempt++
        run.status = 'REPAIRING'
        save()
        messages = [...messages, { role: 'assistant', content: answer }, { role: 'user', content: repairInstruction(prepared.output, validation.errors) }]
        run.status = 'GENERATING'
      }
      transcript.push({ role: 'assistant', content: segment })
      Object.assign(run, {
        status: 'COMPLETED',
        terminalReason: 'COMPLETED',
        parsedOutput: validation.parsed ?? null,
        validation: { valid: validation.valid, errors: validation.errors, attempts: attempt + 1 },
      } satisfies Partial<RunRecord>)
      return { run: this.ended(run, answer, caller), transcript, stoppedBy: null }
    } catch (error) {
      coalescer.flush()
      if (error instanceof RunStop) {
        Object.assign(run, { status: 'ABORTED', terminalReason: error.reason, errorCode: 'CANCELLED', errorMessage: error.message } satisfies Partial<RunRecord>)
        if (segment !== '') transcript.push({ role: 'assistant', content: segment })
        return { run: this.ended(run, answer, caller), transcript, stoppedBy: error }
      }
      const known = error instanceof PromptlineError
      if (!known) this.deps.logger.error('run failed unexpectedly', { runId: run.id, error: (error as Error)?.message })
      Object.assign(run, {
        status: 'FAILED',
        terminalReason: 'ERROR',
        errorCode: known ? error.code : 'INTERNAL',
        errorMessage: known ? error.message : 'the run failed unexpectedly',
      } satisfies Partial<RunRecord>)
      return { run: this.ended(run, answer, caller), transcript, stoppedBy: null }
    } finally {
      clearInterval(heartbeat)
      coalescer.close()
      for (const release of leases.values()) release()
    }
  }

  /** After a failover the run reports the profile that answered. */
  private follow(run: RunRecord, caller: ModelCaller): void {
    const { candidate } = caller
    if (run.profileId === candidate.profile.id) return
    Object.assign(run, { profileId: candidate.profile.id, backendId: candidate.backend.id, model: candidate.model, settings: redactSettings(candidate.settings) })
  }

  private ended(run: RunRecord, output: string, caller: ModelCaller | null): RunRecord {
    run.output = output
    run.usage = caller ? { ...caller.usage } : { inputTokens: 0, outputTokens: 0 }
    run.costUsd = caller ? caller.cost : null
    run.failoverAttempts = caller ? [...caller.attempts] : []
    run.finishedAt = now()
    return run
  }

  /** Writes the terminal row and publishes RUN_FINISHED; call after the history was written. */
  finalize(run: RunRecord): void {
    const snapshot = { ...run }
    this.deps.saves.enqueue(run.id, () => this.deps.runs.update(snapshot), 'row')
    if (run.sessionId) this.deps.bus.publish(run.tenantId, run.sessionId, run.id, { type: 'RUN_FINISHED', run: snapshot })
  }
}
