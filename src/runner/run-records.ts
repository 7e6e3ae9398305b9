import { randomUUID } from 'node:crypto'
import type { ErrorCode } from '../domain/errors.js'
import { advanceEntry, advanceRun, entryStatusOf, isTerminalEntry } from '../domain/lifecycles.js'
import type { QueueEntryRecord, RunRecord } from '../domain/records.js'
import type { RunEnding } from './run-recorder.js'

const now = () => new Date().toISOString()

/** The run as `ending` ends it, before it is written. */
export function endedRecord(run: Readonly<RunRecord>, ending: RunEnding): RunRecord {
  const ended = { ...run }
  advanceRun(ended, ending.status)
  return Object.assign(ended, {
    terminalReason: ending.terminalReason,
    errorCode: ending.errorCode,
    errorMessage: ending.errorMessage,
    finishedAt: now(),
    inFlightSince: null,
  } satisfies Partial<RunRecord>)
}

/** How a run ends whose end found the disk full: FAILED, its answer kept on the row but not in the conversation. */
export const noRoomEnding = (ending: RunEnding): RunEnding => ({
  ...ending,
  status: 'FAILED',
  terminalReason: 'ERROR',
  errorCode: 'STORAGE_FULL' satisfies ErrorCode,
  errorMessage: 'the disk was full when the run ended; its answer is not in the conversation',
  transcript: [],
  history: 'NONE',
})

/** Moves an entry to the end that mirrors its run's. */
export function endEntry(entry: QueueEntryRecord, run: RunRecord, unappliedSteerIds: string[]): QueueEntryRecord {
  if (!isTerminalEntry(entry.status)) advanceEntry(entry, entryStatusOf(run))
  entry.finishedAt = run.finishedAt ?? now()
  entry.error = run.errorCode ? { code: run.errorCode, message: run.errorMessage ?? '' } : null
  entry.unappliedSteerIds = unappliedSteerIds
  return entry
}

/** The record of a run that starts now for `entry`. */
export function newRunRecord(entry: QueueEntryRecord): RunRecord {
  return {
    id: randomUUID(),
    tenantId: entry.tenantId,
    sessionId: entry.sessionId,
    queueId: entry.queueId,
    status: 'PREPARING',
    promptId: entry.request.promptId,
    promptVersion: null,
    profileId: null,
    backendId: null,
    model: null,
    definitionHash: null,
    renderedHash: null,
    settings: {},
    output: null,
    parsedOutput: null,
    validation: null,
    failoverAttempts: [],
    alternatives: [],
    usage: null,
    costUsd: null,
    priceTable: null,
    startedAt: now(),
    firstTokenAt: null,
    finishedAt: null,
    heartbeatAt: now(),
    inFlightSince: null,
    errorCode: null,
    errorMessage: null,
    terminalReason: null,
    finishReason: null,
    vendorFinishReason: null,
    refusal: null,
    reasoning: null,
    toolRounds: [],
    promptLabel: entry.request.admission?.promptLabel ?? null,
    splitBucket: entry.request.admission?.splitBucket ?? null,
    keyId: entry.request.admission?.keyId ?? null,
    origin: entry.request.admission?.origin ?? 'GRAPHQL',
    tags: entry.request.tags ?? [],
    replayOf: entry.request.replayOf ?? null,
    includes: entry.request.admission?.includes ?? [],
    outputEnforcement: null,
    cache: null,
  }
}
