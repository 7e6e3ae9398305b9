import { randomUUID } from 'node:crypto'
import { InternalError, NotFoundError, QueueFullError, SessionBusyError, SteerRejectedError } from '../domain/errors.js'
import type { QueueEntryEventKind } from '../domain/events.js'
import type { QueueLimits } from '../domain/limits.js'
import type { Logger } from '../domain/logger.js'
import type { QueueEntryRecord, QueueEntryView, RunRecord, RunRequest, SessionStatus, WhenBusy } from '../domain/records.js'
import type { SessionEventBus } from '../events/event-bus.js'
import { type RunExecutor, type RunResult, RunStop } from '../runner/run-executor.js'
import { SteerInbox } from '../runner/steer-inbox.js'
import type { QueueStore } from '../store/queue-store.js'
import type { RunStore } from '../store/run-store.js'
import type { SaveQueue } from '../store/save-queue.js'
import type { SessionMemory } from '../store/session-memory.js'

interface ActiveRun {
  entry: QueueEntryRecord
  controller: AbortController
  steers: SteerInbox
  run: RunRecord | null
  /** Past the point of no return: the result is being written. */
  finalizing: boolean
  /** When stopped: INTERRUPT keeps its turn in the history (the answer marked interrupted). */
  historyOnStop: 'INTERRUPT' | 'NONE'
  done: Promise<void>
}

/** The in-memory side of one session's queue; the store holds the durable side. */
class SessionQueue {
  /** Queued, scheduled and running entries. */
  readonly outstanding = new Map<string, QueueEntryRecord>()
  readonly timers = new Map<string, NodeJS.Timeout>()
  active: ActiveRun | null = null
  deleting = false
  /** Terminal entries in the store; unknown (null) until the first prune counts them. */
  terminalCount: number | null = null
  constructor(
    readonly tenantId: string,
    readonly sessionId: string,
    public nextQueueSequence: number,
  ) {}

  /** Queued entries in the order they will run: higher priority first, then admission order. */
  queued(): QueueEntryRecord[] {
    return [...this.outstanding.values()]
      .filter((e) => e.status === 'QUEUED')
      .sort((a, b) => b.priority - a.priority || a.queueSequence - b.queueSequence)
  }

  scheduled(key: string): QueueEntryRecord | undefined {
    for (const entry of this.outstanding.values()) if (entry.status === 'SCHEDULED' && entry.scheduleKey === key) return entry
    return undefined
  }

  usage(): { count: number; bytes: number } {
    let count = 0
    let bytes = 0
    for (const entry of this.outstanding.values()) {
      count++
      bytes += entry.requestBytes
    }
    if (this.active) {
      count += this.active.steers.pendingCount
      bytes += this.active.steers.pendingBytes
    }
    return { count, bytes }
  }
}

export interface AdmitRequest {
  tenantId: string
  sessionId: string
  request: RunRequest
  whenBusy: WhenBusy
  schedule?: { key: string; debounceMs: number }
}

export interface PromptQueueDeps {
  executor: RunExecutor
  bus: SessionEventBus
  entries: QueueStore
  runs: RunStore
  sessions: SessionMemory
  saves: SaveQueue
  limits: QueueLimits
  logger: Logger
}

const now = () => new Date().toISOString()
const sessionKey = (tenantId: string, sessionId: string) => `${tenantId}/${sessionId}`

/**
 * Every session's FIFO prompt queue. Sessions run independently; within one, strictly one entry
 * at a time. Admission is decided at once and nothing is half-written when it is refused.
 */
export class PromptQueue {
  private readonly sessions = new Map<string, Promise<SessionQueue>>()
  private readonly activeRuns = new Map<string, ActiveRun>()
  private readonly waiters = new Map<string, Set<() => void>>()
  private pending = { count: 0, bytes: 0 }
  private closed = false

  constructor(private readonly deps: PromptQueueDeps) {}

