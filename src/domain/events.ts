import type { MessageRecord, QueueEntryRecord, RunRecord } from './records.js'
import type { RoundCall } from './tool-rounds.js'

const QUEUE_ENTRY_EVENT_KINDS = ['QUEUED', 'STARTED', 'RUNNING', 'FINISHED'] as const
export type QueueEntryEventKind = (typeof QUEUE_ENTRY_EVENT_KINDS)[number]

/** An approval or a decline of a call, as ToolCallsDecidedEvent tells it. */
export interface ToolCallDecision {
  callId: string
  approve: boolean
  reason: string | null
  keyId: string | null
}

/** What happened, without its place in the stream. Snapshots are taken when it happened. */
export type SessionEventData =
  | { type: 'QUEUE_ENTRY'; kind: QueueEntryEventKind; entry: QueueEntryRecord }
  | { type: 'RUN_STARTED'; run: RunRecord }
  | { type: 'TOKEN_DELTA'; text: string; attempt: number; candidate: string | null }
  | { type: 'GENERATION_RESTARTED'; attempt: number; reason: string; discardedChars: number; candidate: string | null }
  | { type: 'TOOL_CALL_STARTED'; callId: string; name: string; round: number; server: string | null }
  | { type: 'TOOL_CALL_DELTA'; callId: string; argumentsDelta: string }
  | { type: 'TOOL_CALLS_REQUESTED'; round: number; calls: RoundCall[] }
  | { type: 'TOOL_CALLS_DECIDED'; round: number; decisions: ToolCallDecision[] }
  | { type: 'TOOL_CALL_RESULT'; round: number; callId: string; server: string; output: string; isError: boolean; durationMs: number | null }
  | { type: 'STEER_ACCEPTED'; steerId: string; queueId: string }
  | { type: 'STEER_APPLIED'; steerId: string }
  | { type: 'MESSAGE_CREATED'; message: MessageRecord }
  | { type: 'RUN_FINISHED'; run: RunRecord }

export type SessionEventType = SessionEventData['type']

/** One event of a session stream, as published live and as persisted. */
export type SessionEvent = SessionEventData & {
  tenantId: string
  sessionId: string
  /** Unique and increasing within the session; never reused, also across restarts. */
  sequence: number
  at: string
  /** The run it belongs to, for `runEvents`. */
  runId: string | null
}
