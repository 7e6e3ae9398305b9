import { randomUUID } from 'node:crypto'
import { InternalError, NotFoundError, SessionBusyError, SteerRejectedError } from '../domain/errors.js'
import { hashValue } from '../domain/hash.js'
import { advanceEntry } from '../domain/lifecycles.js'
import type { DurabilityTimes, QueueLimits } from '../domain/limits.js'
import type { Logger } from '../domain/logger.js'
import type { Metrics } from '../domain/metrics.js'
import { queueStatus } from '../domain/queue-order.js'
import type {
  AdmissionFacts,
  MessageRecord,
  QueueEntryRecord,
  QueueEntryView,
  RunRecord,
  RunRequest,
  SessionStatus,
  WhenBusy,
} from '../domain/records.js'
import type { SessionEventBus } from '../events/event-bus.js'
import type { RunSlots } from '../events/run-slots.js'
import { NOTHING_UNWRITTEN, type UnwrittenTail } from '../events/session-stream.js'
import type { AdmittedPrompt } from '../runner/prepare.js'
import type { RunExecutor } from '../runner/run-executor.js'
import { RunStop } from '../runner/run-stop.js'
import type { SubmittedResult } from '../runner/tool-rounds.js'
import type { BudgetLedger } from '../store/budget-ledger.js'
import type { DatabaseLink } from '../store/database-link.js'
import type { EventStore } from '../store/event-store.js'
import type { QueueStore } from '../store/queue-store.js'
import type { RunLedger } from '../store/run-ledger.js'
import type { RunStore } from '../store/run-store.js'
import type { SessionMemory } from '../store/session-memory.js'
import type { SessionStore } from '../store/session-store.js'
import { AdmissionLimits } from './admission-limits.js'
import { DebounceScheduler } from './debounce-scheduler.js'
import { QueueEntryWriter } from './entry-writer.js'
import { IdempotentAdmissions } from './idempotent-admissions.js'
import { QueueDrain } from './queue-drain.js'
import { QueueRecovery } from './queue-recovery.js'
import type { RunSettlement } from './run-settlement.js'
import type { ToolCallDecisions } from './run-supervisor.js'
import { RunSupervisor } from './run-supervisor.js'
import type { SessionActor } from './session-actor.js'
import { SessionActors } from './session-actors.js'
import type { NewLease, SessionLeases } from './session-leases.js'

export interface AdmitRequest {
  tenantId: string
  sessionId: string
  request: RunRequest
  /** The request resolved and rendered at admission; the run reuses it. */
  admitted: AdmittedPrompt
  /** What admission fixed (the prompt version) and who admitted it: kept with the entry, so a recovered one runs the same. */
  admission: AdmissionFacts
  whenBusy: WhenBusy
  schedule?: { key: string; debounceMs: number }
  /** A retry with the same key answers with the entry it first admitted. */
  idempotencyKey?: string | null
  /** The new entry's id, when admission named it first (its budget reservation); else a new UUID. */
  queueId?: string
}

export interface PromptQueueDeps {
  executor: RunExecutor
  bus: SessionEventBus
  entries: QueueStore
  runs: RunStore
  ledger: RunLedger
  events: EventStore
  sessions: SessionMemory
  limits: QueueLimits
  times: DurabilityTimes
  logger: Logger
  metrics: Metrics
  /** Which sessions this instance drains (their leases). */
  ownership: SessionLeases
  /** Whether the database answers: nothing is admitted while it does not, and nothing is taken over until it is steady. */
  database: DatabaseLink
  /** What time it is (ms since the epoch) where a time to live is judged. */
  clock: () => number
  sessionRows: SessionStore
  /** Ended entries' reservations and tokens. */
  settlement: RunSettlement
  /** Reservations nobody settled, swept with each reap. */
  budgets: BudgetLedger
  /** Run slots of keys with concurrentRuns. */
  slots: RunSlots
}

const now = () => new Date().toISOString()

/** What an idempotency key guards: what was asked, not what it was resolved to. */
const askedHash = ({ request, whenBusy, schedule }: AdmitRequest) => hashValue({ request, whenBusy, schedule: schedule ?? null })

