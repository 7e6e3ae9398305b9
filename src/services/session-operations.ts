import type { SessionEvent } from '../domain/events.js'
import type { MessageRecord, QueueEntryRecord, QueueEntryView, RunRecord, SessionStatus, WhenBusy } from '../domain/records.js'
import type { AdmissionInput } from '../domain/run-request.js'
import type { SubmittedResult } from '../runner/tool-rounds.js'

/**
 * The use cases that run at a session's owner, each with the arguments and the answer that cross
 * Redis when another instance asks (plain JSON: a request's input is parsed where it arrives and
 * goes as parsed).
 */
export interface SessionOperations {
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
  queueEntry(tenantId: string, sessionId: string, queueId: string): Promise<QueueEntryView | null>
  run(tenantId: string, runId: string): Promise<RunRecord | null>
  unwrittenEvents(tenantId: string, sessionId: string, afterSequence: number): Promise<SessionEvent[]>
  deleteSession(tenantId: string, id: string): Promise<string>
  messages(tenantId: string, sessionId: string): Promise<MessageRecord[]>
  status(tenantId: string, sessionId: string): Promise<SessionStatus>
  lastSequence(tenantId: string, sessionId: string): Promise<number>
  queueOf(tenantId: string, sessionId: string, includeTerminal: boolean): Promise<QueueEntryView[]>
}

export type SessionOperation = keyof SessionOperations
