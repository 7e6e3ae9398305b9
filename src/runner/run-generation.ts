import { fileIdsIn } from '../domain/content-parts.js'
import { PromptlineError, ToolTimeoutError } from '../domain/errors.js'
import type { QueueEntryRecord, RunRecord } from '../domain/records.js'
import type { CachedAnswer } from '../domain/response-cache.js'
import { type FileBytes, NO_FILES } from '../providers/content-parts.js'
import type { SessionHistory } from '../store/session-history.js'
import type { AnswerHooks, AnswerProgress } from './answer.js'
import { ModelCaller } from './model-caller.js'
import { alternativeOf, type Branch, runParallel } from './parallel.js'
import type { AdmittedPrompt, Candidate, PreparedPrompt } from './prepare.js'
import { type RunResponseCache, replayHit } from './response-cache.js'
import { answeredBy, carriedOf, finishOf, tallied } from './run-accounting.js'
import type { RunExecutorDeps } from './run-executor.js'
import { RunLeases } from './run-leases.js'
import type { RunEnding, RunRecorder } from './run-recorder.js'
import { RunStop } from './run-stop.js'
import { withServerTools } from './server-calls.js'
import type { SteerInbox } from './steer-inbox.js'
import { TokenCoalescer } from './token-coalescer.js'
import { answerThroughRounds } from './tool-loop.js'
import type { ToolRounds } from './tool-rounds.js'

const now = () => new Date().toISOString()
const newProgress = (): AnswerProgress => ({ text: '', segment: '', attempt: 0, transcript: [] })

/** How a run ends, as generation decides it (the steers left unapplied are added by the executor). */
export type GenerationEnd = Omit<RunEnding, 'unappliedSteerIds'>

/** What the run will answer with: its resolution and messages, and an exact cache hit if there is one. */
interface RunPlan {
  resolution: AdmittedPrompt
  prepared: PreparedPrompt
  hit: CachedAnswer | null
}

export interface RunGenerationParts {
  recorder: RunRecorder
  tools: ToolRounds
  entry: QueueEntryRecord
  /** The resolution admission made; null for an entry recovered after a restart (resolved again). */
  admitted: AdmittedPrompt | null
  /** The session's conversation, read as it is when the run starts. */
  history: SessionHistory
  signal: AbortSignal
  steers: SteerInbox
  cache: RunResponseCache
  /** Told once the run generates (or replays a cache hit). */
  onGenerating(): void
}

/**
 * One run's generation, up to its end: its plan (the resolution, the leases on the first
 * backends, the messages around the history as it is now, a cache hit), then its answer (one
 * profile's with failover, steers, repairs and tool rounds, or a parallel prompt's selection).
 * The run's record is changed through its recorder, and by the accounting of what it used.
 */
export class RunGeneration {
  private readonly leases: RunLeases
  private readonly branches: Branch[] = []
  /** The bytes of the files the messages name, read once they are assembled (branches start after). */
  private files: FileBytes = NO_FILES
  /** The request's turn of the conversation, once assembled. */
  private turn: AdmittedPrompt['turn'] = []
  /** A run resumed while it waited for tool results: it leases nothing before its results are in. */
  private readonly resumedWaiting: boolean
  private readonly carried: ReturnType<typeof carriedOf> | null

  constructor(
    private readonly deps: RunExecutorDeps,
    private readonly parts: RunGenerationParts,
  ) {
    const { recorder, tools, signal } = parts
    const run = recorder.run
    this.resumedWaiting = tools.waiting !== null
    this.carried = this.resumedWaiting ? carriedOf(run) : null
    this.leases = new RunLeases(deps.capacity, signal, {
      waiting: () => recorder.advance('WAITING_CAPACITY', true),
      // a failover that waited for another backend's capacity goes on generating
      leased: () => {
        if (run.status === 'WAITING_CAPACITY' && run.renderedHash !== null) recorder.advance('GENERATING', true)
      },
    })
  }

  private get run(): Readonly<RunRecord> {
    return this.parts.recorder.run
  }

  /** Everything up to the run's end; decides how it ends (null: it is left waiting for tool results), never throws. */
  async generate(): Promise<GenerationEnd | null> {
    try {
      const plan = await this.plan()
      if (plan.hit) return replayHit(this.parts.recorder, plan.hit, this.turn)
      return await this.answer(plan)
    } catch (error) {
      return this.stopped(error)
    } finally {
      for (const b of this.branches) b.coalescer.close()
      this.leases.releaseAll()
    }
  }

  private async plan(): Promise<RunPlan> {
    const { recorder, entry, admitted, signal, cache } = this.parts
    const { run } = this
    const admission = admitted ?? (await this.deps.preparer.admit(run.tenantId, entry.sessionId, entry.request))
    signal.throwIfAborted()
    const resolution = await withServerTools(admission, this.deps.toolServers, signal)
    recorder.amend({
      ...answeredBy(resolution.candidates[0]!),
      promptVersion: resolution.prompt?.version ?? null,
      promptLabel: resolution.promptLabel,
      splitBucket: resolution.splitBucket,
      includes: resolution.includes.list,
      definitionHash: resolution.prompt?.definitionHash ?? null,
    })
    // admission: a lease on the first backend with credentials, before the history is read
    const chains = resolution.parallel ?? [resolution.candidates]
    for (const chain of chains) {
      const first = chain.find((c) => c.credential.available)
      if (!this.resumedWaiting && (first || chains.length === 1)) await this.leases.take((first ?? chain[0]!).backend)
    }
    const prepared = this.deps.preparer.assemble(resolution, await this.parts.history.messages())
    signal.throwIfAborted()
    this.turn = prepared.turn
    const hit = this.resumedWaiting ? null : await cache.lookup(prepared, recorder)
    const fileIds = hit ? [] : fileIdsIn(prepared.messages)
    if (fileIds.length > 0) this.files = await this.deps.files.read(run.tenantId, fileIds)
    signal.throwIfAborted()
    if (!this.resumedWaiting) {
      recorder.amend({ renderedHash: prepared.renderedHash })
      recorder.advance('GENERATING', true)
    }
    this.parts.onGenerating()
    return { resolution, prepared, hit }
  }

