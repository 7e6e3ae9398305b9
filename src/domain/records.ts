import type { PromptInclude } from './catalog.js'
import type { ContentPart } from './content-parts.js'
import type { OutputContract, ResponseCacheLayer, Role, SettingsLayer } from './definitions.js'
import type { ToolRound } from './tool-rounds.js'
import type { ToolCall, ToolLayer } from './tools.js'

/** Plain, JSON-safe records of what the store keeps; timestamps are ISO strings. */

export const ENTRY_STATUSES = ['QUEUED', 'STARTING', 'SCHEDULED', 'RUNNING', 'COMPLETED', 'FAILED', 'CANCELLED'] as const
export type EntryStatus = (typeof ENTRY_STATUSES)[number]
export const TERMINAL_ENTRY_STATUSES: readonly EntryStatus[] = ['COMPLETED', 'FAILED', 'CANCELLED']

export const RUN_STATUSES = [
  'PREPARING',
  'WAITING_CAPACITY',
  'GENERATING',
  'REQUIRES_ACTION',
  'VALIDATING',
  'REPAIRING',
  'COMPLETED',
  'FAILED',
  'ABORTED',
] as const
export type RunStatus = (typeof RUN_STATUSES)[number]

/** Why a run ended. */
const TERMINAL_REASONS = [
  'COMPLETED',
  'ERROR',
  'ABORTED',
  'CANCELLED',
  'SUPERSEDED',
  'SHUTDOWN',
  'INTERRUPTED',
  'STALE',
  'NO_PROGRESS',
  'TOOL_TIMEOUT',
] as const
export type TerminalReason = (typeof TERMINAL_REASONS)[number]

/** Why the model's answer ended, the same for every vendor. */
/** Which surface admitted a run: GraphQL, or the OpenAI API's Chat Completions. */
export type RunOrigin = 'GRAPHQL' | 'OPENAI_CHAT' | 'OPENAI_RESPONSES' | 'MCP' | 'AG_UI' | 'EXPERIMENT'

const FINISH_REASONS = ['STOP', 'LENGTH', 'TOOL_CALLS', 'CONTENT_FILTER', 'REFUSAL', 'OTHER'] as const
export type FinishReason = (typeof FINISH_REASONS)[number]

/** How a model call's answer ended: ours, the vendor's own word, and what it said instead of answering. */
export interface Finish {
  reason: FinishReason
  /** The vendor's value (`stop`, `end_turn`, `max_tokens`, …); null when it sent none. */
  vendorReason: string | null
  /** The refusal text, where the vendor sends it apart from the answer (OpenAI's `refusal`). */
  refusal: string | null
}

/** What a queue entry asks to run, as admitted. */
export interface RunRequest {
  promptId: string | null
  input: string | null
  variables: Record<string, unknown> | null
  profileId: string | null
  overrides: SettingsLayer | null
  credentialEnv: string | null
  /** Where the run's end is posted: the admission's own, else its session's; absent when neither names one. */
  webhookUrl?: string | null
  /** The request's own tools, over the prompt's and the profile's; absent when it declares none. */
  tools?: ToolLayer | null
  /** Which version of the prompt: a number, or a label's (absent: `production` when set, else the newest). */
  promptVersion?: number
  promptLabel?: string
  /** The caller's tags, recorded on the run; absent when none. */
  tags?: string[]
  /** The request's layer of the response cache; absent when it sets none. */
  cache?: ResponseCacheLayer
  /** Images, files and more text for the user message (the plain input, or the prompt's last user message); absent when none. */
  parts?: ContentPart[]
  /** A conversation given whole (the OpenAI surfaces'): it follows the prompt's messages, its leading system messages joining theirs; absent when none. */
  messages?: ChatMessage[]
  /** The request's own output contract, over the prompt's (the OpenAI surfaces' response formats); absent when none. */
  output?: OutputContract
  /** The run whose request this one replays; absent otherwise. */
  replayOf?: string
  /** Fixed at admission, kept with the entry: a queued or recovered entry runs what it was admitted with. */
  admission?: AdmissionFacts
}

