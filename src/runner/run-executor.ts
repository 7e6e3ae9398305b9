import type { CapacityPools, Release } from '../capacity/capacity-pool.js'
import type { Backend } from '../domain/catalog.js'
import { fileIdsIn } from '../domain/content-parts.js'
import { PromptlineError, ToolTimeoutError } from '../domain/errors.js'
import type { QueueEntryRecord, RunRecord } from '../domain/records.js'
import { inRunSpan } from '../domain/tracing.js'
import { type FileBytes, NO_FILES } from '../providers/content-parts.js'
import type { ModelClient } from '../providers/model-client.js'
import type { AnswerHooks, AnswerProgress } from './answer.js'
import { ModelCaller } from './model-caller.js'
import { alternativeOf, type Branch, type BranchFactory, runParallel } from './parallel.js'
import type { AdmittedPrompt, Candidate, PromptPreparer } from './prepare.js'
import type { RecordJournal } from './record-journal.js'
import { type ResponseCacheDeps, RunResponseCache, replayHit } from './response-cache.js'
import { carriedOf, follow, recordFinish, tally } from './run-accounting.js'
import { type RunEnding, RunRecorder, type RunRecorderDeps } from './run-recorder.js'
import { RunStop, STALLS } from './run-stop.js'
import { SteerInbox } from './steer-inbox.js'
import { type CoalescerPacing, TokenCoalescer } from './token-coalescer.js'
import { answerThroughRounds } from './tool-loop.js'
import { type SubmittedResult, ToolRounds } from './tool-rounds.js'

/** A run started by `RunExecutor.start`: the queue reads it, stops it, steers it and awaits its end. */
export interface RunHandle {
  /** The live record; the runner alone changes it. */
  readonly run: RunRecord
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
  /** `listener` is told each time the run starts waiting for tool results. */
  onWaiting(listener: () => void): void
}

export interface RunExecutorDeps extends RunRecorderDeps {
  preparer: PromptPreparer
  responseCache: ResponseCacheDeps
  /** Uploaded files' bytes, read once a run's messages are assembled. */
  files: { read(tenantId: string, ids: readonly string[]): Promise<FileBytes> }
  clientFor(backend: Backend): ModelClient
  capacity: CapacityPools
  coalescer: CoalescerPacing
}