/**
 * Every session's FIFO prompt queue. Sessions run independently; within one, strictly one entry
 * at a time. Admission is decided at once and nothing is half-written when it is refused. The
 * jobs live in their own modules: limits (AdmissionLimits), debounce timers (DebounceScheduler),
 * the drain loop (QueueDrain), live runs (RunSupervisor), recovery and take-over (QueueRecovery), leases (SessionLeases).
 */
export class PromptQueue {
  private readonly actors: SessionActors
  private readonly admission: AdmissionLimits
  private readonly writer: QueueEntryWriter
  private readonly supervisor: RunSupervisor
  private readonly drainer: QueueDrain
  private readonly idempotent: IdempotentAdmissions
  private readonly recovery: QueueRecovery
  private closed = false

  constructor(private readonly deps: PromptQueueDeps) {
    const { bus, entries, ledger, logger, runs, limits, executor } = deps
    this.actors = new SessionActors(bus, entries, deps.sessionRows, (actor) => this.recovery.adopt(actor))
    this.admission = new AdmissionLimits(limits)
    this.writer = new QueueEntryWriter({
      entries,
      ledger,
      logger,
      retainedTerminal: limits.retainedTerminalPerSession,
      settlement: deps.settlement,
    })
    this.supervisor = new RunSupervisor({ executor, writer: this.writer, admission: this.admission, runs })
    this.idempotent = new IdempotentAdmissions(entries, limits.idempotencyTtlMs, deps.clock)
    this.drainer = new QueueDrain({
      supervisor: this.supervisor,
      writer: this.writer,
      admission: this.admission,
      scheduler: new DebounceScheduler(),
      slots: deps.slots,
      logger,
    })
    this.recovery = new QueueRecovery({ ...deps, actors: this.actors, admission: this.admission, drain: this.drainer })
  }

  async admit(admission: AdmitRequest): Promise<QueueEntryView> {
    if (this.closed) throw new InternalError('the server is shutting down and admits no prompts')
    // an admission waits in its session's write chain: while the database is away, it would wait the outage out
    this.deps.database.requireUp()
    const { tenantId, sessionId, admitted, whenBusy, schedule } = admission
    // the key guards what was asked; the entry keeps what it was resolved to
    const asked = admission.request
    const request: RunRequest = { ...asked, admission: admission.admission }
    const actor = await this.actors.get(tenantId, sessionId)
    if (actor.closing) throw new NotFoundError('session', sessionId)
    const idempotencyKey = admission.idempotencyKey ?? null
    const idempotencyHash = idempotencyKey === null ? null : askedHash(admission)
    if (idempotencyKey !== null) {
      const earlier = await this.idempotent.existing(actor, idempotencyKey, idempotencyHash!)
      if (earlier) return actor.viewOf(earlier)
    }
    const busy = actor.busy
    if (busy && whenBusy === 'REJECT') throw new SessionBusyError(`session '${sessionId}' is busy; nothing was queued`)

    const replacing = schedule ? actor.scheduled(schedule.key) : undefined
    const requestBytes = Buffer.byteLength(JSON.stringify(request))
    this.admission.check(actor, requestBytes - (replacing?.requestBytes ?? 0), replacing ? 0 : 1)

    const fireAt = schedule ? new Date(Date.now() + schedule.debounceMs).toISOString() : null
    if (replacing && schedule) return this.reschedule(actor, replacing, { request, requestBytes, fireAt }, admitted, schedule.debounceMs)

    const supersede = busy && (whenBusy === 'INTERRUPT' || whenBusy === 'ROLLBACK') && !schedule
    const entry: QueueEntryRecord = {
      queueId: admission.queueId ?? randomUUID(),
      tenantId,
      sessionId,
      queueSequence: actor.nextQueueSequence++,
      priority: supersede ? Math.max(0, ...actor.queued().map((e) => e.priority)) + 1 : 0,
      status: schedule ? 'SCHEDULED' : 'QUEUED',
      request,
      requestBytes,
      scheduleKey: schedule?.key ?? null,
      fireAt,
      runId: null,
      error: null,
      unappliedSteerIds: [],
      idempotencyKey,
      idempotencyHash,
      queuedAt: now(),
      startedAt: null,
      finishedAt: null,
    }
    const won = await this.insert(actor, entry, admitted)
    if (won !== entry) return actor.viewOf(won)
    if (schedule) this.drainer.schedule(actor, entry, schedule.debounceMs)
    if (supersede && actor.active) this.supervisor.supersede(actor.active, whenBusy === 'INTERRUPT')
    this.drainer.drain(actor)
    return actor.viewOf(entry)
  }