/** What admission resolved a request to, and who admitted it. */
export interface AdmissionFacts {
  /** The prompt version resolved (null for a plain input). */
  promptVersion: number | null
  /** The label that chose it, `latest` included; null when a version was named or there is no prompt. */
  promptLabel: string | null
  /** For a split label: the session's bucket (0-99). */
  splitBucket: number | null
  /** The API key that admitted it (its id); null where keys are off. */
  keyId: string | null
  /** The surface that admitted it; absent: GraphQL. */
  origin?: RunOrigin
  /** The versions the prompt's includes were resolved to; absent when it has none. */
  includes?: PromptInclude[]
  /** The entry reserved its largest possible cost against cost budgets; its end settles that. */
  budgetReserved?: true
  /** The admitting key's tokens-per-minute limit: the run's tokens count against it as it ends. */
  tokensPerMinute?: number
  /** The admitting key's concurrentRuns: the run starts once it holds one of the key's slots. */
  concurrentRuns?: number
}

export interface SessionRecord {
  tenantId: string
  id: string
  title: string | null
  defaultProfileId: string | null
  metadata: unknown
  /** False: each prompt stands alone and nothing is added to the conversation. */
  keepHistory: boolean
  /** Where its runs' ends are posted unless a prompt names its own; null: nowhere. */
  webhookUrl: string | null
  /** The session it was forked from, and the last message copied; null when it was created. */
  forkedFrom: SessionFork | null
  createdAt: string
  updatedAt: string
}

export interface SessionFork {
  sessionId: string
  atPosition: number
}

export interface MessageRecord {
  id: string
  sessionId: string
  position: number
  role: MessageRole
  content: string
  /** Images, files and more text after the content; empty for plain text. */
  parts: ContentPart[]
  /** An assistant message's tool calls; empty otherwise. */
  toolCalls: ToolCall[]
  /** A TOOL message: the call it answers. */
  toolCallId: string | null
  runId: string | null
  interrupted: boolean
  createdAt: string
}

export interface QueueEntryRecord {
  queueId: string
  tenantId: string
  sessionId: string
  queueSequence: number
  priority: number
  status: EntryStatus
  request: RunRequest
  requestBytes: number
  scheduleKey: string | null
  fireAt: string | null
  runId: string | null
  error: { code: string; message: string } | null
  unappliedSteerIds: string[]
  /** The client's key for retrying this admission safely; null when none was given. */
  idempotencyKey: string | null
  /** sha256 of what was asked with that key: the same key with another request is refused. */
  idempotencyHash: string | null
  queuedAt: string
  startedAt: string | null
  finishedAt: string | null
}

/** Token counts, normalized across vendors. */
export interface Usage {
  /** Every input token, the cached ones (read or written) among them. */
  inputTokens: number
  outputTokens: number
  /** Input tokens read from the vendor's prompt cache. */
  cacheReadTokens: number
  /** Input tokens written to the vendor's prompt cache. */
  cacheWriteTokens: number
  /** Output tokens spent on reasoning (counted in outputTokens too). */
  reasoningTokens: number
}

/** A usage with the given counts, the others 0. */
export const usageOf = (counts: Partial<Usage> = {}): Usage => ({
  inputTokens: 0,
  outputTokens: 0,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  reasoningTokens: 0,
  ...counts,
})

/** Adds `more` into `total`. */
export function addUsage(total: Usage, more: Usage): void {
  total.inputTokens += more.inputTokens
  total.outputTokens += more.outputTokens
  total.cacheReadTokens += more.cacheReadTokens
  total.cacheWriteTokens += more.cacheWriteTokens
  total.reasoningTokens += more.reasoningTokens
}

/** One try of one candidate during a run. */
export interface FailoverAttempt {
  profileId: string
  backendId: string
  model: string
  outcome: 'SUCCEEDED' | 'FAILED' | 'SKIPPED' | 'STREAM_INTERRUPTED'
  /** Why it failed or was skipped: RATE_LIMITED, OVERLOADED, SERVER_ERROR, NETWORK, UNAUTHORIZED, NO_CREDENTIALS, … */
  errorCode: string | null
  durationMs: number
  /** 1 for the first call to this candidate, 2 for its first retry, …; 0 when skipped. */
  attempt: number
}

export interface OutputValidation {
  valid: boolean
  errors: string[]
  /** Generations made: 1 + repairs. */
  attempts: number
}

/** An answer of a parallel prompt that was not selected. */
export interface Alternative {
  profileId: string
  backendId: string
  model: string
  status: 'COMPLETED' | 'FAILED' | 'ABORTED'
  output: string
  /** Null when it never got to validation. */
  valid: boolean | null
  errorCode: string | null
  errorMessage: string | null
}

