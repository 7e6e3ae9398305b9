import { StorageFullError } from '../domain/errors.js'
import type { SessionEventData } from '../domain/events.js'
import { advanceRun } from '../domain/lifecycles.js'
import type { Logger } from '../domain/logger.js'
import type { Metrics } from '../domain/metrics.js'
import type { ChatMessage, MessageRecord, QueueEntryRecord, RunRecord, RunStatus, TerminalReason } from '../domain/records.js'
import { handsOver, type ToolRound } from '../domain/tool-rounds.js'
import { inSpan } from '../domain/tracing.js'
import type { SessionStream } from '../events/session-stream.js'
import type { DatabaseLink } from '../store/database-link.js'
import type { RunLedger } from '../store/run-ledger.js'
import type { RunStore } from '../store/run-store.js'
import type { SessionHistory } from '../store/session-history.js'
import { RecordJournal } from './record-journal.js'
import { endEntry, endedRecord, newRunRecord, noRoomEnding } from './run-records.js'

export interface RunRecorderDeps {
  runs: RunStore
  ledger: RunLedger
  /** The run's start, its wait for tool results and its end wait out a database outage through it. */
  database: DatabaseLink
  /** The sessions' records (whether one keeps its history). */
  sessions: { find(tenantId: string, id: string): Promise<{ keepHistory: boolean } | null> }
  logger: Logger
  metrics: Metrics
  /** How often a live run marks its row alive. */
  heartbeatMs: number
  /** A run that makes no progress (token, steer, repair) for this long is stopped. */
  noProgressMs: number
}

/** The session a run belongs to, as its actor keeps it. */
export interface RunSession {
  /** The entry's writes: the run's row is inserted by a claim of the entry queued there, after its earlier writes. */
  entryJournal: RecordJournal
  /** Where the run's events are numbered, delivered and written. */
  stream: SessionStream
  /** The conversation the run reads, and its turn joins once written. */
  history: SessionHistory
}

/**
 * What generation changes on a live run. Its status moves only through `advance` (the state
 * machine), its tool rounds through `requireAction` and `recordResults`, and its end through `finish`.
 */
export type RunAmendment = Partial<
  Omit<
    RunRecord,
    | 'id'
    | 'tenantId'
    | 'sessionId'
    | 'queueId'
    | 'status'
    | 'toolRounds'
    | 'heartbeatAt'
    | 'inFlightSince'
    | 'terminalReason'
    | 'errorCode'
    | 'errorMessage'
    | 'finishedAt'
  >
>

/** How a run ends, decided by generation and applied by `finish` once its history is written. */
export interface RunEnding {
  status: Extract<RunStatus, 'COMPLETED' | 'FAILED' | 'ABORTED'>
  terminalReason: TerminalReason
  errorCode: string | null
  errorMessage: string | null
  /** The messages the run adds to the conversation, its answer last. */
  transcript: ChatMessage[]
  /** ALL for a completed run; INTERRUPT keeps a superseded run's turn, its answer marked interrupted. */
  history: 'ALL' | 'INTERRUPT' | 'NONE'
  /** Steers accepted but never applied, kept on the entry. */
  unappliedSteerIds: string[]
}

/** Why a live run must stop on its own: a reaper ended its row, or it stopped making progress. */
export type Stall = 'STALE' | 'NO_PROGRESS'

const now = () => new Date().toISOString()

/**
 * The durable side of one run: its row (inserted with its entry's claim, updated through its
 * journal, so no write waits on the token path), its heartbeat and progress marks,
 * the marker of an open model call, its status moves through the run state machine, and its
 * end — row, entry, history turn, last events — written in one transaction.
 */
export class RunRecorder {
  /** The live record: changed here alone, by the methods below. */
  private readonly live: RunRecord
  /** Logs with the run's tenant, session, entry and run ids on every line. */
  readonly logger: Logger
  private readonly heartbeat: NodeJS.Timeout
  private readonly journal: RecordJournal
  private readonly onWriteError = (error: unknown) => {
    this.deps.database.failed(error)
    this.logger.error('a run write failed', { error: (error as Error).message })
  }
  private lastProgress = Date.now()
  /** While the run waits for tool results, it is not expected to make progress. */
  private awaitingResults = false
  private readonly waitingListeners: (() => void)[] = []
  private openCalls = 0
  /** The row as last written (JSON), so a save with nothing new costs no statement. */
  private written = ''

