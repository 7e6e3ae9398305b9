import type { SessionEvent, SessionEventData } from '../domain/events.js'
import { advanceEntry, advanceRun, isTerminalEntry, isTerminalRun } from '../domain/lifecycles.js'
import type { DurabilityTimes } from '../domain/limits.js'
import type { Logger } from '../domain/logger.js'
import type { Metrics } from '../domain/metrics.js'
import type { QueueEntryRecord, RunRecord } from '../domain/records.js'
import type { SessionEventBus } from '../events/event-bus.js'
import type { SessionStream } from '../events/session-stream.js'
import { endEntry } from '../runner/run-records.js'
import type { BudgetLedger } from '../store/budget-ledger.js'
import type { DatabaseLink } from '../store/database-link.js'
import type { EventStore } from '../store/event-store.js'
import type { QueueStore } from '../store/queue-store.js'
import type { RunLedger } from '../store/run-ledger.js'
import type { StaleGuard } from '../store/run-path-statements.js'
import type { RunStore } from '../store/run-store.js'
import type { SessionStore } from '../store/session-store.js'
import type { AdmissionLimits } from './admission-limits.js'
import type { QueueDrain } from './queue-drain.js'
import type { SessionActor } from './session-actor.js'
import type { SessionActors } from './session-actors.js'
import type { SessionLeases } from './session-leases.js'

export interface QueueRecoveryDeps {
  /** Who drains which session: only a session's owner ends its runs. */
  ownership: SessionLeases
  /** Reaping and taking sessions over wait while the database is not steady (their holders renew first). */
  database: DatabaseLink
  /** The session rows (their leases). */
  sessionRows: SessionStore
  runs: RunStore
  ledger: RunLedger
  entries: QueueStore
  events: EventStore
  actors: SessionActors
  bus: SessionEventBus
  admission: AdmissionLimits
  drain: QueueDrain
  logger: Logger
  metrics: Metrics
  times: DurabilityTimes
  /** Budget reservations whose entry ended unsettled (its instance died, or it never ran) are settled by the reaper. */
  budgets: BudgetLedger
}

const ENDS = {
  INTERRUPTED: 'interrupted by a server restart',
  STALE: 'its heartbeat stopped (its server died or hung), so the reaper ended it',
} as const

/**
 * What crashed processes leave behind (docs/architecture.md, Durability). At start an instance takes back the sessions
 * its id held before it stopped: what ran in them died with it, so those runs end INTERRUPTED at
 * once. A session another instance held is taken over when its lease lapses: its live runs end
 * STALE once their heartbeat is stale. Either way the entries are reconciled with their runs and
 * the queued ones resume in order (scheduled ones keep their fire time). While running, the
 * reaper ends runs whose heartbeat is stale (a run with a model call open gets a bounded grace)
 * and takes over sessions nobody holds. An end is one conditional transaction: two reapers never
 * both end a run, and an owner that loses stops its run.
 */
export class QueueRecovery {
  private timer: NodeJS.Timeout | null = null
  private reaping: Promise<void> | null = null

  constructor(private readonly deps: QueueRecoveryDeps) {}

  /** At start: this instance's own sessions from before (their runs INTERRUPTED), and those nobody holds. */
  async takeBack(): Promise<void> {
    const { ownership, runs, sessionRows } = this.deps
    for (const { tenantId, id, leaseOwner } of await sessionRows.orphaned(new Date(), { heldBy: ownership.instanceId })) {
      if (!(await ownership.claim(tenantId, id)).mine) continue
      if (leaseOwner === ownership.instanceId) {
        const interrupted = (await runs.unfinished({ tenantId, sessionId: id })).filter((run) => run.status !== 'REQUIRES_ACTION')
        // ended before the session's actor loads, so its queue resumes past them
        const stream = interrupted.length > 0 ? await this.deps.bus.open(tenantId, id) : null
        for (const run of interrupted) await this.end(run, 'INTERRUPTED', null, stream)
        // their ends are written: the actor's own stream numbers right after them
        await stream?.handOff()
      }
      await this.deps.actors.get(tenantId, id)
    }
  }

  /**
   * When this instance takes a session over (at its first use here, or from the reaper): the
   * previous owner lost its lease (it died, or stopped renewing), so its live runs are ended
   * STALE, a run it left waiting for tool results goes on waiting here, and the prompts it had
   * admitted resume here in order.
   */
  async adopt(actor: SessionActor): Promise<void> {
    const { tenantId, sessionId } = actor
    const guard = this.staleGuard()
    const waiting = new Map<string, RunRecord>()
    for (const run of await this.deps.runs.unfinished({ tenantId, sessionId })) {
      if (run.status === 'REQUIRES_ACTION') waiting.set(run.id, run)
      else if (!(await this.end(run, 'STALE', guard, actor.stream))) actor.hold(run.id) // within its in-flight grace: the reaper ends it
    }
    const open = await this.deps.entries.forSession(tenantId, sessionId, false)
    for (const entry of open) {
      if (entry.status !== 'STARTING' && entry.status !== 'RUNNING') continue
      const run = entry.runId === null ? undefined : waiting.get(entry.runId)
      if (run && actor.status === 'IDLE') this.deps.drain.resume(actor, entry, run)
      else {
        // a second run in the session's way (it never should be): the waiting one ends too
        if (run) await this.end(run, 'STALE', null, actor.stream)
        await this.reconcile(entry)
      }
    }
    this.resume(
      actor,
      open.filter((e) => e.status === 'QUEUED' || e.status === 'SCHEDULED'),
    )
  }

