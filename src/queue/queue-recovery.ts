import { advanceEntry, advanceRun } from '../domain/lifecycles.js'
import type { QueueEntryRecord, RunRecord } from '../domain/records.js'
import type { SessionEventBus } from '../events/event-bus.js'
import type { QueueStore } from '../store/queue-store.js'
import type { RunStore } from '../store/run-store.js'
import type { SessionMemory } from '../store/session-memory.js'
import type { AdmissionLimits } from './admission-limits.js'
import type { QueueEntryWriter } from './entry-writer.js'
import type { QueueDrain } from './queue-drain.js'
import type { SessionQueue } from './session-queue.js'
import type { SessionQueues } from './session-queues.js'

export interface QueueRecoveryDeps {
  runs: RunStore
  entries: QueueStore
  sessions: SessionMemory
  queues: SessionQueues
  bus: SessionEventBus
  writer: QueueEntryWriter
  admission: AdmissionLimits
  drain: QueueDrain
}

const now = () => new Date().toISOString()
const INTERRUPTED = 'interrupted by a server restart'

/**
 * At start-up, what the last process left: runs and entries that were mid-run are FAILED
 * (reason INTERRUPTED, their lost events a visible gap), queued entries resume, scheduled ones
 * are re-armed. A resumed entry is resolved again when it starts (its admission was in memory).
 */
export async function recoverQueues(deps: QueueRecoveryDeps): Promise<void> {
  for (const run of await deps.runs.unfinished()) {
    advanceRun(run, 'FAILED')
    Object.assign(run, {
      terminalReason: 'INTERRUPTED',
      errorCode: 'INTERNAL',
      errorMessage: INTERRUPTED,
      finishedAt: now(),
    } satisfies Partial<RunRecord>)
    await deps.runs.update(run)
    if (run.sessionId && (await deps.sessions.find(run.tenantId, run.sessionId))) {
      await deps.queues.get(run.tenantId, run.sessionId)
      deps.bus.publish(run.tenantId, run.sessionId, run.id, { type: 'RUN_FINISHED', run })
    }
  }
  for (const entry of await deps.entries.withStatus(['STARTING', 'RUNNING'])) {
    const queue = await deps.queues.get(entry.tenantId, entry.sessionId)
    advanceEntry(entry, 'FAILED')
    Object.assign(entry, { finishedAt: now(), error: { code: 'INTERNAL', message: INTERRUPTED } } satisfies Partial<QueueEntryRecord>)
    await deps.entries.update(entry)
    deps.writer.publish(queue, 'FINISHED', entry)
  }
  const resumed = new Set<SessionQueue>()
  for (const entry of await deps.entries.withStatus(['QUEUED', 'SCHEDULED'])) {
    const queue = await deps.queues.get(entry.tenantId, entry.sessionId)
    queue.outstanding.set(entry.queueId, entry)
    deps.admission.reserve(entry.requestBytes)
    if (entry.status === 'SCHEDULED') deps.drain.schedule(queue, entry, entry.fireAt ? Date.parse(entry.fireAt) - Date.now() : 0)
    resumed.add(queue)
  }
  for (const queue of resumed) deps.drain.drain(queue)
}