  constructor(
    private readonly deps: RunRecorderDeps,
    private readonly entry: QueueEntryRecord,
    private readonly session: RunSession,
    onStall: (stall: Stall) => void,
    /** A run resumed after a restart (waiting for tool results): its row exists, nothing is inserted. */
    resumed: RunRecord | null = null,
  ) {
    this.live = resumed ? { ...resumed, heartbeatAt: now() } : newRunRecord(entry)
    const { live: run } = this
    this.logger = deps.logger.child({ tenantId: run.tenantId, sessionId: run.sessionId, queueId: entry.queueId, runId: run.id })
    this.awaitingResults = run.status === 'REQUIRES_ACTION'
    // a resumed run's row exists: its writes only follow the entry's earlier ones
    this.journal = resumed
      ? new RecordJournal(
          this.onWriteError,
          session.entryJournal.write(async () => {}),
        )
      : this.claim(session.entryJournal)
    this.heartbeat = setInterval(() => {
      const at = new Date()
      run.heartbeatAt = at.toISOString()
      const progressed = new Date(this.lastProgress)
      this.journal
        .write(async () => {
          if (!(await deps.runs.heartbeat(run.id, at, progressed))) onStall('STALE')
        })
        .catch(this.onWriteError)
      if (!this.awaitingResults && at.getTime() - this.lastProgress > deps.noProgressMs) onStall('NO_PROGRESS')
    }, deps.heartbeatMs)
  }

  /** The live record, as everyone but its recorder sees it. */
  get run(): Readonly<RunRecord> {
    return this.live
  }

  /** Records what generation found out (resolution, answer, usage, cost); written with the next save or the end. */
  amend(changes: RunAmendment): void {
    Object.assign(this.live, changes)
  }

  /** A new run's journal, whose first write inserts its row with the claim of its entry. */
  private claim(entryJournal: RecordJournal): RecordJournal {
    const { live: run, entry, deps } = this
    entry.runId = run.id
    const claimed = { ...entry }
    // numbered now, so they come before anything the run publishes; written with the claim, in
    // the entry's journal after its earlier writes, and delivered once written
    const reported: SessionEventData[] = [
      { type: 'QUEUE_ENTRY', kind: 'STARTED', entry: claimed },
      { type: 'RUN_STARTED', run: { ...run } },
    ]
    const claim = this.session.stream.commit(run.id, reported, (events, earlier) =>
      entryJournal.write(async () => {
        // a turn of the event loop first: the status and in-flight marker the run sets as it opens
        // its model call ride along in the insert instead of costing row saves of their own
        await new Promise(setImmediate)
        const inserted = { ...run }
        await deps.database.retried(() => deps.ledger.start(inserted, claimed, [...earlier, ...events]))
        this.written = JSON.stringify(inserted)
        return true
      }),
    )
    claim.catch(this.onWriteError)
    return new RecordJournal(this.onWriteError, claim)
  }

  publish(data: SessionEventData): void {
    if (data.type === 'TOKEN_DELTA' || data.type === 'TOOL_CALL_DELTA' || data.type === 'STEER_APPLIED') this.lastProgress = Date.now()
    this.session.stream.publish(this.live.id, data)
  }

  /** A model call opened: the row carries an in-flight marker while any is open (a bounded grace for the reaper). */
  opened(): void {
    if (this.openCalls++ === 0) this.markInFlight(new Date())
  }

  closed(): void {
    if (--this.openCalls === 0) this.markInFlight(null)
  }

  /** Written with the row, so it usually shares the statement of the RUNNING status saved just before. */
  private markInFlight(since: Date | null): void {
    this.live.inFlightSince = since?.toISOString() ?? null
    this.save()
  }

  /** Queues a write of the whole row as it is when the write runs (a queued one stands for every later one). */
  save(): void {
    this.journal.saveRow(async () => {
      const snapshot = { ...this.live }
      const row = JSON.stringify(snapshot)
      if (row === this.written) return
      await this.deps.runs.update(snapshot)
      this.written = row
    })
  }

  /**
   * The model called tools: the run, with the new round, waits for their results. The live
   * record shows the round and the status only once they are written, so nobody sees calls a
   * crash could still lose; then ToolCallsRequestedEvent is published.
   */
  async requireAction(round: ToolRound): Promise<void> {
    const waiting = { ...this.live, toolRounds: [...this.live.toolRounds, round] }
    advanceRun(waiting, 'REQUIRES_ACTION')
    await this.journal.write(async () => {
      // run.requires_action is sent when the application has something to do
      const webhookUrl = handsOver(round.calls) ? (this.entry.request.webhookUrl ?? null) : null
      await this.deps.database.retried(() => this.deps.ledger.requireAction(waiting, webhookUrl))
      this.written = JSON.stringify(waiting)
    })
    Object.assign(this.live, { status: waiting.status, toolRounds: waiting.toolRounds })
    this.awaitingResults = true
    this.publish({ type: 'TOOL_CALLS_REQUESTED', round: waiting.toolRounds.length - 1, calls: round.calls })
    for (const listener of this.waitingListeners) listener()
  }

  /** `listener` is told each time the run starts waiting for tool results. */
  onWaiting(listener: () => void): void {
    this.waitingListeners.push(listener)
  }

  /**
   * Changes the run's rounds (results submitted) in turn with its other writes: `change` sees the
   * rounds as they are then and answers the new ones, or null for no change (or throws to refuse);
   * the row is written before the live record shows them. Resolves to whether it changed them.
   */
  recordResults(change: (rounds: ToolRound[]) => ToolRound[] | null): Promise<boolean> {
    return this.journal.write(async () => {
      const toolRounds = change(this.live.toolRounds)
      if (toolRounds === null) return false
      const next = { ...this.live, toolRounds }
      await this.deps.runs.update(next)
      this.written = JSON.stringify(next)
      this.live.toolRounds = toolRounds
      return true
    })
  }

