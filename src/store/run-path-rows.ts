import type { Insertable, Updateable } from 'kysely'
import type { SessionEvent } from '../domain/events.js'
import type { MessageRecord, QueueEntryRecord, RunRecord } from '../domain/records.js'
import type { WebhookDelivery } from '../domain/webhooks.js'
import type { DB } from '../generated/kysely/tables.js'

// The rows the run path writes with Kysely. A JSON column holds the value's JSON text, as
// Prisma writes it (both providers parse it back); null is SQL NULL. Times are Dates: each
// dialect binds them as Prisma stores them.

/** A JSON column's value. */
export const json = (value: unknown) => JSON.stringify(value)
/** A nullable JSON column's value: SQL NULL for null or an empty list. */
const jsonOrNull = (value: unknown) =>
  value === null || value === undefined || (Array.isArray(value) && value.length === 0) ? null : JSON.stringify(value)
const date = (iso: string | null) => (iso ? new Date(iso) : null)

/** The columns a run's writes set (all but its identity). */
export function runColumns(run: RunRecord) {
  return {
    status: run.status,
    promptId: run.promptId,
    promptVersion: run.promptVersion,
    promptLabel: run.promptLabel,
    splitBucket: run.splitBucket,
    includes: jsonOrNull(run.includes),
    profileId: run.profileId,
    backendId: run.backendId,
    model: run.model,
    definitionHash: run.definitionHash,
    renderedHash: run.renderedHash,
    settings: json(run.settings ?? {}),
    output: run.output,
    parsedOutput: run.parsedOutput === null ? null : json(run.parsedOutput),
    validation: jsonOrNull(run.validation),
    failoverAttempts: json(run.failoverAttempts),
    alternatives: json(run.alternatives),
    costUsd: run.costUsd,
    priceTable: run.priceTable,
    inputTokens: run.usage?.inputTokens ?? null,
    outputTokens: run.usage?.outputTokens ?? null,
    cacheReadTokens: run.usage?.cacheReadTokens ?? null,
    cacheWriteTokens: run.usage?.cacheWriteTokens ?? null,
    reasoningTokens: run.usage?.reasoningTokens ?? null,
    firstTokenAt: date(run.firstTokenAt),
    finishedAt: date(run.finishedAt),
    heartbeatAt: date(run.heartbeatAt),
    inFlightSince: date(run.inFlightSince),
    errorCode: run.errorCode,
    errorMessage: run.errorMessage,
    terminalReason: run.terminalReason,
    finishReason: run.finishReason,
    vendorFinishReason: run.vendorFinishReason,
    refusal: run.refusal,
    reasoning: jsonOrNull(run.reasoning),
    toolRounds: jsonOrNull(run.toolRounds),
    outputEnforcement: run.outputEnforcement,
    cache: jsonOrNull(run.cache),
  } satisfies Updateable<DB['Run']>
}

/** A run's row as its start inserts it. */
export function runRow(run: RunRecord, request: unknown): Insertable<DB['Run']> {
  const { id, tenantId, sessionId, queueId, keyId, tags, replayOf, origin } = run
  return {
    id,
    tenantId,
    sessionId,
    queueId,
    keyId,
    origin: origin === 'GRAPHQL' ? null : origin,
    replayOf,
    startedAt: new Date(run.startedAt),
    tags: jsonOrNull(tags),
    request: json(request),
    ...runColumns(run),
  }
}

/** The columns an entry's writes set (all but its identity). */
export function entryColumns(entry: QueueEntryRecord) {
  return {
    priority: entry.priority,
    status: entry.status,
    request: json(entry.request),
    requestBytes: entry.requestBytes,
    scheduleKey: entry.scheduleKey,
    fireAt: date(entry.fireAt),
    runId: entry.runId,
    errorCode: entry.error?.code ?? null,
    errorMessage: entry.error?.message ?? null,
    unappliedSteerIds: json(entry.unappliedSteerIds),
    startedAt: date(entry.startedAt),
    finishedAt: date(entry.finishedAt),
  } satisfies Updateable<DB['QueueEntry']>
}

/** An entry's row as its admission inserts it. */
export function entryRow(entry: QueueEntryRecord): Insertable<DB['QueueEntry']> {
  return {
    id: entry.queueId,
    tenantId: entry.tenantId,
    sessionId: entry.sessionId,
    queueSequence: entry.queueSequence,
    idempotencyKey: entry.idempotencyKey,
    idempotencyHash: entry.idempotencyHash,
    queuedAt: new Date(entry.queuedAt),
    ...entryColumns(entry),
  }
}

/** A history message's row. */
export function messageRow(tenantId: string, m: MessageRecord): Insertable<DB['Message']> {
  return {
    ...m,
    tenantId,
    parts: jsonOrNull(m.parts),
    toolCalls: jsonOrNull(m.toolCalls),
    createdAt: new Date(m.createdAt),
  }
}

/** An event's row: its own fields in columns, the rest as its payload. */
export function eventRow({ tenantId, sessionId, sequence, runId, at, type, ...payload }: SessionEvent): Insertable<DB['RunEvent']> {
  return { tenantId, sessionId, sequence, runId, type, at: new Date(at), payload: json(payload) }
}

/** A webhook delivery as a run's end inserts it, in its transaction. */
export function deliveryRow(delivery: WebhookDelivery): Insertable<DB['WebhookDelivery']> {
  return {
    ...delivery,
    payload: json(delivery.payload),
    attempts: json(delivery.attempts),
    nextAttemptAt: date(delivery.nextAttemptAt),
    createdAt: new Date(delivery.createdAt),
  }
}