  /** The session's queue, loaded once (its event stream opened, its numbering restored). */
  private session(tenantId: string, sessionId: string): Promise<SessionQueue> {
    const key = sessionKey(tenantId, sessionId)
    let loading = this.sessions.get(key)
    if (!loading) {
      loading = (async () => {
        await this.deps.bus.open(tenantId, sessionId)
        return new SessionQueue(tenantId, sessionId, (await this.deps.entries.maxQueueSequence(tenantId, sessionId)) + 1)
      })()
      this.sessions.set(key, loading)
      loading.catch(() => this.sessions.delete(key))
    }
    return loading
  }

  private publishEntry(queue: SessionQueue, kind: QueueEntryEventKind, entry: QueueEntryRecord): void {
    this.deps.bus.publish(queue.tenantId, queue.sessionId, entry.runId, { type: 'QUEUE_ENTRY', kind, entry: { ...entry } })
  }

  private saveEntry(entry: QueueEntryRecord): void {
    const snapshot = { ...entry }
    this.deps.saves.enqueue(entry.queueId, () => this.deps.entries.update(snapshot), 'row')
  }

  async admit(admission: AdmitRequest): Promise<QueueEntryView> {
    if (this.closed) throw new InternalError('the server is shutting down and admits no prompts')
    const { tenantId, sessionId, request, whenBusy, schedule } = admission
    const queue = await this.session(tenantId, sessionId)
    if (queue.deleting) throw new NotFoundError('session', sessionId)
    const busy = queue.active !== null || queue.queued().length > 0
    if (busy && whenBusy === 'REJECT') throw new SessionBusyError(`session '${sessionId}' is busy; nothing was queued`)

    const replacing = schedule ? queue.scheduled(schedule.key) : undefined
    const requestBytes = Buffer.byteLength(JSON.stringify(request))
    this.checkLimits(queue, requestBytes - (replacing?.requestBytes ?? 0), replacing ? 0 : 1)

    const fireAt = schedule ? new Date(Date.now() + schedule.debounceMs).toISOString() : null
    if (replacing) {
      // re-scheduling the same key before it fires replaces the prompt and restarts the debounce
      this.pending.bytes += requestBytes - replacing.requestBytes
      Object.assign(replacing, { request, requestBytes, fireAt })
      this.saveEntry(replacing)
      this.arm(queue, replacing, schedule!.debounceMs)
      this.publishEntry(queue, 'QUEUED', replacing)
      return this.viewOf(queue, replacing)
    }

    const supersede = busy && (whenBusy === 'INTERRUPT' || whenBusy === 'ROLLBACK') && !schedule
    const entry: QueueEntryRecord = {
      queueId: randomUUID(),
      tenantId,
      sessionId,
      queueSequence: queue.nextQueueSequence++,
      priority: supersede ? Math.max(0, ...queue.queued().map((e) => e.priority)) + 1 : 0,
      status: schedule ? 'SCHEDULED' : 'QUEUED',
      request,
      requestBytes,
      scheduleKey: schedule?.key ?? null,
      fireAt,
      runId: null,
      error: null,
      unappliedSteerIds: [],
      queuedAt: now(),
      startedAt: null,
      finishedAt: null,
    }
    // reserve before the insert so concurrent admissions cannot both squeeze past a limit
    queue.outstanding.set(entry.queueId, entry)
    this.pending.count++
    this.pending.bytes += requestBytes
    try {
      await this.deps.entries.insert(entry)
    } catch (error) {
      queue.outstanding.delete(entry.queueId)
      this.pending.count--
      this.pending.bytes -= requestBytes
      throw error
    }
    this.publishEntry(queue, 'QUEUED', entry)
    if (schedule) this.arm(queue, entry, schedule.debounceMs)
    if (supersede && queue.active && !queue.active.finalizing) {
      const reason = whenBusy === 'INTERRUPT' ? 'interrupted by a newer prompt' : 'rolled back for a newer prompt'
      this.stop(queue.active, new RunStop('SUPERSEDED', reason), whenBusy === 'INTERRUPT' ? 'INTERRUPT' : 'NONE')
    }
    this.drain(queue)
    return this.viewOf(queue, entry)
  }