  /** Every result is in: the run generates again, and is expected to make progress. */
  resumeGenerating(): void {
    this.awaitingResults = false
    this.lastProgress = Date.now()
    this.advance('GENERATING', true)
  }

  /** Moves the run through its state machine; `save` writes the new status at once. A repair is progress. */
  advance(status: RunStatus, save = false): void {
    advanceRun(this.live, status)
    if (status === 'REPAIRING') this.lastProgress = Date.now()
    if (save) this.save()
  }

  /** Lets go of a run left waiting for tool results (its server shuts down): its row stays as written. */
  async detach(): Promise<RunRecord> {
    clearInterval(this.heartbeat)
    await this.journal.close()
    this.logger.info('run left waiting for tool results', { round: this.live.toolRounds.length })
    return { ...this.live }
  }

  /**
   * Ends the run: its terminal row, its entry's end, its history turn and its last events
   * (MESSAGE_CREATED, the entry's FINISHED, RUN_FINISHED) are written in one transaction and
   * only then published. A run a reaper ended first keeps the reaper's end. Through a database
   * outage the end waits for the database to be back; with the disk full it ends FAILED
   * (STORAGE_FULL, no history turn) once there is room; a write that fails otherwise leaves the
   * row live for the reaper, and the session moves on.
   */
  async finish(ending: RunEnding): Promise<RunRecord> {
    clearInterval(this.heartbeat)
    const { live: run, entry, deps } = this
    let final: RunRecord | null = null
    try {
      // the end writes the whole row: a row save still waiting would only delay it
      await this.journal.close()
      final = await this.writeEnd(ending, (write) => deps.database.retried(write)).catch((error: unknown) => {
        if (!(error instanceof StorageFullError)) throw error
        this.logger.error('no room to write the end of a run: it ends FAILED (STORAGE_FULL) once there is')
        ending = noRoomEnding(ending)
        return this.writeEnd(ending, (write) => deps.database.retriedUntilRoom(write))
      })
    } catch (error) {
      this.logger.error('could not write the end of a run; the reaper will end it', { error: (error as Error).message })
      // the row save the end stood for, as the run still is (live, no call open): without it the
      // reaper would also wait out the grace of an open call
      const live = { ...run }
      this.journal.write(() => deps.runs.update(live)).catch(this.onWriteError)
    }
    final ??= endedRecord(run, ending)
    Object.assign(run, final)
    endEntry(entry, final, ending.unappliedSteerIds)
    return { ...final }
  }

  /** Writes the end `ending` describes through `retry`; answers the run as stored (a reaper's end when one came first). */
  private async writeEnd(ending: RunEnding, retry: <T>(write: () => Promise<T>) => Promise<T>): Promise<RunRecord> {
    const { live: run, entry, deps } = this
    const messages = await this.turnOf(ending)
    // the live record shows the end only once it is written
    const ended = endedRecord(run, ending)
    const endedEntry = endEntry({ ...entry }, ended, ending.unappliedSteerIds)
    const events: SessionEventData[] = [
      ...messages.map((message) => ({ type: 'MESSAGE_CREATED' as const, message })),
      { type: 'QUEUE_ENTRY', kind: 'FINISHED', entry: endedEntry },
      { type: 'RUN_FINISHED', run: ended },
    ]
    const written = await inSpan('promptline.run.end', { 'promptline.run.status': ended.status }, () =>
      this.session.stream.commit(run.id, events, (numbered, earlier) =>
        retry(() => deps.ledger.finish({ run: ended, entry: endedEntry, messages, events: numbered, earlier })),
      ),
    )
    if (!written) return (await deps.runs.find(run.tenantId, run.id)) ?? ended
    this.session.history.appended(messages)
    deps.metrics.runFinished(ended)
    const { status, terminalReason, errorCode, errorMessage, backendId, model, usage, costUsd } = ended
    this.logger.info('run finished', { status, terminalReason, errorCode, errorMessage, backendId, model, usage, costUsd })
    return ended
  }

  private async turnOf({ history, transcript }: RunEnding): Promise<MessageRecord[]> {
    const { live: run } = this
    if (history === 'NONE' || transcript.length === 0) return []
    const session = await this.deps.sessions.find(run.tenantId, run.sessionId!)
    if (!session?.keepHistory) return []
    const interruptedLast = history === 'INTERRUPT' && transcript.at(-1)!.role === 'assistant'
    return this.session.history.turn(
      transcript.map((m, i) => ({
        role: m.role,
        content: m.content,
        parts: m.parts ?? [],
        toolCalls: m.toolCalls ?? [],
        toolCallId: m.toolCallId ?? null,
        runId: run.id,
        interrupted: interruptedLast && i === transcript.length - 1,
      })),
    )
  }
}
