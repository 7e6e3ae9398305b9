import type { MessageRecord, QueueEntryRecord, QueueEntryView, RunRecord, SessionStatus, WhenBusy } from '../domain/records.js'
import type { AdmissionInput } from '../domain/run-request.js'
import type { UnwrittenTail } from '../events/session-stream.js'
import type { ToolCallDecisions } from '../queue/run-supervisor.js'
import type { SubmittedResult } from '../runner/tool-rounds.js'

/**
 * The use cases that change a session: they run at its owner, which takes the session's lease
 * for them. The arguments and answers cross the deployment's link when another instance asks
 * (plain JSON: a request's input is parsed where it arrives and goes as parsed).
 */
export interface SessionChanges {
  /** Admits a prompt (scheduled when `input.schedule` says so). */
  enqueue(tenantId: string, input: AdmissionInput, whenBusy: WhenBusy): Promise<QueueEntryRecord>
  runPrompt(
    tenantId: string,
    input: AdmissionInput,
    whenBusy: WhenBusy,
    waitMs: number,
  ): Promise<{ entry: QueueEntryView; run: RunRecord | null }>
  cancelScheduled(tenantId: string, sessionId: string, scheduleKey: string): Promise<boolean>
  cancel(tenantId: string, sessionId: string, queueId: string): Promise<{ cancelled: boolean; entry: QueueEntryRecord }>
  steer(tenantId: string, sessionId: string, queueId: string, steerId: string, text: string): Promise<{ runId: string }>
  abortRun(tenantId: string, runId: string, reason: string | null): Promise<{ aborted: boolean; run: RunRecord }>
  submitToolResults(tenantId: string, runId: string, results: SubmittedResult[], idempotencyKey: string | null): Promise<RunRecord>
  decideToolCalls(tenantId: string, runId: string, decision: ToolCallDecisions): Promise<RunRecord>
  deleteSession(tenantId: string, id: string): Promise<string>
}

/**
 * The reads of a session: answered by the instance holding it (what it keeps in memory is the
 * truth while it does), else from the store; a read never takes the lease, and never writes.
 */
export interface SessionReads {
  queueEntry(tenantId: string, sessionId: string, queueId: string): Promise<QueueEntryView | null>
  run(tenantId: string, runId: string): Promise<RunRecord | null>
  /** Events delivered after a sequence and not yet written (none where nobody holds the session). */
  unwrittenTail(tenantId: string, sessionId: string, afterSequence: number): Promise<UnwrittenTail>
  messages(tenantId: string, sessionId: string): Promise<MessageRecord[]>
  status(tenantId: string, sessionId: string): Promise<SessionStatus>
  lastSequence(tenantId: string, sessionId: string): Promise<number>
  queueOf(tenantId: string, sessionId: string, includeTerminal: boolean): Promise<QueueEntryView[]>
}

/** Everything the holder of a session answers: one typed interface for a local host and a remote one. */
export type SessionOperations = SessionChanges & SessionReads

export type SessionChange = keyof SessionChanges
export type SessionRead = keyof SessionReads
