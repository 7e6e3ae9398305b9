import { randomUUID } from 'node:crypto'
import type { Backend } from '../catalog/catalog.js'
import { PromptlineError } from '../errors.js'
import type { SessionEventBus } from '../events/event-bus.js'
import type { Logger } from '../logger.js'
import type { ModelClient } from '../providers/model-client.js'
import type { SaveQueue } from '../store/save-queue.js'
import type { RunStore } from '../store/run-store.js'
import type { QueueEntryRecord, RunRecord, TerminalReason, Usage } from '../store/records.js'
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
  bus: SessionEventBus
  runs: RunStore
  saves: SaveQueue
  logger: Logger
  coalescer: CoalescerOptions
  heartbeatMs: number
}

const now = () => new Date().toISOString()

/**
 * Executes one queue entry: a durable run row, preparation, generation with steering, and a
 * typed outcome. Tokens go from the model stream through one coalescer to the event bus; no DB
 * write is awaited on the way, and row writes go through the ordered save queue.
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
      usage: null,
      startedAt: now(),
      firstTokenAt: null,
      finishedAt: null,
      heartbeatAt: now(),
      errorCode: null,
      errorMessage: null,
      terminalReason: null,
    }
    const publish = (data: Parameters<SessionEventBus['publish']>[3]) => bus.publish(run.tenantId, entry.sessionId, run.id, data)
    const save = () => {
      const snapshot = { ...run }
      saves.enqueue(run.id, () => runs.update(snapshot))
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
    const coalescer = new TokenCoalescer((text) => publish({ type: 'TOKEN_DELTA', text }), this.deps.coalescer)
    let output = ''
    let segment = ''
    const usage: Usage = { inputTokens: 0, outputTokens: 0 }
    const transcript: ChatMessage[] = []
    try {
      const prepared = await this.deps.preparer.prepare({
        tenantId: run.tenantId,
        sessionId: entry.sessionId,
        ...entry.request,
      })
      signal.throwIfAborted()
      Object.assign(run, {
        promptVersion: prepared.prompt?.version ?? null,
        definitionHash: prepared.prompt?.definitionHash ?? null,
        renderedHash: prepared.renderedHash,
        profileId: prepared.profile.id,
        backendId: prepared.backend.id,
        model: prepared.model,
        settings: redactSettings(prepared.settings),
        status: 'GENERATING',
      } satisfies Partial<RunRecord>)
      save()
      context.onGenerating()

      const client = this.deps.clientFor(prepared.backend)
      const messages = [...prepared.messages]
      transcript.push(...prepared.turn)
      // one model stream per segment; an accepted steer ends the segment at the next token
      for (;;) {
        segment = ''
        let deltas = 0
        let reported: Usage | null = null
        const stream = new AbortController()
        const forwardAbort = () => stream.abort(signal.reason)
        signal.addEventListener('abort', forwardAbort, { once: true })
        try {
          const request = { model: prepared.model, messages, settings: prepared.settings, endpoint: prepared.endpoint, credential: prepared.credential }
          for await (const event of client.generate(request, stream.signal)) {
            if (event.type === 'end') {
              reported = event.usage
              continue
            }
            if (run.firstTokenAt === null) run.firstTokenAt = now()
            segment += event.text
            output += event.text
            deltas++
            coalescer.push(event.text)
            if (context.steers.waiting) break
          }
        } catch (error) {
          throw signal.aborted ? signal.reason : error
        } finally {
          signal.removeEventListener('abort', forwardAbort)
          stream.abort()
          // a stream cut short (steer, abort) never reports usage: count what arrived
          usage.inputTokens += reported?.inputTokens ?? 0
          usage.outputTokens += reported?.outputTokens ?? deltas
        }
        signal.throwIfAborted()
        const steers = context.steers.take()
        if (steers.length === 0) break
        coalescer.restart()
        if (segment !== '') {
          messages.push({ role: 'assistant', content: segment })
          transcript.push({ role: 'assistant', content: segment })
        }
        for (const steer of steers) {
          messages.push({ role: 'user', content: steer.text })
          transcript.push({ role: 'user', content: steer.text })
          publish({ type: 'STEER_APPLIED', steerId: steer.steerId })
        }
      }
      coalescer.flush()
      transcript.push({ role: 'assistant', content: segment })
      Object.assign(run, { status: 'COMPLETED', terminalReason: 'COMPLETED' } satisfies Partial<RunRecord>)
      return { run: this.ended(run, output, usage), transcript, stoppedBy: null }
    } catch (error) {
      coalescer.flush()
      if (error instanceof RunStop) {
        Object.assign(run, { status: 'ABORTED', terminalReason: error.reason, errorCode: 'CANCELLED', errorMessage: error.message } satisfies Partial<RunRecord>)
        if (segment !== '') transcript.push({ role: 'assistant', content: segment })
        return { run: this.ended(run, output, usage), transcript, stoppedBy: error }
      }
      const known = error instanceof PromptlineError
      if (!known) this.deps.logger.error('run failed unexpectedly', { runId: run.id, error: (error as Error)?.message })
      Object.assign(run, {
        status: 'FAILED',
        terminalReason: 'ERROR',
        errorCode: known ? error.code : 'INTERNAL',
        errorMessage: known ? error.message : 'the run failed unexpectedly',
      } satisfies Partial<RunRecord>)
      return { run: this.ended(run, output, usage), transcript, stoppedBy: null }
    } finally {
      clearInterval(heartbeat)
      coalescer.close()
    }
  }

  private ended(run: RunRecord, output: string, usage: Usage): RunRecord {
    run.output = output
    run.usage = usage
    run.finishedAt = now()
    return run
  }

  /** Writes the terminal row and publishes RUN_FINISHED; call after the history was written. */
  finalize(run: RunRecord): void {
    const snapshot = { ...run }
    this.deps.saves.enqueue(run.id, () => this.deps.runs.update(snapshot))
    if (run.sessionId) this.deps.bus.publish(run.tenantId, run.sessionId, run.id, { type: 'RUN_FINISHED', run: snapshot })
  }
}
