import type { QueueEntryRecord, QueueEntryView, SessionStatus } from './records.js'

/** Queued entries in the order they will run: higher priority first, then admission order. */
export function runOrder(outstanding: Iterable<QueueEntryRecord>): QueueEntryRecord[] {
  return [...outstanding].filter((e) => e.status === 'QUEUED').sort((a, b) => b.priority - a.priority || a.queueSequence - b.queueSequence)
}

/** Outstanding entries in admission order, with their position (0 = running, 1 = next, …; null when scheduled). */
export function withPositions(running: QueueEntryRecord | null, outstanding: Iterable<QueueEntryRecord>): QueueEntryView[] {
  const entries = [...outstanding]
  const inLine = [...(running ? [running] : []), ...runOrder(entries)]
  const position = new Map(inLine.map((e, i) => [e.queueId, running ? i : i + 1]))
  return entries.sort((a, b) => a.queueSequence - b.queueSequence).map((e) => ({ ...e, position: position.get(e.queueId) ?? null }))
}

/** What a queue with these outstanding entries is doing. */
export function queueStatus(busy: boolean, outstanding: Iterable<QueueEntryRecord>): SessionStatus {
  if (busy) return 'RUNNING'
  return [...outstanding].some((e) => e.status === 'SCHEDULED') ? 'SCHEDULED' : 'IDLE'
}
