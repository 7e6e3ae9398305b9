import { NotFoundError, SteerRejectedError, ToolResultRejectedError } from '../domain/errors.js'
import { advanceEntry, isTerminalRun } from '../domain/lifecycles.js'
import type { QueueEntryRecord, RunRecord } from '../domain/records.js'
import { decidedWith, submittedWith } from '../domain/tool-rounds.js'
import type { RunExecutor } from '../runner/run-executor.js'
import { RunStop } from '../runner/run-stop.js'
import type { SubmittedDecision } from '../runner/server-calls.js'
import type { SubmittedResult } from '../runner/tool-rounds.js'

/** Decisions on a run's calls, who gave them, and the key a repeat names. */
export interface ToolCallDecisions {
  decisions: SubmittedDecision[]
  idempotencyKey: string | null
  keyId: string | null
}

import type { RunStore } from '../store/run-store.js'
import type { AdmissionLimits } from './admission-limits.js'
import type { QueueEntryWriter } from './entry-writer.js'
import type { ActiveRun, SessionActor } from './session-actor.js'

export interface RunSupervisorDeps {
  executor: RunExecutor
  writer: QueueEntryWriter
  admission: AdmissionLimits
  runs: RunStore
}

const now = () => new Date().toISOString()

/**
 * Owns the live runs of every session: starts an entry's run, mirrors it on the entry, stops it
 * (cancel, abort, supersede, shutdown), takes its steers, and wakes whoever waits for an entry
 * to end (`runPrompt`).
 */
export class RunSupervisor {
  private readonly live = new Map<string, ActiveRun>()
  private readonly waiters = new Map<string, Set<() => void>>()

  constructor(private readonly deps: RunSupervisorDeps) {}

  /**
   * Starts a queued entry's run, or (`resumed`) goes on with a run that was waiting for tool
   * results when its server stopped; `done` resolves once the entry is terminal and written.
   */
  start(actor: SessionActor, entry: QueueEntryRecord, resumed: RunRecord | null = null): ActiveRun {
    const { writer, executor } = this.deps
    if (!resumed) {
      advanceEntry(entry, 'STARTING')
      entry.startedAt = now()
    }
    // the run claims the entry (STARTING, with its id) in the transaction that inserts it, with
    // the entry's STARTED event
    const session = { entryJournal: writer.journalOf(actor, entry), stream: actor.stream, history: actor.history }
    const handle = executor.start(entry, actor.admitted.get(entry.queueId) ?? null, session, resumed)
    actor.admitted.delete(entry.queueId)
    // whoever waits for the entry (runPrompt) is told when its run waits for tool results too
    handle.onWaiting(() => this.ended(entry.queueId))
    // RUNNING is not written: STARTING already marks it mid-run in the store
    void handle.generating.then((started) => {
      if (!started || entry.status !== 'STARTING') return
      advanceEntry(entry, 'RUNNING')
      writer.publish(actor, 'RUNNING', entry)
    })
    // the run's end wrote and announced the entry's end with it
    const done = handle.finished.then((run) => {
      if (isTerminalRun(run.status)) writer.retire(actor, entry, run)
      else writer.leave(actor, entry) // left waiting for tool results, for the session's next owner
      this.live.delete(run.id)
      this.ended(entry.queueId)
    })
    const active: ActiveRun = { entry, handle, done }
    this.live.set(handle.run.id, active)
    return active
  }

  /** Stops the session's running entry with CANCELLED and waits for its records. */
  async cancel(active: ActiveRun): Promise<boolean> {
    if (!active.handle.stop(new RunStop('CANCELLED', 'cancelled while running'))) return false
    await active.done
    return true
  }

  /** A newer prompt supersedes the running one; INTERRUPT keeps its turn in the history. */
  supersede(active: ActiveRun, keepTurn: boolean): void {
    const reason = keepTurn ? 'interrupted by a newer prompt' : 'rolled back for a newer prompt'
    active.handle.stop(new RunStop('SUPERSEDED', reason, keepTurn))
  }

  /**
   * Stops a run and returns its row once it is durably ABORTED. A run that already ended
   * answers `aborted: false` with its row (an abort receipt).
   */
  async abort(tenantId: string, runId: string, reason: string | null): Promise<{ aborted: boolean; run: RunRecord }> {
    const active = this.live.get(runId)
    if (
      active &&
      active.entry.tenantId === tenantId &&
      active.handle.stop(new RunStop('ABORTED', reason?.trim() || 'aborted by request'))
    ) {
      await active.done
      return { aborted: true, run: { ...active.handle.run } }
    }
    // not live here: ended (its end was written before it left), or run by another instance
    const run = await this.deps.runs.find(tenantId, runId)
    if (!run) throw new NotFoundError('run', runId)
    return { aborted: false, run }
  }

