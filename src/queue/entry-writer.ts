import type { QueueEntryEventKind } from '../domain/events.js'
import type { QueueEntryRecord } from '../domain/records.js'
import type { SessionEventBus } from '../events/event-bus.js'
import type { QueueStore } from '../store/queue-store.js'
import type { SaveQueue } from '../store/save-queue.js'
import type { SessionQueue } from './session-queue.js'

export interface QueueEntryWriterDeps {
  bus: SessionEventBus
  entries: QueueStore
  saves: SaveQueue
  /** Terminal entries kept per session. */
  retainedTerminal: number
}

/** Writes queue entries through the ordered save queue and tells the session's subscribers. */
export class QueueEntryWriter {
  constructor(private readonly deps: QueueEntryWriterDeps) {}

  /** Queues a write of the whole entry as it is now; a newer one replaces a queued one. */
  save(entry: QueueEntryRecord): void {
    const snapshot = { ...entry }
    this.deps.saves.enqueue(entry.queueId, () => this.deps.entries.update(snapshot), 'row')
  }

  publish(queue: SessionQueue, kind: QueueEntryEventKind, entry: QueueEntryRecord): void {
    this.deps.bus.publish(queue.tenantId, queue.sessionId, entry.runId, { type: 'QUEUE_ENTRY', kind, entry: { ...entry } })
  }

  /** A terminal entry that never ran: written, announced, retired. */
  finish(queue: SessionQueue, entry: QueueEntryRecord): void {
    this.save(entry)
    if (!queue.deleting) this.publish(queue, 'FINISHED', entry)
    this.retire(queue, entry)
  }

  /** A terminal entry, already written: no longer outstanding, and old terminal entries pruned. */
  retire(queue: SessionQueue, entry: QueueEntryRecord): void {
    queue.outstanding.delete(entry.queueId)
    const { tenantId, sessionId } = queue
    const keep = this.deps.retainedTerminal
    // prune only when the count may be well over the limit (a tenth of slack), not once per run
    if (queue.terminalCount === null || ++queue.terminalCount > keep + Math.max(1, Math.ceil(keep / 10))) {
      this.deps.saves.enqueue(entry.queueId, async () => {
        queue.terminalCount = await this.deps.entries.pruneTerminal(tenantId, sessionId, keep)
      })
    }
  }
}