export interface RunRecord {
  id: string
  tenantId: string
  sessionId: string | null
  queueId: string | null
  status: RunStatus
  promptId: string | null
  promptVersion: number | null
  profileId: string | null
  backendId: string | null
  model: string | null
  definitionHash: string | null
  renderedHash: string | null
  /** Effective settings, already redacted. */
  settings: unknown
  output: string | null
  parsedOutput: unknown
  validation: OutputValidation | null
  failoverAttempts: FailoverAttempt[]
  alternatives: Alternative[]
  usage: Usage | null
  /** USD, from the catalog's prices; null when a model used has no price. */
  costUsd: number | null
  /** Where costUsd's prices came from: `genai-prices <version>`, `catalog`, or both; null without a cost. */
  priceTable: string | null
  startedAt: string
  firstTokenAt: string | null
  finishedAt: string | null
  heartbeatAt: string | null
  /** Since when a model call of the run is open; null between calls (the reaper grants such a run a grace). */
  inFlightSince: string | null
  errorCode: string | null
  errorMessage: string | null
  terminalReason: TerminalReason | null
  /** How the selected answer's last model call ended; null until it did. */
  finishReason: FinishReason | null
  vendorFinishReason: string | null
  refusal: string | null
  /** The thinking of the selected answer's last model call, where the vendor sent it. */
  reasoning: Reasoning | null
  /** The run's rounds of tool calls, the last one pending while REQUIRES_ACTION. */
  toolRounds: ToolRound[]
  /** The label that chose its prompt version (`latest` included); null when a version was named. */
  promptLabel: string | null
  /** A split label's bucket (0-99) for the run's session; null otherwise. */
  splitBucket: number | null
  /** The API key that admitted it (its id); null where keys are off. */
  keyId: string | null
  /** The surface that admitted it. */
  origin: RunOrigin
  tags: string[]
  /** The run whose stored request this one replays. */
  replayOf: string | null
  /** The prompt versions its prompt's includes stood for. */
  includes: PromptInclude[]
  /** How the answering candidate enforced the output contract: NATIVE or VALIDATE; null for TEXT (or before one answered). */
  outputEnforcement: 'NATIVE' | 'VALIDATE' | null
  /** What the response cache made of it; null when it asked for none. */
  cache: RunCache | null
}

/** A run that asked the response cache: a hit answers from an earlier run, at no cost of its own. */
export interface RunCache {
  hit: boolean
  /** The run whose answer a hit replays. */
  sourceRunId: string | null
  /** How old the cached answer was. */
  ageMs: number | null
  /** What the source run used and cost: shown apart, never counted again. */
  sourceUsage: Usage | null
  sourceCostUsd: number | null
}

/** The model's thinking before its answer, as the vendor sent it. */
export interface Reasoning {
  text: string
  /** Anthropic's signature, which the vendor asks back with the thinking when a turn is replayed to it. */
  signature: string | null
}

/** Who says a message of a conversation: a template's roles, and a tool's result. */
export type MessageRole = Role | 'tool'

/** One message of a conversation as a model receives it. */
export interface ChatMessage {
  role: MessageRole
  content: string
  /** Images, files and more text, sent after the content; absent for plain text. */
  parts?: ContentPart[]
  /** An assistant message's tool calls. */
  toolCalls?: ToolCall[]
  /** A tool message: the call it answers. */
  toolCallId?: string
  /** A tool message: the tool failed, and its content says how. */
  isError?: boolean
  /** The thinking before an assistant message's tool calls, replayed to the vendor that needs it. */
  reasoning?: Reasoning | null
}

export interface RunFilter {
  sessionId?: string | null
  status?: RunStatus | null
  promptId?: string | null
  promptVersion?: number | null
  promptLabel?: string | null
  tag?: string | null
}

/** Where a page of runs starts: after this (startedAt, id), newest first. */
export interface RunCursor {
  startedAt: string
  id: string
}

/** What to do with a prompt that arrives while its session is busy. */
export type WhenBusy = 'ENQUEUE' | 'REJECT' | 'INTERRUPT' | 'ROLLBACK'

export type SessionStatus = 'IDLE' | 'RUNNING' | 'SCHEDULED'

/** An entry with its place in line: 0 = running, 1 = next, …; null when scheduled or finished. */
export type QueueEntryView = QueueEntryRecord & { position: number | null }
