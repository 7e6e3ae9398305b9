import { randomUUID } from 'node:crypto'
import type { SessionEventData } from '../domain/events.js'
import { advanceRun } from '../domain/lifecycles.js'
import type { Logger } from '../domain/logger.js'
import type { ChatMessage, QueueEntryRecord, RunRecord, RunStatus, TerminalReason } from '../domain/records.js'
import type { SessionEventBus } from '../events/event-bus.js'
import type { RunStore } from '../store/run-store.js'
import type { SaveQueue } from '../store/save-queue.js'
import type { SessionMemory } from '../store/session-memory.js'

export interface RunRecorderDeps {
  bus: SessionEventBus
  runs: RunStore
  saves: SaveQueue
  sessions: SessionMemory
  logger: Logger
  heartbeatMs: number
}

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
}

const now = () => new Date().toISOString()

/**
 * The durable side of one run: its row (inserted at once, updated through the ordered save
 * queue, so no write waits on the token path), its heartbeat timer, its status moves through
 * the run state machine, and its end — history turn, terminal row, RUN_FINISHED — in that order.
 */
export class RunRecorder {
  readonly run: RunRecord
  private readonly heartbeat: NodeJS.Timeout

  constructor(
    private readonly deps: RunRecorderDeps,
    entry: QueueEntryRecord,
  ) {
    this.run = {
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
      parsedOutput: null,
      validation: null,
      failoverAttempts: [],
      alternatives: [],
      usage: null,
      costUsd: null,
      startedAt: now(),
      firstTokenAt: null,
      finishedAt: null,
      heartbeatAt: now(),
      errorCode: null,
      errorMessage: null,
      terminalReason: null,
    }
    const { run } = this
    const inserted = { ...run }
    deps.saves.enqueue(run.id, () => deps.runs.insert(inserted))
    this.publish({ type: 'RUN_STARTED', run: { ...run } })
    this.heartbeat = setInterval(() => {
      run.heartbeatAt = now()
      const at = run.heartbeatAt
      deps.saves.enqueue(run.id, () => deps.runs.heartbeat(run.id, at))
    }, deps.heartbeatMs)
  }

  publish(data: SessionEventData): void {
    this.deps.bus.publish(this.run.tenantId, this.run.sessionId!, this.run.id, data)
  }

  /** Queues a write of the whole row as it is now (a newer one replaces a queued one); returns what it writes. */
  save(): RunRecord {
    const snapshot = { ...this.run }
    this.deps.saves.enqueue(this.run.id, () => this.deps.runs.update(snapshot), 'row')
    return snapshot
  }

  /** Moves the run through its state machine; `save` writes the new status at once. */
  advance(status: RunStatus, save = false): void {
    advanceRun(this.run, status)
    if (save) this.save()
  }

  /**
   * Ends the run: appends its turn to the history (and tells subscribers), then moves it to its
   * terminal status, writes the row and publishes RUN_FINISHED. A history that cannot be
   * written fails the run, so the run, its entry and the conversation never disagree.
   */
  async finish(ending: RunEnding): Promise<RunRecord> {
    clearInterval(this.heartbeat)
    const { run } = this
    let end: Omit<RunEnding, 'transcript' | 'history'> = ending
    try {
      await this.appendHistory(ending)
    } catch (error) {
      this.deps.logger.error('could not write the history of a run', { runId: run.id, error: (error as Error).message })
      end = { status: 'FAILED', terminalReason: 'ERROR', errorCode: 'INTERNAL', errorMessage: 'the run could not be recorded' }
    }
    advanceRun(run, end.status)
    Object.assign(run, {
      terminalReason: end.terminalReason,
      errorCode: end.errorCode,
      errorMessage: end.errorMessage,
      finishedAt: now(),
    } satisfies Partial<RunRecord>)
    const snapshot = this.save()
    this.publish({ type: 'RUN_FINISHED', run: snapshot })
    return snapshot
  }

  private async appendHistory({ history, transcript }: RunEnding): Promise<void> {
    const { run } = this
    if (history === 'NONE' || transcript.length === 0) return
    const session = await this.deps.sessions.find(run.tenantId, run.sessionId!)
    if (!session?.keepHistory) return
    const interruptedLast = history === 'INTERRUPT' && transcript.at(-1)!.role === 'assistant'
    const appended = await this.deps.sessions.append(
      run.tenantId,
      run.sessionId!,
      transcript.map((m, i) => ({ ...m, runId: run.id, interrupted: interruptedLast && i === transcript.length - 1 })),
    )
    for (const message of appended) this.publish({ type: 'MESSAGE_CREATED', message })
  }
}