  /** Safety net for records written before run ends were atomic: an entry takes its run's end. */
  private async reconcile(entry: QueueEntryRecord): Promise<void> {
    const run = entry.runId === null ? null : await this.deps.runs.find(entry.tenantId, entry.runId)
    if (run && isTerminalRun(run.status)) endEntry(entry, run, entry.unappliedSteerIds)
    else {
      advanceEntry(entry, 'FAILED')
      Object.assign(entry, { finishedAt: new Date().toISOString(), error: { code: 'INTERNAL', message: ENDS.INTERRUPTED } })
    }
    await this.deps.entries.update(entry)
  }

  /** Waiting entries join their queue (scheduled ones keep their fire time), and it drains. */
  private resume(actor: SessionActor, waiting: QueueEntryRecord[]): void {
    for (const entry of waiting) {
      actor.outstanding.set(entry.queueId, entry)
      this.deps.admission.reserve(entry.requestBytes)
      if (entry.status === 'SCHEDULED') this.deps.drain.schedule(actor, entry, entry.fireAt ? Date.parse(entry.fireAt) - Date.now() : 0)
    }
    this.deps.drain.drain(actor)
  }

  /** Reaps now, then every `reapIntervalMs` until `stop`. */
  start(): void {
    void this.reap()
    this.timer = setInterval(() => void this.reap(), this.deps.times.reapIntervalMs)
    this.timer.unref()
  }

  /** Ends every run whose heartbeat is stale; one pass at a time. */
  reap(): Promise<void> {
    this.reaping ??= this.reapStale().finally(() => {
      this.reaping = null
    })
    return this.reaping
  }

  /** One pass: up to 100 stale runs (the next pass takes the rest), then orphaned sessions, then unsettled reservations. */
  private async reapStale(): Promise<void> {
    // after an outage, heartbeats and leases are stale because nobody could write them
    if (!this.deps.database.steady) return
    try {
      const guard = this.staleGuard()
      for (const run of await this.deps.runs.stale(guard.before, guard.inFlightBefore, 100)) {
        let actor: SessionActor | null = null
        if (run.sessionId !== null) {
          // only a session's owner numbers its events: another instance's session waits for its lease to lapse
          if (!(await this.deps.ownership.claim(run.tenantId, run.sessionId)).mine) continue
          // taking a session over adopts it: its live runs end and its queue goes on here
          actor = await this.deps.actors.get(run.tenantId, run.sessionId)
        }
        if ((await this.end(run, 'STALE', guard, actor?.stream ?? null)) && actor?.unhold(run.id)) this.deps.drain.drain(actor)
      }
      await this.adoptOrphans()
      await this.deps.budgets.sweep(guard.before)
    } catch (error) {
      this.deps.logger.error('could not reap stale runs', { error: (error as Error).message })
      this.deps.database.failed(error)
    }
  }

  /** Which runs count as stale now. */
  private staleGuard(): StaleGuard {
    const { staleMs, inFlightGraceMs } = this.deps.times
    const now = Date.now()
    return { before: new Date(now - staleMs), inFlightBefore: new Date(now - staleMs - inFlightGraceMs) }
  }

  /** Sessions whose owner's lease lapsed while prompts wait in them: take them over. */
  private async adoptOrphans(): Promise<void> {
    for (const { tenantId, id } of await this.deps.sessionRows.orphaned(new Date(), { take: 100 })) {
      if ((await this.deps.ownership.claim(tenantId, id)).mine) await this.deps.actors.get(tenantId, id)
    }
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
    await this.reaping
  }

  /** Ends a run its owner can no longer end: FAILED, its partial output kept, its entry failed, RUN_FINISHED published. */
  private async end(live: RunRecord, reason: keyof typeof ENDS, guard: StaleGuard | null, stream: SessionStream | null): Promise<boolean> {
    const run = { ...live }
    advanceRun(run, 'FAILED')
    Object.assign(run, {
      terminalReason: reason,
      errorCode: 'INTERNAL',
      errorMessage: ENDS[reason],
      finishedAt: new Date().toISOString(),
      output: await this.partialOutput(run),
    } satisfies Partial<RunRecord>)
    const stored = run.queueId && run.sessionId ? await this.deps.entries.find(run.tenantId, run.sessionId, run.queueId) : null
    const entry = stored && !isTerminalEntry(stored.status) ? endEntry(stored, run, stored.unappliedSteerIds) : null
    const write = (events: SessionEvent[], earlier: SessionEvent[] = []) =>
      this.deps.ledger.finish({ run, entry, messages: [], events, earlier }, guard)
    let ended: boolean
    if (stream) {
      const events: SessionEventData[] = [
        ...(entry ? [{ type: 'QUEUE_ENTRY' as const, kind: 'FINISHED' as const, entry: { ...entry } }] : []),
        { type: 'RUN_FINISHED', run },
      ]
      ended = await stream.commit(run.id, events, write)
    } else ended = await write([])
    if (ended) this.deps.metrics.runFinished(run)
    return ended
  }

  /** What the run had streamed of its answer's last attempt, from its written events. */
  private async partialOutput(run: RunRecord): Promise<string | null> {
    if (!run.sessionId) return run.output
    let attempt = 0
    let text = ''
    for (let after = 0; ; ) {
      const page = await this.deps.events.forRun(run.tenantId, run.id, after, 500)
      for (const event of page) {
        after = event.sequence
        if (event.type !== 'TOKEN_DELTA' || event.candidate !== null) continue
        if (event.attempt !== attempt) [attempt, text] = [event.attempt, '']
        text += event.text
      }
      if (page.length < 500) return text === '' ? run.output : text
    }
  }
}