  /** The entry an earlier admission with the same idempotency key made, or null. */
  async earlier(admission: AdmitRequest): Promise<QueueEntryView | null> {
    if (!admission.idempotencyKey) return null
    const actor = await this.actors.get(admission.tenantId, admission.sessionId)
    const found = await this.idempotent.existing(actor, admission.idempotencyKey, askedHash(admission))
    return found && actor.viewOf(found)
  }

  /** Re-scheduling the same key before it fires replaces the prompt and restarts the debounce. */
  private async reschedule(
    actor: SessionActor,
    replacing: QueueEntryRecord,
    changes: Pick<QueueEntryRecord, 'request' | 'requestBytes' | 'fireAt'>,
    admitted: AdmittedPrompt,
    debounceMs: number,
  ): Promise<QueueEntryView> {
    this.admission.reserve(changes.requestBytes - replacing.requestBytes, 0)
    Object.assign(replacing, changes)
    actor.admitted.set(replacing.queueId, admitted)
    this.drainer.schedule(actor, replacing, debounceMs)
    await this.writer.write(actor, replacing)
    this.writer.publish(actor, 'QUEUED', replacing)
    return actor.viewOf(replacing)
  }

  /**
   * Counts a new entry against the limits at once and inserts it; it starts only once its row
   * exists. Answers the entry, or the one a concurrent admission with the same idempotency key
   * inserted first (the store's unique index decides); any other failure leaves nothing counted.
   */
  private async insert(actor: SessionActor, entry: QueueEntryRecord, admitted: AdmittedPrompt): Promise<QueueEntryRecord> {
    // reserved before the insert so concurrent admissions cannot both squeeze past a limit
    actor.outstanding.set(entry.queueId, entry)
    actor.admitted.set(entry.queueId, admitted)
    this.admission.reserve(entry.requestBytes)
    actor.inserting.add(entry.queueId)
    try {
      await this.writer.admit(actor, entry)
      return entry
    } catch (error) {
      this.deps.database.failed(error)
      actor.outstanding.delete(entry.queueId)
      actor.admitted.delete(entry.queueId)
      actor.journals.delete(entry.queueId)
      this.admission.release(entry.requestBytes)
      this.drainer.drain(actor)
      const { idempotencyKey, idempotencyHash } = entry
      const winner = idempotencyKey === null ? null : await this.idempotent.existing(actor, idempotencyKey, idempotencyHash!)
      if (winner) return winner
      throw error
    } finally {
      actor.inserting.delete(entry.queueId)
    }
  }

  /** Cancels a queued or scheduled entry, or aborts a running one. */
  async cancel(tenantId: string, sessionId: string, queueId: string): Promise<{ cancelled: boolean; entry: QueueEntryRecord }> {
    const actor = await this.actors.get(tenantId, sessionId)
    const entry = actor.outstanding.get(queueId)
    if (!entry) {
      // not outstanding: its end was written before it left
      const stored = await this.deps.entries.find(tenantId, sessionId, queueId)
      if (!stored) throw new NotFoundError('queue entry', queueId)
      return { cancelled: false, entry: stored }
    }
    if (entry.status === 'QUEUED' || entry.status === 'SCHEDULED') {
      this.drainer.unschedule(entry.queueId)
      actor.admitted.delete(queueId)
      this.admission.release(entry.requestBytes)
      advanceEntry(entry, 'CANCELLED')
      Object.assign(entry, {
        finishedAt: now(),
        error: { code: 'CANCELLED', message: 'cancelled before it ran' },
      } satisfies Partial<QueueEntryRecord>)
      await this.writer.finish(actor, entry)
      this.supervisor.ended(queueId)
      return { cancelled: true, entry: { ...entry } }
    }
    const active = actor.active
    if (!active || active.entry !== entry) return { cancelled: false, entry: { ...entry } }
    return { cancelled: await this.supervisor.cancel(active), entry: { ...entry } }
  }

  async cancelScheduled(tenantId: string, sessionId: string, scheduleKey: string): Promise<boolean> {
    const actor = await this.actors.get(tenantId, sessionId)
    const entry = actor.scheduled(scheduleKey)
    if (!entry) return false
    return (await this.cancel(tenantId, sessionId, entry.queueId)).cancelled
  }