  private checkLimits(queue: SessionQueue, addedBytes: number, addedCount: number): void {
    const { limits } = this.deps
    const session = queue.usage()
    const refuse = (limit: string, what: string) => {
      throw new QueueFullError(`${what}; nothing was queued`, limit)
    }
    if (session.count + addedCount > limits.maxOutstandingPerSession)
      refuse(
        'maxOutstandingPerSession',
        `session '${queue.sessionId}' already has ${session.count} outstanding prompts and steers (limit ${limits.maxOutstandingPerSession})`,
      )
    if (session.bytes + addedBytes > limits.maxOutstandingBytesPerSession)
      refuse(
        'maxOutstandingBytesPerSession',
        `session '${queue.sessionId}' would hold more than ${limits.maxOutstandingBytesPerSession} outstanding bytes`,
      )
    if (this.pending.count + addedCount > limits.maxPendingAdmissions)
      refuse('maxPendingAdmissions', `the server already has ${this.pending.count} prompts waiting (limit ${limits.maxPendingAdmissions})`)
    if (this.pending.bytes + addedBytes > limits.maxPendingBytes)
      refuse('maxPendingBytes', `the server would hold more than ${limits.maxPendingBytes} waiting bytes`)
  }

  /** (Re)starts a scheduled entry's debounce. */
  private arm(queue: SessionQueue, entry: QueueEntryRecord, delayMs: number): void {
    clearTimeout(queue.timers.get(entry.queueId))
    const timer = setTimeout(
      () => {
        queue.timers.delete(entry.queueId)
        if (entry.status !== 'SCHEDULED') return
        entry.status = 'QUEUED'
        this.saveEntry(entry)
        this.publishEntry(queue, 'QUEUED', entry)
        this.drain(queue)
      },
      Math.max(0, delayMs),
    )
    queue.timers.set(entry.queueId, timer)
  }

  /** Starts the next queued entry unless one is running. */
  private drain(queue: SessionQueue): void {
    if (queue.active || queue.deleting || this.closed) return
    const next = queue.queued()[0]
    if (next) void this.runEntry(queue, next)
  }

  private async runEntry(queue: SessionQueue, entry: QueueEntryRecord): Promise<void> {
    let finished!: () => void
    const active: ActiveRun = {
      entry,
      controller: new AbortController(),
      steers: new SteerInbox(),
      run: null,
      finalizing: false,
      historyOnStop: 'NONE',
      done: new Promise<void>((resolve) => (finished = resolve)),
    }
    queue.active = active
    this.pending.count--
    this.pending.bytes -= entry.requestBytes
    let keepHistory: 'ALL' | 'INTERRUPT' | 'NONE' = 'NONE'
    try {
      Object.assign(entry, { status: 'STARTING', startedAt: now() } satisfies Partial<QueueEntryRecord>)
      this.saveEntry(entry)
      this.publishEntry(queue, 'STARTED', entry)
      const result: RunResult = await this.deps.executor.execute({
        entry,
        signal: active.controller.signal,
        steers: active.steers,
        onRunCreated: (run) => {
          active.run = run
          entry.runId = run.id
          this.saveEntry(entry) // replaces the STARTING write queued just before, now with its run
          this.activeRuns.set(run.id, active)
        },
        onGenerating: () => {
          // not written: STARTING already marks it mid-run in the store, RUNNING lives in memory
          entry.status = 'RUNNING'
          this.publishEntry(queue, 'RUNNING', entry)
        },
      })
      active.finalizing = true
      const { run, transcript } = result
      keepHistory = run.status === 'COMPLETED' ? 'ALL' : active.historyOnStop
      const session = await this.deps.sessions.find(queue.tenantId, queue.sessionId)
      if (keepHistory !== 'NONE' && transcript.length > 0 && !queue.deleting && session?.keepHistory !== false) {
        const interruptedLast = keepHistory === 'INTERRUPT' && transcript.at(-1)!.role === 'assistant'
        const appended = await this.deps.sessions.append(
          queue.tenantId,
          queue.sessionId,
          transcript.map((m, i) => ({ ...m, runId: run.id, interrupted: interruptedLast && i === transcript.length - 1 })),
        )
        for (const message of appended) this.deps.bus.publish(queue.tenantId, queue.sessionId, run.id, { type: 'MESSAGE_CREATED', message })
      }
      this.deps.executor.finalize(run)
      Object.assign(entry, {
        status: run.status === 'COMPLETED' ? 'COMPLETED' : run.status === 'FAILED' ? 'FAILED' : 'CANCELLED',
        finishedAt: now(),
        error: run.errorCode ? { code: run.errorCode, message: run.errorMessage ?? '' } : null,
        unappliedSteerIds: active.steers.unapplied(),
      } satisfies Partial<QueueEntryRecord>)
    } catch (error) {
      // only the history write can get here; the run itself never throws
      this.deps.logger.error('could not finish a queue entry', { queueId: entry.queueId, error: (error as Error).message })
      if (active.run) this.deps.executor.finalize(active.run)
      Object.assign(entry, {
        status: 'FAILED',
        finishedAt: now(),
        error: { code: 'INTERNAL', message: 'the run could not be recorded' },
      } satisfies Partial<QueueEntryRecord>)
    } finally {
      this.finishEntry(queue, entry)
      if (active.run) this.activeRuns.delete(active.run.id)
      queue.active = null
      finished()
      this.drain(queue)
    }
  }

