import type { ChatMessage, Reasoning, Usage } from './records.js'
import type { ToolCall } from './tools.js'

/** What a call answered: submitted by the application, or returned by the MCP server promptline called. */
export interface ToolResult {
  callId: string
  /** The tool's output: JSON text or plain text, given to the model as it is. */
  output: string
  isError: boolean
  /** The key of the submission that brought it; a repeat with that key answers as the first did. */
  idempotencyKey: string | null
  at: string
  /** An MCP call's server label and how long the call took; absent for an application's result. */
  server?: string
  durationMs?: number
}

/** Someone's answer to a call that waited for an approval. */
export interface ApprovalDecision {
  approve: boolean
  reason: string | null
  /** The API key that decided (its id); null where keys are off. */
  keyId: string | null
  idempotencyKey: string | null
  at: string
}

/**
 * A call of a round, with what is wrong with its arguments (checked when it was made). A call of
 * an MCP server's tool names the server, says whether it waits for an approval, carries the
 * decision once made, and when promptline began it (a call begun and never answered is not made again).
 */
export type RoundCall = ToolCall & {
  argumentErrors: string[]
  server?: string
  approvalRequired?: boolean
  decision?: ApprovalDecision
  startedAt?: string
}

/** One round of tool calls: the model's calls, the results so far, and what the round's generation used. */
export interface ToolRound {
  /** Steered segments and steers of the round, before its calls. */
  preamble: ChatMessage[]
  /** The text the model said with its calls. */
  text: string
  calls: RoundCall[]
  results: ToolResult[]
  /** When the run gives up waiting for the missing results. */
  deadline: string
  /** Anthropic's thinking before the calls, replayed with them. */
  reasoning: Reasoning | null
  /** What the model calls of the round used (their retries and repairs among them). */
  usage: Usage
  /** The attempt number of the round's token deltas. */
  attempt: number
}

/** Whether a submission with this key was already taken in one of the rounds (a repeat answers as it did). */
export const submittedWith = (rounds: readonly ToolRound[], key: string | null): boolean =>
  key !== null && rounds.some((r) => r.results.some((x) => x.idempotencyKey === key))

/** A call still waiting for its result. */
export const pendingCalls = (round: ToolRound): RoundCall[] =>
  round.calls.filter((call) => !round.results.some((r) => r.callId === call.callId))

/** The pending calls that wait for an approval not yet given. */
export const awaitingApproval = (round: ToolRound): RoundCall[] =>
  pendingCalls(round).filter((call) => call.approvalRequired === true && call.decision === undefined)

/** The MCP calls promptline may make now: pending, not begun, and approved where they had to be. */
export const callsToMake = (round: ToolRound): RoundCall[] =>
  pendingCalls(round).filter(
    (call) =>
      call.server !== undefined && call.startedAt === undefined && (call.approvalRequired !== true || call.decision?.approve === true),
  )

/**
 * Whether `answered` names exactly the calls of a waiting run's last round the application still
 * owes (an MCP server's calls are promptline's to make).
 */
export function answersExactly(
  run: { status: string; toolRounds: readonly ToolRound[] },
  answered: ReadonlySet<string | undefined>,
): boolean {
  const round = run.toolRounds.at(-1)
  if (run.status !== 'REQUIRES_ACTION' || !round) return false
  const owed = pendingCalls(round).filter((call) => call.server === undefined)
  return owed.length === answered.size && owed.every((call) => answered.has(call.callId))
}

/** Whether calls need the application: a call for it to answer, or one to approve or decline. */
export const handsOver = (calls: readonly RoundCall[]): boolean =>
  calls.some((call) => call.server === undefined || (call.approvalRequired === true && call.decision === undefined))

/** Whether a decision with this key was already taken in one of the rounds (a repeat answers as it did). */
export const decidedWith = (rounds: readonly ToolRound[], key: string | null): boolean =>
  key !== null && rounds.some((r) => r.calls.some((c) => c.decision?.idempotencyKey === key))
