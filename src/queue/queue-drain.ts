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
  drain(actor: SessionActor): void {
    if (actor.status !== 'IDLE' || this.stopped) return
    const next = actor.queued()[0]
    // the head of the line starts once its row exists (its admission calls drain again)
    if (next && !actor.inserting.has(next.queueId)) void this.run(actor, next)
  }

  private async run(actor: SessionActor, entry: QueueEntryRecord): Promise<void> {
    this.deps.admission.release(entry.requestBytes)
    await this.runToEnd(actor, this.deps.supervisor.start(actor, entry))
  }

  /** Goes on with a run that was waiting for tool results when its server stopped; nothing starts before it ends. */
  resume(actor: SessionActor, entry: QueueEntryRecord, run: RunRecord): void {
    actor.outstanding.set(entry.queueId, entry)
    void this.runToEnd(actor, this.deps.supervisor.start(actor, entry, run))
  }

  private async runToEnd(actor: SessionActor, active: ActiveRun): Promise<void> {
    actor.started(active)
    await active.done
    actor.runEnded()
    this.drain(actor)
  }

  /** (Re)starts a scheduled entry's debounce; when it fires the entry is queued. */
  schedule(actor: SessionActor, entry: QueueEntryRecord, delayMs: number): void {
    this.deps.scheduler.arm(entry.queueId, delayMs, () => {
      if (entry.status !== 'SCHEDULED') return
      advanceEntry(entry, 'QUEUED')
      this.deps.writer.save(actor, entry)
      this.deps.writer.publish(actor, 'QUEUED', entry)
      this.drain(actor)
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