  /** Writes a terminal entry, tells subscribers and waiters, and prunes old terminal entries. */
  private finishEntry(queue: SessionQueue, entry: QueueEntryRecord): void {
    queue.outstanding.delete(entry.queueId)
    this.saveEntry(entry)
    const { tenantId, sessionId } = queue
    const keep = this.deps.limits.retainedTerminalPerSession
    // prune only when the count may be well over the limit (a tenth of slack), not once per run
    if (queue.terminalCount === null || ++queue.terminalCount > keep + Math.max(1, Math.ceil(keep / 10))) {
      this.deps.saves.enqueue(entry.queueId, async () => {
        queue.terminalCount = await this.deps.entries.pruneTerminal(tenantId, sessionId, keep)
      })
    }
    if (!queue.deleting) this.publishEntry(queue, 'FINISHED', entry)
    for (const wake of this.waiters.get(entry.queueId) ?? []) wake()
    this.waiters.delete(entry.queueId)
  }

  private stop(active: ActiveRun, stop: RunStop, historyOnStop: ActiveRun['historyOnStop'] = 'NONE'): void {
    active.historyOnStop = historyOnStop
    active.controller.abort(stop)
  }

  /** Cancels a queued or scheduled entry, or aborts a running one. */
  async cancel(tenantId: string, sessionId: string, queueId: string): Promise<{ cancelled: boolean; entry: QueueEntryRecord }> {
    const queue = await this.session(tenantId, sessionId)
    const entry = queue.outstanding.get(queueId)
    if (!entry) {
      await this.deps.saves.settled(queueId)
      const stored = await this.deps.entries.find(tenantId, sessionId, queueId)
      if (!stored) throw new NotFoundError('queue entry', queueId)
      return { cancelled: false, entry: stored }
    }
    if (entry.status === 'QUEUED' || entry.status === 'SCHEDULED') {
      clearTimeout(queue.timers.get(queueId))
      queue.timers.delete(queueId)
      this.pending.count--
      this.pending.bytes -= entry.requestBytes
      Object.assign(entry, {
        status: 'CANCELLED',
        finishedAt: now(),
        error: { code: 'CANCELLED', message: 'cancelled before it ran' },
      } satisfies Partial<QueueEntryRecord>)
      this.finishEntry(queue, entry)
      return { cancelled: true, entry: { ...entry } }
    }
    const active = queue.active
    if (!active || active.entry !== entry || active.finalizing) return { cancelled: false, entry: { ...entry } }
    this.stop(active, new RunStop('CANCELLED', 'cancelled while running'))
    await active.done
    await this.deps.saves.settled(queueId)
    return { cancelled: true, entry: { ...entry } }
  }

  async cancelScheduled(tenantId: string, sessionId: string, scheduleKey: string): Promise<boolean> {
    const queue = await this.session(tenantId, sessionId)
    const entry = queue.scheduled(scheduleKey)
    if (!entry) return false
    return (await this.cancel(tenantId, sessionId, entry.queueId)).cancelled
  }

