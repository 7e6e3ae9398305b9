import { advanceSessionQueue, type SessionQueueStatus } from '../domain/lifecycles.js'
import { runOrder, withPositions } from '../domain/queue-order.js'
import type { QueueEntryRecord, QueueEntryView } from '../domain/records.js'
import type { SessionStream } from '../events/session-stream.js'
import type { AdmittedPrompt } from '../runner/prepare.js'
import type { RecordJournal } from '../runner/record-journal.js'
import type { RunHandle } from '../runner/run-executor.js'
import type { SessionHistory } from '../store/session-history.js'

/** The entry a session is running and the runner's handle on its run. */
export interface ActiveRun {
  entry: QueueEntryRecord
  handle: RunHandle
  /** Resolves once the entry is terminal and written. */
  done: Promise<void>
}

/**
 * One session as the instance holding it keeps it, in one place: its queue (outstanding entries,
 * what admission resolved for them, their writes), its live run, its history, and its event
 * stream (numbering, unwritten events, its own write chain). The store holds the durable side.
 * Its status moves only along SESSION_QUEUE_TRANSITIONS (`domain/lifecycles.ts`).
 */
export class SessionActor {
  /** Queued, scheduled and running entries. */
  readonly outstanding = new Map<string, QueueEntryRecord>()
  /** What admission resolved and rendered for each waiting entry, reused when it runs. */
  readonly admitted = new Map<string, AdmittedPrompt>()
  /** Admitted entries whose row is still being inserted: the drain waits for them. */
  readonly inserting = new Set<string>()
  /** The writes of each outstanding entry, in order; gone with the entry (or with the queue, when the session is lost). */
  readonly journals = new Map<string, RecordJournal>()
  /** Moved only through the methods below, along SESSION_QUEUE_TRANSITIONS. */
  status: SessionQueueStatus = 'IDLE'
  /** The entry running here: set while RUNNING, and while CLOSING until its run has ended. */
  active: ActiveRun | null = null
  /** While HELD: the run the session's previous owner left live. */
  heldBy: string | null = null
  /** Terminal entries in the store; unknown (null) until the first prune counts them. */
  terminalCount: number | null = null
  /** True while the drain asks for a run slot of the head entry's key (concurrentRuns): nothing else starts meanwhile. */
  seekingSlot = false

  constructor(
    readonly tenantId: string,
    readonly sessionId: string,
    public nextQueueSequence: number,
    readonly stream: SessionStream,
    readonly history: SessionHistory,
  ) {}

  /** An entry's run starts here. */
  started(active: ActiveRun): void {
    advanceSessionQueue(this, 'RUNNING')
    this.active = active
  }

  /** The run started here ended (a closing queue stays closing). */
  runEnded(): void {
    this.active = null
    if (this.status === 'RUNNING') advanceSessionQueue(this, 'IDLE')
  }

  /** A previous owner's run holds the queue until it is ended. */
  hold(runId: string): void {
    advanceSessionQueue(this, 'HELD')
    this.heldBy = runId
  }

  /** The run that held the queue ended; says whether it was the one. */
  unhold(runId: string): boolean {
    if (this.status !== 'HELD' || this.heldBy !== runId) return false
    advanceSessionQueue(this, 'IDLE')
    this.heldBy = null
    return true
  }

  /** Deleted, or lost to another instance: nothing more is admitted or started. */
  close(): void {
    if (this.status !== 'CLOSING') advanceSessionQueue(this, 'CLOSING')
  }

  get closing(): boolean {
    return this.status === 'CLOSING'
  }

  /** Nothing outstanding, nothing being admitted, nothing running or held, nothing unwritten: safe to unload. */
  get idle(): boolean {
    return this.outstanding.size === 0 && this.inserting.size === 0 && this.status === 'IDLE' && this.stream.quiet
  }

  get busy(): boolean {
    return this.active !== null || this.status === 'HELD' || this.queued().length > 0
  }

  /** Queued entries in the order they will run: higher priority first, then admission order. */
  queued(): QueueEntryRecord[] {
    return runOrder(this.outstanding.values())
  }

  scheduled(key: string): QueueEntryRecord | undefined {
    for (const entry of this.outstanding.values()) if (entry.status === 'SCHEDULED' && entry.scheduleKey === key) return entry
    return undefined
  }

  /** Outstanding prompts and unapplied steers, with their bytes (what the session's limits count). */
  usage(): { count: number; bytes: number } {
    let count = 0
    let bytes = 0
    for (const entry of this.outstanding.values()) {
      count++
      bytes += entry.requestBytes
    }
    if (this.active) {
      count += this.active.handle.steers.pendingCount
      bytes += this.active.handle.steers.pendingBytes
    }
    return { count, bytes }
  }

  /** Outstanding entries in admission order, with their position (0 = running, 1 = next, …). */
  view(): QueueEntryView[] {
    return withPositions(this.active?.entry ?? null, this.outstanding.values())
  }

  /** One entry with its position; null position once it is no longer outstanding. */
  viewOf(entry: QueueEntryRecord): QueueEntryView {
    return this.view().find((e) => e.queueId === entry.queueId) ?? { ...entry, position: null }
  }
}
