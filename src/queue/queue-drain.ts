import { advanceEntry } from '../domain/lifecycles.js'
import type { Logger } from '../domain/logger.js'
import type { QueueEntryRecord, RunRecord } from '../domain/records.js'
import type { RunSlots } from '../events/run-slots.js'
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
  /** Run slots of keys with concurrentRuns, shared by every instance. */
  slots: RunSlots
  logger: Logger
}

/**
 * The per-session drain loop: whenever a session is idle and has a due entry, it starts the
 * next one (strictly one at a time, in queue order), and starts the one after when it ends.
 * Scheduled entries join the line when their debounce fires.
 */
export class QueueDrain {
  private stopped = false

  constructor(private readonly deps: QueueDrainDeps) {}

  /** Starts the next queued entry unless one is running (or waits for its key's run slot). */
  drain(actor: SessionActor): void {
    if (actor.status !== 'IDLE' || actor.seekingSlot || this.stopped) return
    const next = actor.queued()[0]
    // the head of the line starts once its row exists (its admission calls drain again)
    if (!next || actor.inserting.has(next.queueId)) return
    const { keyId, concurrentRuns } = next.request.admission ?? {}
    if (keyId && concurrentRuns) void this.runInSlot(actor, next, keyId, concurrentRuns)
    else void this.run(actor, next)
  }

  /**
   * Starts an entry of a key with concurrentRuns once it holds one of the key's slots; without
   * one it stays queued and the drain asks again when a slot is given back (or a second later).
   */
  private async runInSlot(actor: SessionActor, entry: QueueEntryRecord, keyId: string, limit: number): Promise<void> {
    const { slots, logger } = this.deps
    actor.seekingSlot = true
    let taken = false
    try {
      taken = await slots.take(keyId, entry.queueId, limit)
    } catch (error) {
      // the slots cannot be reached (Redis away): the entry waits, as it would for a busy slot
      logger.warn('could not take a run slot', { keyId, queueId: entry.queueId, error: (error as Error).message })
    } finally {
      actor.seekingSlot = false
    }
    if (!taken) return slots.whenFree(keyId, () => this.drain(actor))
    // cancelled, or passed by a newer prompt, while the slot was asked for
    if (this.stopped || actor.status !== 'IDLE' || actor.queued()[0] !== entry) {
      await slots.release(keyId, entry.queueId).catch(() => {})
      return this.drain(actor)
    }
    return this.run(actor, entry)
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
    this.deps.slots.close()
  }
}
