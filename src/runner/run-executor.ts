import type { CapacityPools } from '../capacity/capacity-pool.js'
import type { Backend } from '../domain/catalog.js'
import type { QueueEntryRecord, RunRecord } from '../domain/records.js'
import { inRunSpan } from '../domain/tracing.js'
import type { FileBytes } from '../providers/content-parts.js'
import type { ModelClient } from '../providers/model-client.js'
import type { ToolServerClients } from '../providers/tool-server-clients.js'
import type { AdmittedPrompt, PromptPreparer } from './prepare.js'
import { type ResponseCacheDeps, RunResponseCache } from './response-cache.js'
import { type GenerationEnd, RunGeneration } from './run-generation.js'
import { RunRecorder, type RunRecorderDeps, type RunSession } from './run-recorder.js'
import { type RunStop, STALLS } from './run-stop.js'
import type { SubmittedDecision } from './server-calls.js'
import { SteerInbox } from './steer-inbox.js'
import type { CoalescerPacing } from './token-coalescer.js'
import { type SubmittedResult, ToolRounds } from './tool-rounds.js'

/** A run started by `RunExecutor.start`: the queue reads it, stops it, steers it and awaits its end. */
export interface RunHandle {
  /** The live record; the runner alone changes it. */
  readonly run: Readonly<RunRecord>
  /** Steers accepted for this run, applied at its next generation boundary. */
  readonly steers: SteerInbox
  /** True once the model call starts; false if the run ended before that. */
  readonly generating: Promise<boolean>
  /** The finished run, recorded (history, row, RUN_FINISHED); never rejects. */
  readonly finished: Promise<RunRecord>
  /** False once the run is past the point of no return (its end is being written). */
  readonly stoppable: boolean
  /** Stops the run unless it is already ending; says whether it did. */
  stop(stop: RunStop): boolean
  /** Takes results for the round the run waits on, durably; throws ToolResultRejectedError. */
  submitToolResults(results: SubmittedResult[], idempotencyKey: string | null): Promise<void>
  /** Approves or declines MCP calls the run waits on, durably; throws ToolResultRejectedError. */
  decideToolCalls(decisions: SubmittedDecision[], idempotencyKey: string | null, keyId: string | null): Promise<void>
  /** `listener` is told each time the run starts waiting for tool results. */
  onWaiting(listener: () => void): void
}

export interface RunExecutorDeps extends RunRecorderDeps {
  preparer: PromptPreparer
  responseCache: ResponseCacheDeps
  /** Uploaded files' bytes, read once a run's messages are assembled. */
  files: { read(tenantId: string, ids: readonly string[]): Promise<FileBytes> }
  clientFor(backend: Backend): ModelClient
  /** The MCP servers' clients, which list and make the calls of their tools. */
  toolServers: ToolServerClients
  capacity: CapacityPools
  coalescer: CoalescerPacing
}

/**
 * Executes and owns one queue entry's run: its row; the admitted resolution (or a
 * fresh one for an entry recovered after a restart); a lease on the backend (waiting in line as
 * WAITING_CAPACITY, or CAPACITY at once past its limit); the messages around the history as it
 * is now; generation with failover, steering and repairs (or, for a parallel prompt, several
 * profiles at once and a selection); and its end. Tokens go from the model stream through a
 * coalescer to the event bus; nothing on that path awaits the database.
 */
export class RunExecutor {
  constructor(private readonly deps: RunExecutorDeps) {}

  /**
   * `session`: where the run's events go and its turn joins; the run's row is inserted with its
   * claim of the entry, after the entry's earlier writes. `resumed`: a run that was waiting for tool results when its server stopped; it
   * goes on waiting here.
   */
  start(entry: QueueEntryRecord, admitted: AdmittedPrompt | null, session: RunSession, resumed: RunRecord | null = null): RunHandle {
    const controller = new AbortController()
    let ending = false
    const recorder = new RunRecorder(
      this.deps,
      entry,
      session,
      (stall) => {
        if (!ending && !controller.signal.aborted) controller.abort(STALLS[stall])
      },
      resumed,
    )
    const tools = new ToolRounds(recorder, this.deps.toolServers)
    const steers = new SteerInbox()
    let generationStarted!: (started: boolean) => void
    const generating = new Promise<boolean>((resolve) => {
      generationStarted = resolve
    })
    const cache = new RunResponseCache(this.deps.responseCache, entry.request)
    const finished = inRunSpan(recorder.run, async () => {
      const generation = new RunGeneration(this.deps, {
        recorder,
        tools,
        entry,
        admitted,
        history: session.history,
        signal: controller.signal,
        steers,
        cache,
        onGenerating: () => generationStarted(true),
      })
      const end = await generation.generate()
      ending = true
      generationStarted(false)
      return recorded(recorder, end, steers, cache)
    })
    return {
      run: recorder.run,
      steers,
      generating,
      finished,
      get stoppable() {
        return !ending && !controller.signal.aborted
      },
      stop(stop) {
        if (ending) return false
        controller.abort(stop)
        return true
      },
      submitToolResults: (results, key) => tools.submit(results, key),
      decideToolCalls: (decisions, key, keyId) => tools.decide(decisions, key, keyId),
      onWaiting: (listener) => recorder.onWaiting(listener),
    }
  }
}

/** Writes how the run ended (null: it waits on, in the store, for tool results and its next owner), then keeps its answer. */
async function recorded(recorder: RunRecorder, end: GenerationEnd | null, steers: SteerInbox, cache: RunResponseCache): Promise<RunRecord> {
  if (end === null) return recorder.detach()
  const record = await recorder.finish({ ...end, unappliedSteerIds: steers.unapplied() })
  // kept once the run's end is written; a cache that fails to keep it costs a later miss, nothing more
  await cache
    .keep(record)
    .catch((error: Error) => recorder.logger.warn('the response cache did not keep an answer', { error: error.message }))
  return record
}