  private async answer({ resolution, prepared }: RunPlan): Promise<GenerationEnd> {
    const { recorder, tools, steers, signal } = this.parts
    const { run, branches, carried } = this
    const { maxRepairs } = prepared
    // a parallel prompt's candidates answer at once; a resumed one goes on with the one that answered
    const selected =
      resolution.parallel && !this.resumedWaiting
        ? await runParallel({
            prepared,
            chains: resolution.parallel,
            spec: prepared.prompt!.definition.parallel!,
            signal,
            maxRepairs,
            branch: (chain, branchSignal, tag, judge) => this.branch(chain, branchSignal, tag, judge),
            hooks: (b) => this.hooks(b, false),
            preparer: this.deps.preparer,
          })
        : this.branch(answeringChain(resolution, run.profileId), signal, null)
    const answer = await answerThroughRounds({
      branch: selected,
      prepared,
      maxRepairs,
      steers,
      tools,
      recorder,
      hooks: this.hooks(selected, true),
      signal,
      releaseLeases: () => this.leases.releaseAll(),
      account: (round) =>
        recorder.amend({ ...answeredBy(selected.caller.candidate), ...finishOf(round), ...tallied(round.text, branches, carried) }),
    })
    selected.answer = answer
    selected.status = 'COMPLETED'
    recorder.amend({
      ...answeredBy(selected.caller.candidate),
      ...finishOf(answer),
      parsedOutput: answer.validation.parsed ?? null,
      validation: { valid: answer.validation.valid, errors: answer.validation.errors, attempts: answer.attempts },
      alternatives: branches.filter((b) => b !== selected && !b.judge).map(alternativeOf),
      ...tallied(answer.text, branches, carried),
    })
    const transcript = [
      ...this.turn,
      ...tools.added,
      ...selected.progress.transcript,
      { role: 'assistant' as const, content: selected.progress.segment },
    ]
    return { status: 'COMPLETED', terminalReason: 'COMPLETED', errorCode: null, errorMessage: null, transcript, history: 'ALL' }
  }

  /** How a run that threw ends: stopped (aborted, cancelled, shut down…) or failed. */
  private stopped(error: unknown): GenerationEnd | null {
    const { recorder, tools } = this.parts
    const lead = this.branches[0]
    recorder.amend(tallied(lead?.progress.text ?? '', this.branches, this.carried))
    if (error instanceof RunStop) {
      if (error.reason === 'SHUTDOWN' && tools.waiting) return null
      const partial = lead && lead.progress.segment !== '' ? [{ role: 'assistant' as const, content: lead.progress.segment }] : []
      // stopped while it waited: its turn ends with the calls (a replay leaves out those without a result)
      const last = tools.waiting ? [] : [...(lead?.progress.transcript ?? []), ...partial]
      const transcript = [...this.turn, ...tools.exchange(), ...last]
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
  }

  /** Starts answering on a chain of candidates; its tokens are tagged with `tag` (a parallel prompt's profile). */
  private branch(chain: Candidate[], signal: AbortSignal, tag: string | null, judge = false): Branch {
    const { recorder } = this.parts
    const progress = newProgress()
    const created: Branch = {
      judge,
      tag,
      caller: new ModelCaller(chain, this.deps, signal, (backend) => this.leases.take(backend), recorder, this.files),
      progress,
      coalescer: new TokenCoalescer(
        (text) => recorder.publish({ type: 'TOKEN_DELTA', text, attempt: progress.attempt, candidate: tag }),
        this.deps.coalescer,
      ),
      status: 'RUNNING',
      answer: null,
      error: null,
    }
    this.branches.push(created)
    return created
  }

  /** What a branch's answer tells the run as it goes; only the answering one reports the run's status. */
  private hooks(b: Branch, reportsStatus: boolean): AnswerHooks {
    const { recorder } = this.parts
    const { run } = this
    return {
      coalescer: b.coalescer,
      onFirstToken: () => {
        if (run.firstTokenAt === null) recorder.amend({ firstTokenAt: now() })
      },
      onSteerApplied: (steerId) => recorder.publish({ type: 'STEER_APPLIED', steerId }),
      onRestart: (attempt, reason, discardedChars) =>
        recorder.publish({ type: 'GENERATION_RESTARTED', attempt, reason, discardedChars, candidate: b.tag }),
      // the candidates of a parallel prompt validate and repair each on its own: the run stays GENERATING
      onStatus: (status) => reportsStatus && recorder.advance(status, status === 'REPAIRING'),
      onToolCall: (call, argumentsDelta, started) => {
        if (started) {
          const server = b.caller.candidate.tooling?.tools.find((t) => t.name === call.name)?.server ?? null
          recorder.publish({ type: 'TOOL_CALL_STARTED', callId: call.callId, name: call.name, round: run.toolRounds.length, server })
        }
        if (argumentsDelta !== '') recorder.publish({ type: 'TOOL_CALL_DELTA', callId: call.callId, argumentsDelta })
      },
    }
  }
}

/** The candidates a run goes on with: the parallel chain of the profile that answered (a resumed run), else the profile's. */
function answeringChain(resolution: AdmittedPrompt, profileId: string | null): Candidate[] {
  return resolution.parallel?.find((chain) => chain[0]!.profile.id === profileId) ?? resolution.candidates
}
