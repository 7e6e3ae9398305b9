import { randomUUID } from 'node:crypto'
import type { CapacityPools, Release } from '../capacity/capacity-pool.js'
import type { Backend } from '../domain/catalog.js'
import type { ParallelSpec } from '../domain/definitions.js'
import { GenerationError, PromptlineError } from '../domain/errors.js'
import type { SessionEventData } from '../domain/events.js'
import type { Logger } from '../domain/logger.js'
import { validateOutput } from '../domain/output-validation.js'
import type { Alternative, ChatMessage, QueueEntryRecord, RunRecord, TerminalReason } from '../domain/records.js'
import { redactSettings } from '../domain/settings.js'
import type { SessionEventBus } from '../events/event-bus.js'
import type { ModelClient } from '../providers/model-client.js'
import type { RunStore } from '../store/run-store.js'
import type { SaveQueue } from '../store/save-queue.js'
import { type Answer, type AnswerHooks, type AnswerProgress, produceAnswer } from './answer.js'
import { ModelCaller } from './model-caller.js'
import type { Candidate, PreparedPrompt, PromptPreparer } from './prepare.js'
import type { SteerInbox } from './steer-inbox.js'
import { type CoalescerOptions, TokenCoalescer } from './token-coalescer.js'

/** Why a run was stopped from outside; the abort signal's reason. */
export class RunStop {
  constructor(
    readonly reason: Extract<TerminalReason, 'ABORTED' | 'CANCELLED' | 'SUPERSEDED' | 'SHUTDOWN'>,
    readonly message: string,
  ) {}
}

/** Why a parallel candidate was stopped: another one was selected first. */
class NotSelected extends Error {}

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

/** One answer being produced: by the run's profile, or by one profile of a parallel prompt. */
interface Branch {
  /** A judge's call of a BEST_OF prompt: counted, never an alternative. */
  judge: boolean
  caller: ModelCaller
  progress: AnswerProgress
  coalescer: TokenCoalescer
  status: Alternative['status'] | 'RUNNING'
  answer: Answer | null
  error: unknown
}

const now = () => new Date().toISOString()
const newProgress = (): AnswerProgress => ({ text: '', segment: '', attempt: 0, transcript: [] })