  /**
   * Takes tool results for a run that waits for them, durably, and answers with the run. A repeat
   * of a submission (same key) answers the same, also once the run has moved on or ended.
   */
  async submitToolResults(tenantId: string, runId: string, results: SubmittedResult[], key: string | null): Promise<RunRecord> {
    const active = this.live.get(runId)
    if (active && active.entry.tenantId === tenantId) {
      await active.handle.submitToolResults(results, key)
      return { ...active.handle.run }
    }
    const run = await this.deps.runs.find(tenantId, runId)
    if (!run) throw new NotFoundError('run', runId)
    if (submittedWith(run.toolRounds, key)) return run
    throw new ToolResultRejectedError(`run '${runId}' is ${run.status}, not waiting for tool results`, 'NOT_WAITING')
  }

  /** Approves or declines MCP calls a run waits on, durably; a repeat of a request (same key) answers the same, also later. */
  async decideToolCalls(tenantId: string, runId: string, decision: ToolCallDecisions): Promise<RunRecord> {
    const { decisions, idempotencyKey, keyId } = decision
    const active = this.live.get(runId)
    if (active && active.entry.tenantId === tenantId) {
      await active.handle.decideToolCalls(decisions, idempotencyKey, keyId)
      return { ...active.handle.run }
    }
    const run = await this.deps.runs.find(tenantId, runId)
    if (!run) throw new NotFoundError('run', runId)
    if (decidedWith(run.toolRounds, idempotencyKey)) return run
    throw new ToolResultRejectedError(`run '${runId}' is ${run.status}, not waiting for tool calls`, 'NOT_WAITING')
  }

  /** Accepts a steer for the session's running entry; the run applies it at its next token boundary. */
  steer(actor: SessionActor, queueId: string, steerId: string, text: string): { runId: string } {
    const active = actor.active!
    const { handle } = active
    if (handle.steers.has(steerId)) throw new SteerRejectedError(`steer '${steerId}' was already accepted for this run`, 'DUPLICATE')
    if (active.entry.status !== 'RUNNING' || !handle.stoppable)
      throw new SteerRejectedError(`queue entry '${queueId}' is not running`, 'NOT_RUNNING')
    this.deps.admission.check(actor, Buffer.byteLength(text), 1)
    handle.steers.add({ steerId, text })
    return { runId: handle.run.id }
  }

  /** A run's record while it is live, else null. */
  liveRun(tenantId: string, runId: string): RunRecord | null {
    const live = this.live.get(runId)?.handle.run
    return live && live.tenantId === tenantId ? { ...live } : null
  }

  isRunning(runId: string): boolean {
    return this.live.has(runId)
  }

  /** Tells whoever waits that an entry is terminal. */
  ended(queueId: string): void {
    for (const wake of this.waiters.get(queueId) ?? []) wake()
    this.waiters.delete(queueId)
  }

  /** Resolves when the entry is terminal, or after `timeoutMs`. */
  async waitForEntry(queueId: string, timeoutMs: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, timeoutMs)
      const set = this.waiters.get(queueId) ?? new Set()
      this.waiters.set(queueId, set)
      set.add(done)
      function done() {
        clearTimeout(timer)
        set.delete(done)
        resolve()
      }
    })
  }

  /**
   * Gives the live runs `graceMs` to finish, then stops the rest with SHUTDOWN and waits for their
   * records. A run waiting for tool results is let go at once (it waits on in the store, for the
   * next start), also one that starts waiting during the grace.
   */
  async close(graceMs: number): Promise<void> {
    const running = [...this.live.values()]
    const shutdown = new RunStop('SHUTDOWN', 'the server shut down during the run')
    for (const { handle } of running) {
      if (handle.run.status === 'REQUIRES_ACTION') handle.stop(shutdown)
      else handle.onWaiting(() => handle.stop(shutdown))
    }
    let grace: NodeJS.Timeout | undefined
    await Promise.race([
      Promise.all(running.map((a) => a.done)),
      new Promise((resolve) => {
        grace = setTimeout(resolve, graceMs)
      }),
    ])
    clearTimeout(grace)
    for (const active of running) active.handle.stop(shutdown)
    await Promise.all(running.map((a) => a.done))
  }
}
