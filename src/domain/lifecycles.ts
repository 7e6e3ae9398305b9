import type { ExperimentStatus } from './experiments.js'
import { type EntryStatus, type QueueEntryRecord, RUN_STATUSES, type RunRecord, type RunStatus } from './records.js'

/**
 * The state machines of queue entries, runs and session queues, each as one table: the
 * statuses a record may move to from each status. Everything that changes a status goes through `advanceRun` / `advanceEntry`,
 * so an illegal move fails loudly where it is attempted instead of being written.
 */
export const RUN_TRANSITIONS: Readonly<Record<RunStatus, readonly RunStatus[]>> = {
  PREPARING: ['WAITING_CAPACITY', 'GENERATING', 'FAILED', 'ABORTED'],
  // several leases of a parallel prompt may each wait in line
  WAITING_CAPACITY: ['WAITING_CAPACITY', 'GENERATING', 'FAILED', 'ABORTED'],
  // a failover to another backend may wait for its capacity; a parallel prompt validates per
  // candidate, so its run goes from GENERATING to its end directly
  GENERATING: ['WAITING_CAPACITY', 'REQUIRES_ACTION', 'VALIDATING', 'COMPLETED', 'FAILED', 'ABORTED'],
  // the model called tools: the run waits for their results (no capacity held), then generates again
  REQUIRES_ACTION: ['GENERATING', 'WAITING_CAPACITY', 'FAILED', 'ABORTED'],
  VALIDATING: ['REPAIRING', 'COMPLETED', 'FAILED', 'ABORTED'],
  REPAIRING: ['GENERATING', 'FAILED', 'ABORTED'],
  COMPLETED: [],
  FAILED: [],
  ABORTED: [],
}

export const ENTRY_TRANSITIONS: Readonly<Record<EntryStatus, readonly EntryStatus[]>> = {
  QUEUED: ['STARTING', 'CANCELLED'],
  // a scheduled entry joins the line when its debounce fires
  SCHEDULED: ['QUEUED', 'CANCELLED'],
  // a run can fail or be stopped before it generates anything
  STARTING: ['RUNNING', 'FAILED', 'CANCELLED'],
  RUNNING: ['COMPLETED', 'FAILED', 'CANCELLED'],
  COMPLETED: [],
  FAILED: [],
  CANCELLED: [],
}

/** A status change the machine does not allow: a bug in the caller, never the user's doing. */
export class IllegalTransitionError extends Error {
  override name = 'IllegalTransitionError'
  constructor(kind: string, from: string, to: string) {
    super(`illegal ${kind} transition ${from} → ${to}`)
  }
}

export const isTerminalRun = (status: RunStatus): boolean => RUN_TRANSITIONS[status].length === 0
/** The statuses a run ends in: those the table lets it leave for none. */
export const TERMINAL_RUN_STATUSES: readonly RunStatus[] = RUN_STATUSES.filter(isTerminalRun)
export const isTerminalEntry = (status: EntryStatus): boolean => ENTRY_TRANSITIONS[status].length === 0

/** Moves a run to `to`, or throws IllegalTransitionError and leaves it as it was. */
export function advanceRun(run: Pick<RunRecord, 'status'>, to: RunStatus): void {
  if (!RUN_TRANSITIONS[run.status].includes(to)) throw new IllegalTransitionError('run', run.status, to)
  run.status = to
}

/** Moves a queue entry to `to`, or throws IllegalTransitionError and leaves it as it was. */
export function advanceEntry(entry: Pick<QueueEntryRecord, 'status'>, to: EntryStatus): void {
  if (!ENTRY_TRANSITIONS[entry.status].includes(to)) throw new IllegalTransitionError('queue entry', entry.status, to)
  entry.status = to
}

/** The entry status that mirrors a run's end. */
export function entryStatusOf(run: Pick<RunRecord, 'status'>): Extract<EntryStatus, 'COMPLETED' | 'FAILED' | 'CANCELLED'> {
  if (run.status === 'COMPLETED') return 'COMPLETED'
  if (run.status === 'FAILED') return 'FAILED'
  if (run.status === 'ABORTED') return 'CANCELLED'
  throw new IllegalTransitionError('queue entry', 'RUNNING', `the end of a run still ${run.status}`)
}

/** An experiment's machine: it runs its units, then ends; cancelled or failed at any time before. */
const EXPERIMENT_TRANSITIONS: Readonly<Record<ExperimentStatus, readonly ExperimentStatus[]>> = {
  QUEUED: ['RUNNING', 'FAILED', 'CANCELLED'],
  RUNNING: ['COMPLETED', 'FAILED', 'CANCELLED'],
  COMPLETED: [],
  FAILED: [],
  CANCELLED: [],
}

/** The statuses an experiment may move to `to` from. */
export const experimentMovesTo = (to: ExperimentStatus): ExperimentStatus[] =>
  (Object.keys(EXPERIMENT_TRANSITIONS) as ExperimentStatus[]).filter((from) => EXPERIMENT_TRANSITIONS[from].includes(to))

/** What a session's queue is doing, on the instance that owns the session (in memory only). */
export type SessionQueueStatus = 'IDLE' | 'RUNNING' | 'HELD' | 'CLOSING'

/** The session queue's machine: at most one run at a time, and once closing, nothing more. */
const SESSION_QUEUE_TRANSITIONS: Readonly<Record<SessionQueueStatus, readonly SessionQueueStatus[]>> = {
  // nothing runs: the drain starts the next entry in line, or a previous owner's run holds it
  IDLE: ['RUNNING', 'HELD', 'CLOSING'],
  // an entry's run is live here; when it ends the drain looks again
  RUNNING: ['IDLE', 'CLOSING'],
  // a run the session's previous owner left live, within its in-flight grace: nothing starts
  // until the reaper ends it (the last one found, should a takeover find two)
  HELD: ['HELD', 'IDLE', 'CLOSING'],
  // deleted, or taken over by another instance: admits and starts nothing (a run it had is stopped)
  CLOSING: [],
}

/** Moves a session queue to `to`, or throws IllegalTransitionError and leaves it as it was. */
export function advanceSessionQueue(queue: { status: SessionQueueStatus }, to: SessionQueueStatus): void {
  if (!SESSION_QUEUE_TRANSITIONS[queue.status].includes(to)) throw new IllegalTransitionError('session queue', queue.status, to)
  queue.status = to
}