  abortRun(tenantId: string, runId: string, reason: string | null): Promise<{ aborted: boolean; run: RunRecord }> {
    return this.supervisor.abort(tenantId, runId, reason)
  }

  /** Tool results for a run of a session held here that waits for them; resolves with the run once they are durable. */
  submitToolResults(tenantId: string, runId: string, results: SubmittedResult[], idempotencyKey: string | null): Promise<RunRecord> {
    return this.supervisor.submitToolResults(tenantId, runId, results, idempotencyKey)
  }

  /** Approvals and declines for a run of a session held here; resolves with the run once they are durable. */
  decideToolCalls(tenantId: string, runId: string, decision: ToolCallDecisions): Promise<RunRecord> {
    return this.supervisor.decideToolCalls(tenantId, runId, decision)
  }

  /** Accepts a steer for the running entry; it is applied at the run's next token boundary. */
  async steer(tenantId: string, sessionId: string, queueId: string, steerId: string, text: string): Promise<{ runId: string }> {
    const actor = await this.actors.get(tenantId, sessionId)
    if (actor.active?.entry.queueId !== queueId) {
      if (!actor.outstanding.has(queueId) && !(await this.deps.entries.find(tenantId, sessionId, queueId))) {
        throw new NotFoundError('queue entry', queueId)
      }
      throw new SteerRejectedError(`queue entry '${queueId}' is not running`, 'NOT_RUNNING')
    }
    const { runId } = this.supervisor.steer(actor, queueId, steerId, text)
    actor.stream.publish(runId, { type: 'STEER_ACCEPTED', steerId, queueId })
    return { runId }
  }

  /** Resolves when the entry is terminal, or after `timeoutMs`. */
  waitForEntry(queueId: string, timeoutMs: number): Promise<void> {
    return this.supervisor.waitForEntry(queueId, timeoutMs)
  }

  /** Outstanding entries of a session with their position (0 = running, 1 = next, …). */
  async outstanding(tenantId: string, sessionId: string): Promise<QueueEntryView[]> {
    return (await this.actors.get(tenantId, sessionId)).view()
  }

  /** An entry as it is now: live while outstanding, else as stored (its end was written before it left). */
  async entry(tenantId: string, sessionId: string, queueId: string): Promise<QueueEntryView | null> {
    const actor = await this.actors.get(tenantId, sessionId)
    const live = actor.outstanding.get(queueId)
    if (live) return actor.viewOf(live)
    const stored = await this.deps.entries.find(tenantId, sessionId, queueId)
    return stored && { ...stored, position: null }
  }

  /** A run as it is now: live while it runs, else as stored (its end was written before it left). */
  async run(tenantId: string, runId: string): Promise<RunRecord | null> {
    return this.supervisor.liveRun(tenantId, runId) ?? this.deps.runs.find(tenantId, runId)
  }

  isRunning(runId: string): boolean {
    return this.supervisor.isRunning(runId)
  }

  async status(tenantId: string, sessionId: string): Promise<SessionStatus> {
    const actor = await this.actors.peek(tenantId, sessionId)
    return actor ? queueStatus(actor.busy, actor.outstanding.values()) : 'IDLE'
  }

  /** Entries queued, scheduled or running in the sessions this process runs. */
  get depth(): number {
    return this.actors.outstanding
  }

  /**
   * The sequence of the session's last event subscribers have been given: `afterSequence` for a
   * stream that starts from now and can still resume. From the store while its actor is not
   * loaded (everything it published is written by then).
   */
  async lastSequence(tenantId: string, sessionId: string): Promise<number> {
    const actor = this.actors.current(tenantId, sessionId)
    return actor ? actor.stream.lastDelivered : this.deps.events.maxSequence(tenantId, sessionId)
  }

  /** The events of the session delivered after `afterSequence` and not written yet (none while its actor is not loaded). */
  unwrittenTail(tenantId: string, sessionId: string, afterSequence: number): UnwrittenTail {
    return this.actors.current(tenantId, sessionId)?.stream.unwrittenAfter(afterSequence) ?? NOTHING_UNWRITTEN
  }