/**
 * Executes one queue entry (DESIGN §2): a durable run row; resolution; a lease on the backend
 * (waiting in line as WAITING_CAPACITY, or CAPACITY at once past its limit) before anything is
 * rendered; rendering; generation with failover, steering and repairs (or, for a parallel
 * prompt, several profiles at once and a selection); a typed outcome. Tokens go from the model
 * stream through a coalescer to the event bus; nothing on that path awaits the database, and
 * row writes go through the ordered save queue.
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
      alternatives: [],
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
    const branches: Branch[] = []
    const branch = (chain: Candidate[], branchSignal: AbortSignal, candidateTag: string | null, judge = false): Branch => {
      const progress = newProgress()
      const created: Branch = {
        judge,
        caller: new ModelCaller(chain, this.deps, branchSignal, lease),
        progress,
        coalescer: new TokenCoalescer(
          (text) => publish({ type: 'TOKEN_DELTA', text, attempt: progress.attempt, candidate: candidateTag }),
          this.deps.coalescer,
        ),
        status: 'RUNNING',
        answer: null,
        error: null,
      }
      branches.push(created)
      return created
    }
    const hooks = (b: Branch): AnswerHooks => ({
      coalescer: b.coalescer,
      onFirstToken: () => {
        if (run.firstTokenAt === null) run.firstTokenAt = now()
      },
      onSteerApplied: (steerId) => publish({ type: 'STEER_APPLIED', steerId }),
      onStatus: (status) => {
        run.status = status
        if (status === 'REPAIRING') save()
      },
    })
    let turn: ChatMessage[] = []
    try {
      const resolution = await this.deps.preparer.resolve({ tenantId: run.tenantId, sessionId: entry.sessionId, ...entry.request })
      signal.throwIfAborted()
      this.follow(run, resolution.candidates[0]!)
      Object.assign(run, {
        promptVersion: resolution.prompt?.version ?? null,
        definitionHash: resolution.prompt?.definitionHash ?? null,
      } satisfies Partial<RunRecord>)
      // admission: a lease on the first backend with credentials, before anything is rendered
      const chains = resolution.parallel ?? [resolution.candidates]
      for (const chain of chains) {
        const first = chain.find((c) => c.credential.available)
        if (first || chains.length === 1) await lease((first ?? chain[0]!).backend)
      }
      const prepared = await this.deps.preparer.complete(resolution)
      signal.throwIfAborted()
      turn = prepared.turn
      Object.assign(run, { renderedHash: prepared.renderedHash, status: 'GENERATING' } satisfies Partial<RunRecord>)
      save()
      context.onGenerating()

      const maxRepairs = prepared.prompt?.definition.maxRepairs ?? 0
      let selected: Branch
      if (resolution.parallel) {
        selected = await this.parallel(
          prepared,
          resolution.parallel,
          prepared.prompt!.definition.parallel!,
          signal,
          maxRepairs,
          branch,
          hooks,
        )
      } else {
        selected = branch(resolution.candidates, signal, null)
        selected.answer = await produceAnswer({
          caller: selected.caller,
          messages: prepared.messages,
          output: prepared.output,
          maxRepairs,
          steers: context.steers,
          progress: selected.progress,
          hooks: hooks(selected),
        })
        selected.status = 'COMPLETED'
      }
      const answer = selected.answer!
      this.follow(run, selected.caller.candidate)
      Object.assign(run, {
        status: 'COMPLETED',
        terminalReason: 'COMPLETED',
        parsedOutput: answer.validation.parsed ?? null,
        validation: { valid: answer.validation.valid, errors: answer.validation.errors, attempts: answer.attempts },
        alternatives: branches.filter((b) => b !== selected && !b.judge).map(alternativeOf),
      } satisfies Partial<RunRecord>)
      const transcript = [...turn, ...selected.progress.transcript, { role: 'assistant' as const, content: selected.progress.segment }]
      return { run: this.ended(run, answer.text, branches), transcript, stoppedBy: null }
    } catch (error) {
      const lead = branches[0]
      if (error instanceof RunStop) {
        Object.assign(run, {
          status: 'ABORTED',
          terminalReason: error.reason,
          errorCode: 'CANCELLED',
          errorMessage: error.message,
        } satisfies Partial<RunRecord>)
        const partial = lead && lead.progress.segment !== '' ? [{ role: 'assistant' as const, content: lead.progress.segment }] : []
        return {
          run: this.ended(run, lead?.progress.text ?? '', branches),
          transcript: [...turn, ...(lead?.progress.transcript ?? []), ...partial],
          stoppedBy: error,
        }
      }
      const known = error instanceof PromptlineError
      if (!known) this.deps.logger.error('run failed unexpectedly', { runId: run.id, error: (error as Error)?.message })
      Object.assign(run, {
        status: 'FAILED',
        terminalReason: 'ERROR',
        errorCode: known ? error.code : 'INTERNAL',
        errorMessage: known ? error.message : 'the run failed unexpectedly',
      } satisfies Partial<RunRecord>)
      return { run: this.ended(run, lead?.progress.text ?? '', branches), transcript: [], stoppedBy: null }
    } finally {
      clearInterval(heartbeat)
      for (const b of branches) b.coalescer.close()
      for (const release of leases.values()) release()
    }
  }

  /**
   * A parallel prompt: every profile answers at once under its own backend's capacity, tokens
   * tagged with the profile. FIRST_VALID takes the first valid answer and stops the others;
   * BEST_OF lets all finish and asks the judge prompt which is best.
   */
  private async parallel(
    prepared: PreparedPrompt,
    chains: Candidate[][],
    spec: ParallelSpec,
    signal: AbortSignal,
    maxRepairs: number,
    branch: (chain: Candidate[], signal: AbortSignal, tag: string, judge?: boolean) => Branch,
    hooks: (b: Branch) => AnswerHooks,
  ): Promise<Branch> {
    const stops = chains.map(() => new AbortController())
    const started = chains.map((chain, i) => branch(chain, AbortSignal.any([signal, stops[i]!.signal]), chain[0]!.profile.id))
    const finished: Branch[] = []
    let winner: Branch | null = null
    await Promise.all(
      started.map(async (b) => {
        try {
          b.answer = await produceAnswer({
            caller: b.caller,
            messages: prepared.messages,
            output: prepared.output,
            maxRepairs,
            steers: null,
            progress: b.progress,
            hooks: hooks(b),
          })
          b.status = 'COMPLETED'
        } catch (error) {
          if (signal.aborted) throw signal.reason
          b.status = error instanceof NotSelected ? 'ABORTED' : 'FAILED'
          b.error = error
        }
        finished.push(b)
        if (spec.select === 'FIRST_VALID' && !winner && b.answer?.validation.valid) {
          winner = b
          for (const [i, other] of started.entries()) if (other !== b) stops[i]!.abort(new NotSelected('another candidate answered first'))
        }
      }),
    )
    signal.throwIfAborted()
    // in declaration order, so the judge sees the candidates as the prompt lists them
    const completed = started.filter((b) => b.status === 'COMPLETED')
    if (completed.length === 0) {
      const first = started.find((b) => b.error instanceof PromptlineError)?.error
      throw first ?? new GenerationError('every parallel profile failed')
    }
    if (winner) return winner
    const valid = completed.filter((b) => b.answer!.validation.valid)
    const pool = valid.length > 0 ? valid : completed
    if (spec.select === 'FIRST_VALID' || pool.length === 1 || !spec.judgePromptId) return pool[0]!
    return pool[await this.judge(prepared, spec.judgePromptId, pool, signal, branch)] ?? pool[0]!
  }

  /** Asks the judge prompt (variables `input` and `candidates`) for `{"best": index}`; 0 if it cannot tell. */
  private async judge(
    prepared: PreparedPrompt,
    judgePromptId: string,
    pool: Branch[],
    signal: AbortSignal,
    branch: (chain: Candidate[], signal: AbortSignal, tag: string, judge?: boolean) => Branch,
  ): Promise<number> {
    const candidates = pool.map((b, index) => ({ index, profileId: b.caller.candidate.profile.id, output: b.answer!.text }))
    const judging = await this.deps.preparer.prepare({
      tenantId: prepared.tenantId,
      promptId: judgePromptId,
      variables: { ...prepared.variables, candidates },
    })
    const judge = branch(judging.candidates, signal, `judge:${judgePromptId}`, true)
    try {
      const { text } = await judge.caller.call(judging.messages, () => false)
      judge.status = 'COMPLETED'
      judge.progress.text = text
      const verdict = validateOutput(judging.output.kind === 'TEXT' ? { kind: 'JSON', schema: null } : judging.output, text)
      const best = (verdict.parsed as { best?: unknown } | undefined)?.best
      return typeof best === 'number' && Number.isInteger(best) && best >= 0 && best < pool.length ? best : 0
    } catch (error) {
      if (signal.aborted) throw signal.reason
      judge.status = 'FAILED'
      judge.error = error
      return 0
    }
  }

  /** The run reports the profile that answered (after a failover, or a parallel selection). */
  private follow(run: RunRecord, candidate: Candidate): void {
    Object.assign(run, {
      profileId: candidate.profile.id,
      backendId: candidate.backend.id,
      model: candidate.model,
      settings: redactSettings(candidate.settings),
    })
  }

  private ended(run: RunRecord, output: string, branches: Branch[]): RunRecord {
    run.output = output
    run.usage = { inputTokens: 0, outputTokens: 0 }
    run.costUsd = 0
    for (const b of branches) {
      run.usage.inputTokens += b.caller.usage.inputTokens
      run.usage.outputTokens += b.caller.usage.outputTokens
      run.costUsd = run.costUsd === null || b.caller.cost === null ? null : run.costUsd + b.caller.cost
    }
    if (branches.length === 0) run.costUsd = null
    run.failoverAttempts = branches.flatMap((b) => b.caller.attempts)
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

function alternativeOf(b: Branch): Alternative {
  const { candidate } = b.caller
  const error = b.error instanceof PromptlineError ? b.error : null
  return {
    profileId: candidate.profile.id,
    backendId: candidate.backend.id,
    model: candidate.model,
    status: b.status === 'RUNNING' ? 'ABORTED' : b.status,
    output: b.answer?.text ?? b.progress.text,
    valid: b.answer ? b.answer.validation.valid : null,
    errorCode: error?.code ?? (b.status === 'FAILED' ? 'INTERNAL' : null),
    errorMessage: error?.message ?? (b.error instanceof NotSelected ? b.error.message : null),
  }
}
