/** Admission limits; every one answers QueueFullError when exceeded. */
export interface QueueLimits {
  /** Outstanding prompts (queued, scheduled, running) plus unapplied steers, per session. */
  maxOutstandingPerSession: number
  /** Bytes of those, per session. */
  maxOutstandingBytesPerSession: number
  /** Admitted prompts not yet started, server-wide. */
  maxPendingAdmissions: number
  /** Bytes of those, server-wide. */
  maxPendingBytes: number
  /** Terminal entries kept per session, oldest dropped first (pruned in batches: up to a tenth more may linger). */
  retainedTerminalPerSession: number
  /** How long an idempotency key keeps answering with its entry (ms); later the key may admit anew. */
  idempotencyTtlMs: number
}

export const DEFAULT_QUEUE_LIMITS: QueueLimits = {
  maxOutstandingPerSession: 16,
  maxOutstandingBytesPerSession: 64 * 1024 * 1024,
  maxPendingAdmissions: 64,
  maxPendingBytes: 128 * 1024 * 1024,
  retainedTerminalPerSession: 100,
  idempotencyTtlMs: 24 * 60 * 60 * 1000,
}

/** What one request may ask of the server: its work is bounded. */
export interface RequestLimits {
  /** Nesting of selections, fragments flattened. */
  maxDepth: number
  /** Aliases in one operation: each would run its field again. */
  maxAliases: number
  maxDirectives: number
  /** Lexical tokens of a document, checked while parsing, so a huge or deeply nested one costs nothing. */
  maxTokens: number
  /** GraphQL Armor's cost: objects and scalars, weighted by depth. */
  maxCost: number
  /** Bytes of an HTTP request body or a WebSocket message. */
  maxBodyBytes: number
  /** Subscriptions one key may hold open at once; past that, RATE_LIMITED. */
  subscriptionsPerKey: number
  /** Mutations one key may send per second (a short window keeps the count cheap); past that, RATE_LIMITED. */
  mutationsPerSecond: number
  /**
   * OpenAI API (`/v1`) requests this instance answers at once, a stream until it ends; past that,
   * 503 with Retry-After: over capacity a client is told at once, rather than every answer slowing.
   */
  apiRequestsInFlight: number
  /** False: no introspection, no GraphiQL, no field suggestions in errors. */
  publicSchema: boolean
}

export const DEFAULT_REQUEST_LIMITS: RequestLimits = {
  maxDepth: 10,
  maxAliases: 15,
  maxDirectives: 20,
  maxTokens: 5_000,
  maxCost: 5_000,
  maxBodyBytes: 2 * 1024 * 1024,
  mutationsPerSecond: 200,
  apiRequestsInFlight: 128,
  subscriptionsPerKey: 100,
  publicSchema: true,
}

/** How live runs show they are alive, and when the reaper ends those that do not. */
export interface DurabilityTimes {
  /** How often a live run writes its heartbeat (and its last progress). */
  heartbeatMs: number
  /** A run whose heartbeat is older than this is ended FAILED/STALE. */
  staleMs: number
  /** Extra time a run with an open model call gets past `staleMs`. */
  inFlightGraceMs: number
  /** A run that heartbeats but makes no progress (token, steer, repair) this long is stopped (NO_PROGRESS). */
  noProgressMs: number
  /** How often every instance looks for stale runs (it also looks at start); half of `staleMs` unless set. */
  reapIntervalMs: number
}

export const DEFAULT_DURABILITY_TIMES: DurabilityTimes = {
  heartbeatMs: 5_000,
  staleMs: 30_000,
  inFlightGraceMs: 30_000,
  noProgressMs: 300_000,
  reapIntervalMs: 15_000,
}

/** The times `partial` sets, the rest the defaults'; the reaper looks twice per stale bound unless told otherwise. */
export function durabilityTimes(partial: Partial<DurabilityTimes> = {}): DurabilityTimes {
  const staleMs = partial.staleMs ?? DEFAULT_DURABILITY_TIMES.staleMs
  return { ...DEFAULT_DURABILITY_TIMES, reapIntervalMs: Math.max(10, Math.round(staleMs / 2)), ...partial }
}

/** What uploads (POST /files) may be: the largest file, and how long one is kept. */
export interface FileLimits {
  maxFileBytes: number
  retentionMs: number
}

export const DEFAULT_FILE_LIMITS: FileLimits = { maxFileBytes: 20 * 1024 * 1024, retentionMs: 30 * 86_400_000 }