  /** The session's conversation: its actor's while loaded, else as stored. */
  messages(tenantId: string, sessionId: string): Promise<MessageRecord[]> {
    const actor = this.actors.current(tenantId, sessionId)
    return actor ? actor.history.messages() : this.deps.sessionRows.messages(tenantId, sessionId)
  }

  /** Cancels the whole queue of a session (running entry included) before it is deleted. */
  async clearSession(tenantId: string, sessionId: string): Promise<void> {
    const actor = await this.actors.get(tenantId, sessionId)
    for (const entry of [...actor.outstanding.values()])
      if (entry !== actor.active?.entry) await this.cancel(tenantId, sessionId, entry.queueId)
    if (actor.active) await this.cancel(tenantId, sessionId, actor.active.entry.queueId)
    actor.close()
    await this.deps.bus.flush() // the events published before the cancels are written before the log is deleted
  }

  /** Another instance took the session over: stop its run here (its new owner ends it) and forget it. */
  async lose(tenantId: string, sessionId: string): Promise<void> {
    // an idle queue is forgotten before the first await: a claim right after loads it afresh
    const actor = this.actors.current(tenantId, sessionId) ?? (await this.actors.peek(tenantId, sessionId)?.catch(() => null))
    if (actor?.idle) {
      // let go cleanly (its lease lapsed while idle): whoever loads it next numbers right after its last event
      actor.close()
      this.forget(tenantId, sessionId)
      return this.handOff(actor)
    }
    if (actor) {
      actor.close()
      for (const entry of actor.outstanding.values()) {
        if (entry === actor.active?.entry) continue
        this.drainer.unschedule(entry.queueId)
        this.admission.release(entry.requestBytes)
      }
      actor.active?.handle.stop(new RunStop('SHUTDOWN', 'the session moved to another instance'))
      if (actor.active) await actor.active.done
    }
    this.forget(tenantId, sessionId)
  }

  /** The event sequence ceiling a new session's row reserves, so `created` needs no read. */
  get firstSequenceCeiling(): number {
    return this.deps.bus.firstCeiling
  }

  /** The lease a session created here is written with. */
  newLease(): NewLease {
    return this.deps.ownership.newLease()
  }

  /** A session this process just created under `lease`, with its first history: held here, its actor starts empty, unread. */
  created(tenantId: string, sessionId: string, lease: NewLease, history: MessageRecord[]): void {
    this.deps.ownership.created(tenantId, sessionId, lease)
    this.actors.created(tenantId, sessionId, history)
  }

  /** Whether this instance holds the session now: its records in memory are the session's truth. */
  holds(tenantId: string, sessionId: string): boolean {
    return this.deps.ownership.holds(tenantId, sessionId)
  }

  /** Whether the session has anything outstanding, running or unwritten (its lease is renewed). */
  hasWork(tenantId: string, sessionId: string): boolean {
    return this.actors.hasWork(tenantId, sessionId)
  }

  /** Forgets a deleted (or lost) session. */
  forget(tenantId: string, sessionId: string): void {
    this.actors.forget(tenantId, sessionId)
    this.deps.sessions.forget(tenantId, sessionId)
  }

  /**
   * At start: takes back the sessions this instance's id held before it stopped (ending what ran
   * in them) and those nobody holds, resuming their queues; then reaps. Sessions another instance
   * held are taken over when its lease lapses.
   */
  async recover(): Promise<void> {
    await this.recovery.takeBack()
    this.recovery.start()
  }

  /** Gives every loaded session's unused sequence numbers back (draining, after the last events are written). */
  async handOffAll(): Promise<void> {
    await Promise.all(this.actors.all().map((actor) => this.handOff(actor)))
  }

  private handOff(actor: SessionActor): Promise<void> {
    return actor.stream.handOff().catch((error: unknown) => {
      // the next owner resumes above the reserved block: a gap, nothing lost
      this.deps.logger.warn('could not give back unused event sequences', { sessionId: actor.sessionId, error: (error as Error).message })
    })
  }

  /**
   * Stops admitting, gives running entries `graceMs` to finish, aborts the rest, and waits for
   * their records. Queued entries stay queued in the store and resume at the next start.
   */
  async close(graceMs: number): Promise<void> {
    this.closed = true
    this.drainer.stop()
    await this.recovery.stop()
    await this.supervisor.close(graceMs)
    await this.deps.settlement.flush()
  }
}