  /**
   * Stops a run and returns its row once it is durably ABORTED. A run that already ended
   * answers `aborted: false` with its row (an abort receipt).
   */
  async abortRun(tenantId: string, runId: string, reason: string | null): Promise<{ aborted: boolean; run: RunRecord }> {
    const active = this.activeRuns.get(runId)
    if (active && active.entry.tenantId === tenantId && !active.finalizing) {
      this.stop(active, new RunStop('ABORTED', reason?.trim() || 'aborted by request'))
      await active.done
      await this.deps.saves.settled(runId)
      return { aborted: true, run: { ...active.run! } }
    }
    await this.deps.saves.settled(runId)
    const run = await this.deps.runs.find(tenantId, runId)
    if (!run) throw new NotFoundError('run', runId)
    return { aborted: false, run }
  }

  /** Accepts a steer for the running entry; it is applied at the run's next token boundary. */
  async steer(tenantId: string, sessionId: string, queueId: string, steerId: string, text: string): Promise<{ runId: string }> {
    const queue = await this.session(tenantId, sessionId)
    const active = queue.active
    if (!active || active.entry.queueId !== queueId) {
      if (!queue.outstanding.has(queueId) && !(await this.deps.entries.find(tenantId, sessionId, queueId)))
        throw new NotFoundError('queue entry', queueId)
      throw new SteerRejectedError(`queue entry '${queueId}' is not running`, 'NOT_RUNNING')
    }
    if (active.steers.has(steerId)) throw new SteerRejectedError(`steer '${steerId}' was already accepted for this run`, 'DUPLICATE')
    if (active.entry.status !== 'RUNNING' || active.finalizing || active.controller.signal.aborted) {
      throw new SteerRejectedError(`queue entry '${queueId}' is not running`, 'NOT_RUNNING')
    }
    this.checkLimits(queue, Buffer.byteLength(text), 1)
    active.steers.add({ steerId, text })
    const runId = active.run!.id
    this.deps.bus.publish(tenantId, sessionId, runId, { type: 'STEER_ACCEPTED', steerId, queueId })
    return { runId }
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

  /** Outstanding entries of a session with their position (0 = running, 1 = next, …). */
  async outstanding(tenantId: string, sessionId: string): Promise<QueueEntryView[]> {
    return this.view(await this.session(tenantId, sessionId))
  }

  private view(queue: SessionQueue): QueueEntryView[] {
    const running = queue.active ? [queue.active.entry] : []
    const inLine = [...running, ...queue.queued()]
    const position = new Map(inLine.map((e, i) => [e.queueId, running.length > 0 ? i : i + 1]))
    return [...queue.outstanding.values()]
      .sort((a, b) => a.queueSequence - b.queueSequence)
      .map((e) => ({ ...e, position: position.get(e.queueId) ?? null }))
  }

  private viewOf(queue: SessionQueue, entry: QueueEntryRecord): QueueEntryView {
    return this.view(queue).find((e) => e.queueId === entry.queueId) ?? { ...entry, position: null }
  }

  /** An entry as it is now: live while outstanding, else as stored once its writes have landed. */
  async entry(tenantId: string, sessionId: string, queueId: string): Promise<QueueEntryView | null> {
    const queue = await this.session(tenantId, sessionId)
    const live = queue.outstanding.get(queueId)
    if (live) return this.viewOf(queue, live)
    await this.deps.saves.settled(queueId)
    const stored = await this.deps.entries.find(tenantId, sessionId, queueId)
    return stored && { ...stored, position: null }
  }

  /** A run as it is now: live while it runs, else as stored once its writes have landed. */
  async run(tenantId: string, runId: string): Promise<RunRecord | null> {
    const live = this.activeRuns.get(runId)?.run
    if (live && live.tenantId === tenantId) return { ...live }
    await this.deps.saves.settled(runId)
    return this.deps.runs.find(tenantId, runId)
  }

  /** Resolves when every record write queued so far has landed. */
  settled(): Promise<void> {
    return this.deps.saves.flush()
  }

  isRunning(runId: string): boolean {
    return this.activeRuns.has(runId)
  }

  async status(tenantId: string, sessionId: string): Promise<SessionStatus> {
    const queue = await this.sessions.get(sessionKey(tenantId, sessionId))
    if (!queue) return 'IDLE'
    if (queue.active || queue.queued().length > 0) return 'RUNNING'
    return [...queue.outstanding.values()].some((e) => e.status === 'SCHEDULED') ? 'SCHEDULED' : 'IDLE'
  }

  /** Cancels the whole queue of a session (running entry included) before it is deleted. */
  async clearSession(tenantId: string, sessionId: string): Promise<void> {
    const queue = await this.session(tenantId, sessionId)
    for (const entry of [...queue.outstanding.values()])
      if (entry !== queue.active?.entry) await this.cancel(tenantId, sessionId, entry.queueId)
    if (queue.active) await this.cancel(tenantId, sessionId, queue.active.entry.queueId)
    queue.deleting = true
    await this.deps.saves.flush()
  }

  /** Forgets a deleted session. */
  forget(tenantId: string, sessionId: string): void {
    this.sessions.delete(sessionKey(tenantId, sessionId))
    this.deps.bus.forget(tenantId, sessionId)
    this.deps.sessions.forget(tenantId, sessionId)
  }

  /**
   * After a restart: runs and entries that were mid-run are FAILED (reason INTERRUPTED, their
   * lost events a visible gap), queued entries resume, scheduled ones are re-armed.
   */
  async recover(): Promise<void> {
    const message = 'interrupted by a server restart'
    for (const run of await this.deps.runs.unfinished()) {
      Object.assign(run, {
        status: 'FAILED',
        terminalReason: 'INTERRUPTED',
        errorCode: 'INTERNAL',
        errorMessage: message,
        finishedAt: now(),
      } satisfies Partial<RunRecord>)
      await this.deps.runs.update(run)
      if (run.sessionId && (await this.deps.sessions.find(run.tenantId, run.sessionId))) {
        await this.session(run.tenantId, run.sessionId)
        this.deps.bus.publish(run.tenantId, run.sessionId, run.id, { type: 'RUN_FINISHED', run })
      }
    }
    for (const entry of await this.deps.entries.withStatus(['STARTING', 'RUNNING'])) {
      const queue = await this.session(entry.tenantId, entry.sessionId)
      Object.assign(entry, {
        status: 'FAILED',
        finishedAt: now(),
        error: { code: 'INTERNAL', message },
      } satisfies Partial<QueueEntryRecord>)
      await this.deps.entries.update(entry)
      this.publishEntry(queue, 'FINISHED', entry)
    }
    const waiting = await this.deps.entries.withStatus(['QUEUED', 'SCHEDULED'])
    const queues = new Set<SessionQueue>()
    for (const entry of waiting) {
      const queue = await this.session(entry.tenantId, entry.sessionId)
      queue.outstanding.set(entry.queueId, entry)
      this.pending.count++
      this.pending.bytes += entry.requestBytes
      if (entry.status === 'SCHEDULED') this.arm(queue, entry, entry.fireAt ? Date.parse(entry.fireAt) - Date.now() : 0)
      queues.add(queue)
    }
    for (const queue of queues) this.drain(queue)
  }

  /**
   * Stops admitting, gives running entries `graceMs` to finish, aborts the rest, and waits for
   * their records. Queued entries stay queued in the store and resume at the next start.
   */
  async close(graceMs: number): Promise<void> {
    this.closed = true
    const queues = await Promise.all(this.sessions.values())
    for (const queue of queues) for (const timer of queue.timers.values()) clearTimeout(timer)
    const running = queues.flatMap((q) => (q.active ? [q.active] : []))
    let grace: NodeJS.Timeout | undefined
    await Promise.race([Promise.all(running.map((a) => a.done)), new Promise((resolve) => (grace = setTimeout(resolve, graceMs)))])
    clearTimeout(grace)
    for (const active of running) if (!active.finalizing) this.stop(active, new RunStop('SHUTDOWN', 'the server shut down during the run'))
    await Promise.all(running.map((a) => a.done))
  }
}