const now = () => new Date().toISOString()
const newProgress = (): AnswerProgress => ({ text: '', segment: '', attempt: 0, transcript: [] })

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
   * `entryJournal`: the entry's writes; the run's row is inserted with its claim of the entry,
   * after them. `resumed`: a run that was waiting for tool results when its server stopped; it
   * goes on waiting here.
   */
  start(
    entry: QueueEntryRecord,
    admitted: AdmittedPrompt | null,
    entryJournal: RecordJournal,
    resumed: RunRecord | null = null,
  ): RunHandle {
    const controller = new AbortController()
    let ending = false
    const recorder = new RunRecorder(
      this.deps,
      entry,
      entryJournal,
      (stall) => {
        if (!ending && !controller.signal.aborted) controller.abort(STALLS[stall])
      },
      resumed,
    )
    const tools = new ToolRounds(recorder)
    const steers = new SteerInbox()
    let generationStarted!: (started: boolean) => void
    const generating = new Promise<boolean>((resolve) => {
      generationStarted = resolve
    })
    const cache = new RunResponseCache(this.deps.responseCache, entry.request)
    const finished = inRunSpan(recorder.run, async () => {
      const end = await this.generate(recorder, tools, entry, admitted, controller.signal, steers, cache, () => generationStarted(true))
      ending = true
      generationStarted(false)
      // shut down while it waited for tool results: it waits on, in the store, for its next owner
      if (end === null) return recorder.detach()
      const record = await recorder.finish({ ...end, unappliedSteerIds: steers.unapplied() })
      // kept once the run's end is written; a cache that fails to keep it costs a later miss, nothing more
      await cache
        .keep(record)
        .catch((error: Error) => recorder.logger.warn('the response cache did not keep an answer', { error: error.message }))
      return record
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
      onWaiting: (listener) => recorder.onWaiting(listener),
    }
  }

  /** Everything up to the run's end; decides how it ends (null: it is left waiting for tool results), never throws. */
  private async generate(
    recorder: RunRecorder,
    tools: ToolRounds,
    entry: QueueEntryRecord,
    admitted: AdmittedPrompt | null,
    signal: AbortSignal,
    steers: SteerInbox,
    cache: RunResponseCache,
    onGenerating: () => void,
  ): Promise<Omit<RunEnding, 'unappliedSteerIds'> | null> {
    const { run } = recorder
    // a resumed run waits for its results before it leases anything
    const resumedWaiting = tools.waiting !== null
    const carried = resumedWaiting ? carriedOf(run) : null
    const leases = new Map<string, Release>()
    const lease = async (backend: Backend) => {
      if (leases.has(backend.id)) return leases.get(backend.id)!
      const release = await this.deps.capacity.get(backend).lease(signal, () => recorder.advance('WAITING_CAPACITY', true))
      leases.set(backend.id, release)
      // a failover that waited for another backend's capacity goes on generating
      if (run.status === 'WAITING_CAPACITY' && run.renderedHash !== null) recorder.advance('GENERATING', true)
      return release
    }
    const releaseLeases = () => {
      for (const release of leases.values()) release()
      leases.clear()
    }
    const branches: Branch[] = []
    // the bytes of the files the messages name, read once they are assembled (branches start after)
    let files = NO_FILES
    const branch: BranchFactory = (chain, branchSignal, candidateTag, judge = false) => {
      const progress = newProgress()
      const created: Branch = {
        judge,
        tag: candidateTag,
        caller: new ModelCaller(chain, this.deps, branchSignal, lease, recorder, files),
        progress,
        coalescer: new TokenCoalescer(
          (text) => recorder.publish({ type: 'TOKEN_DELTA', text, attempt: progress.attempt, candidate: candidateTag }),
          this.deps.coalescer,
        ),
        status: 'RUNNING',
        answer: null,
        error: null,
      }
      branches.push(created)
      return created
    }
    const hooks = (b: Branch, reportsStatus: boolean): AnswerHooks => ({
      coalescer: b.coalescer,
      onFirstToken: () => {
        if (run.firstTokenAt === null) run.firstTokenAt = now()
      },
      onSteerApplied: (steerId) => recorder.publish({ type: 'STEER_APPLIED', steerId }),
      onRestart: (attempt, reason, discardedChars) =>
        recorder.publish({ type: 'GENERATION_RESTARTED', attempt, reason, discardedChars, candidate: b.tag }),
      // the candidates of a parallel prompt validate and repair each on its own: the run stays GENERATING
      onStatus: (status) => reportsStatus && recorder.advance(status, status === 'REPAIRING'),
      onToolCall: (call, argumentsDelta, started) => {
        if (started) recorder.publish({ type: 'TOOL_CALL_STARTED', callId: call.callId, name: call.name, round: run.toolRounds.length })
        if (argumentsDelta !== '') recorder.publish({ type: 'TOOL_CALL_DELTA', callId: call.callId, argumentsDelta })
      },
    })
    let turn: AdmittedPrompt['turn'] = []
    try {
      const resolution = admitted ?? (await this.deps.preparer.admit(run.tenantId, entry.sessionId, entry.request))
      signal.throwIfAborted()
      follow(run, resolution.candidates[0]!)
      run.promptVersion = resolution.prompt?.version ?? null
      run.promptLabel = resolution.promptLabel
      run.splitBucket = resolution.splitBucket
      run.includes = resolution.includes.list
      run.definitionHash = resolution.prompt?.definitionHash ?? null
      // admission: a lease on the first backend with credentials, before the history is read
      const chains = resolution.parallel ?? [resolution.candidates]
      for (const chain of chains) {
        const first = chain.find((c) => c.credential.available)
        if (!resumedWaiting && (first || chains.length === 1)) await lease((first ?? chain[0]!).backend)
      }
      const prepared = await this.deps.preparer.assemble(resolution)
      signal.throwIfAborted()
      turn = prepared.turn
      const hit = resumedWaiting ? null : await cache.lookup(prepared, run)
      const fileIds = hit ? [] : fileIdsIn(prepared.messages)
      if (fileIds.length > 0) files = await this.deps.files.read(run.tenantId, fileIds)
      signal.throwIfAborted()
      if (!resumedWaiting) {
        run.renderedHash = prepared.renderedHash
        recorder.advance('GENERATING', true)
      }
      onGenerating()
      if (hit) return replayHit(recorder, hit, turn)

      const maxRepairs = prepared.prompt?.definition.maxRepairs ?? 0
      let selected: Branch
      // a parallel prompt's candidates answer at once; a resumed one goes on with the one that answered
      if (resolution.parallel && !resumedWaiting) {
        const spec = prepared.prompt!.definition.parallel!
        const { preparer } = this.deps
        const chainsOf = resolution.parallel
        selected = await runParallel({
          prepared,
          chains: chainsOf,
          spec,
          signal,
          maxRepairs,
          branch,
          hooks: (b) => hooks(b, false),
          preparer,
        })
      } else selected = branch(answeringChain(resolution, run.profileId), signal, null)
      const answer = await answerThroughRounds({
        branch: selected,
        prepared,
        maxRepairs,
        steers,
        tools,
        recorder,
        hooks: hooks(selected, true),
        signal,
        releaseLeases,
        account: (round) => {
          follow(run, selected.caller.candidate)
          recordFinish(run, round)
          tally(run, round.text, branches, carried)
        },
      })
      selected.answer = answer
      selected.status = 'COMPLETED'
      follow(run, selected.caller.candidate)
      recordFinish(run, answer)
      Object.assign(run, {
        parsedOutput: answer.validation.parsed ?? null,
        validation: { valid: answer.validation.valid, errors: answer.validation.errors, attempts: answer.attempts },
        alternatives: branches.filter((b) => b !== selected && !b.judge).map(alternativeOf),
      } satisfies Partial<RunRecord>)
      tally(run, answer.text, branches, carried)
      const transcript = [
        ...turn,
        ...tools.added,
        ...selected.progress.transcript,
        { role: 'assistant' as const, content: selected.progress.segment },
      ]
      return { status: 'COMPLETED', terminalReason: 'COMPLETED', errorCode: null, errorMessage: null, transcript, history: 'ALL' }
    } catch (error) {
      const lead = branches[0]
      tally(run, lead?.progress.text ?? '', branches, carried)
      if (error instanceof RunStop) {
        if (error.reason === 'SHUTDOWN' && tools.waiting) return null
        const partial = lead && lead.progress.segment !== '' ? [{ role: 'assistant' as const, content: lead.progress.segment }] : []
        // stopped while it waited: its turn ends with the calls (a replay leaves out those without a result)
        const last = tools.waiting ? [] : [...(lead?.progress.transcript ?? []), ...partial]
        const transcript = [...turn, ...tools.exchange(), ...last]
        const history = error.keepTurn ? 'INTERRUPT' : 'NONE'
        return {
          status: 'ABORTED',
          terminalReason: error.reason,
          errorCode: error.errorCode,
          errorMessage: error.message,
          transcript,
          history,
        }
      }
      const known = error instanceof PromptlineError
      if (!known) recorder.logger.error('run failed unexpectedly', { error: (error as Error)?.message })
      return {
        status: 'FAILED',
        terminalReason: error instanceof ToolTimeoutError ? 'TOOL_TIMEOUT' : 'ERROR',
        errorCode: known ? error.code : 'INTERNAL',
        errorMessage: known ? error.message : 'the run failed unexpectedly',
        transcript: [],
        history: 'NONE',
      }
    } finally {
      for (const b of branches) b.coalescer.close()
      releaseLeases()
    }
  }
}

/** The candidates a run goes on with: the parallel chain of the profile that answered (a resumed run), else the profile's. */
function answeringChain(resolution: AdmittedPrompt, profileId: string | null): Candidate[] {
  return resolution.parallel?.find((chain) => chain[0]!.profile.id === profileId) ?? resolution.candidates
}
