import { advanceEntry } from '../domain/lifecycles.js'
import type { QueueEntryRecord, RunRecord } from '../domain/records.js'
import type { AdmissionLimits } from './admission-limits.js'
import type { DebounceScheduler } from './debounce-scheduler.js'
import type { QueueEntryWriter } from './entry-writer.js'
import type { RunSupervisor } from './run-supervisor.js'
import type { ActiveRun, SessionActor } from './session-actor.js'

export interface QueueDrainDeps {
  supervisor: RunSupervisor
  writer: QueueEntryWriter
  admission: AdmissionLimits
  scheduler: DebounceScheduler
}

/**
 * The per-session drain loop: whenever a session is idle and has a due entry, it starts the
 * next one (strictly one at a time, in queue order), and starts the one after when it ends.
 * Scheduled entries join the line when their debounce fires.
 */
export class QueueDrain {
  private stopped = false

  constructor(private readonly deps: QueueDrainDeps) {}

  /** Starts the next queued entry unless one is running. */
  drain(queue: SessionActor): void {
    if (queue.status !== 'IDLE' || this.stopped) return
    const next = queue.queued()[0]
    // the head of the line starts once its row exists (its admission calls drain again)
    if (next && !queue.inserting.has(next.queueId)) void this.run(queue, next)
  }

  private async run(queue: SessionActor, entry: QueueEntryRecord): Promise<void> {
    this.deps.admission.release(entry.requestBytes)
    await this.runToEnd(queue, this.deps.supervisor.start(queue, entry))
  }

  /** Goes on with a run that was waiting for tool results when its server stopped; nothing starts before it ends. */
  resume(queue: SessionActor, entry: QueueEntryRecord, run: RunRecord): void {
    queue.outstanding.set(entry.queueId, entry)
    void this.runToEnd(queue, this.deps.supervisor.start(queue, entry, run))
  }

  private async runToEnd(queue: SessionActor, active: ActiveRun): Promise<void> {
    queue.started(active)
    await active.done
    queue.runEnded()
    this.drain(queue)
  }

  /** (Re)starts a scheduled entry's debounce; when it fires the entry is queued. */
  schedule(queue: SessionActor, entry: QueueEntryRecord, delayMs: number): void {
    this.deps.scheduler.arm(entry.queueId, delayMs, () => {
      if (entry.status !== 'SCHEDULED') return
      advanceEntry(entry, 'QUEUED')
      this.deps.writer.save(queue, entry)
      this.deps.writer.publish(queue, 'QUEUED', entry)
      this.drain(queue)
    })
  }

  unschedule(queueId: string): void {
    this.deps.scheduler.disarm(queueId)
  }

  /** Starts nothing more: for shutdown. */
  stop(): void {
    this.stopped = true
    this.deps.scheduler.close()
  }
}
