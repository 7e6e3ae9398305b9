import type { Prisma } from '@db/client'
import type { z } from 'zod'
import { TERMINAL_RUN_STATUSES } from '../domain/lifecycles.js'
import type {
  FinishReason,
  RunCursor,
  RunFilter,
  RunOrigin,
  RunRecord,
  RunRequest,
  RunStatus,
  TerminalReason,
  Usage,
} from '../domain/records.js'
import type { Db } from './database.js'
import { parsedColumn } from './json-columns.js'
import { RUN_JSON } from './run-json-columns.js'
import type { RunPathStatements } from './run-path-statements.js'

const select = {
  id: true,
  tenantId: true,
  sessionId: true,
  queueId: true,
  status: true,
  promptId: true,
  promptVersion: true,
  profileId: true,
  backendId: true,
  model: true,
  definitionHash: true,
  renderedHash: true,
  settings: true,
  output: true,
  parsedOutput: true,
  validation: true,
  failoverAttempts: true,
  alternatives: true,
  costUsd: true,
  priceTable: true,
  inputTokens: true,
  outputTokens: true,
  cacheReadTokens: true,
  cacheWriteTokens: true,
  reasoningTokens: true,
  startedAt: true,
  firstTokenAt: true,
  finishedAt: true,
  heartbeatAt: true,
  inFlightSince: true,
  errorCode: true,
  errorMessage: true,
  terminalReason: true,
  finishReason: true,
  vendorFinishReason: true,
  refusal: true,
  reasoning: true,
  toolRounds: true,
  promptLabel: true,
  splitBucket: true,
  keyId: true,
  origin: true,
  tags: true,
  replayOf: true,
  includes: true,
  outputEnforcement: true,
  cache: true,
} satisfies Prisma.RunSelect

type Row = Prisma.RunGetPayload<{ select: typeof select }>
const iso = (d: Date | null) => (d ? d.toISOString() : null)

function toRecord(row: Row): RunRecord {
  const {
    inputTokens,
    outputTokens,
    cacheReadTokens,
    cacheWriteTokens,
    reasoningTokens,
    validation,
    failoverAttempts,
    alternatives,
    reasoning,
    toolRounds,
    tags,
    includes,
    outputEnforcement,
    cache,
    ...rest
  } = row
  const json = <K extends keyof typeof RUN_JSON>(column: K, value: unknown) =>
    parsedColumn(RUN_JSON[column], value, `Run.${column}`, row.id) as z.output<(typeof RUN_JSON)[K]>
  return {
    ...rest,
    validation: json('validation', validation),
    failoverAttempts: json('failoverAttempts', failoverAttempts) ?? [],
    alternatives: json('alternatives', alternatives) ?? [],
    reasoning: json('reasoning', reasoning),
    toolRounds: json('toolRounds', toolRounds) ?? [],
    tags: json('tags', tags) ?? [],
    includes: json('includes', includes) ?? [],
    outputEnforcement: outputEnforcement as RunRecord['outputEnforcement'],
    cache: json('cache', cache),
    origin: (row.origin ?? 'GRAPHQL') as RunOrigin,
    status: row.status as RunStatus,
    terminalReason: row.terminalReason as TerminalReason | null,
    finishReason: row.finishReason as FinishReason | null,
    usage:
      inputTokens === null || outputTokens === null
        ? null
        : {
            inputTokens,
            outputTokens,
            cacheReadTokens: cacheReadTokens ?? 0,
            cacheWriteTokens: cacheWriteTokens ?? 0,
            reasoningTokens: reasoningTokens ?? 0,
          },
    startedAt: row.startedAt.toISOString(),
    firstTokenAt: iso(row.firstTokenAt),
    finishedAt: iso(row.finishedAt),
    heartbeatAt: iso(row.heartbeatAt),
    inFlightSince: iso(row.inFlightSince),
  }
}

/** Usage and cost summed over runs. */
export type Totals = Usage & { costUsd: number | null }

const SUMMED = {
  inputTokens: true,
  outputTokens: true,
  cacheReadTokens: true,
  cacheWriteTokens: true,
  reasoningTokens: true,
  costUsd: true,
} as const
/** Runs that used tokens on a model without a price. */
const UNPRICED = { costUsd: null, OR: [{ inputTokens: { gt: 0 } }, { outputTokens: { gt: 0 } }] } satisfies Prisma.RunWhereInput

type Sums = Partial<Record<keyof typeof SUMMED, number | null>>
const toTotals = (sums: Sums, unpriced: number): Totals => ({
  inputTokens: sums.inputTokens ?? 0,
  outputTokens: sums.outputTokens ?? 0,
  cacheReadTokens: sums.cacheReadTokens ?? 0,
  cacheWriteTokens: sums.cacheWriteTokens ?? 0,
  reasoningTokens: sums.reasoningTokens ?? 0,
  costUsd: unpriced > 0 ? null : (sums.costUsd ?? 0),
})

/** Durable run records: a live run's writes on the driver (Kysely), reads with Prisma's typed API. */
export class RunStore {
  constructor(
    private readonly db: Db,
    private readonly statements: RunPathStatements,
  ) {}

  /** Writes the run as it is now, unless it has ended meanwhile (a reaper's end is never overwritten). */
  async update(run: RunRecord): Promise<void> {
    await this.statements.updateRun(run)
  }

  /** Marks a live run alive (and when it last progressed); false when it has ended meanwhile (a reaper ended it). */
  heartbeat(id: string, at: Date, lastProgressAt: Date): Promise<boolean> {
    return this.statements.heartbeat(id, at, lastProgressAt)
  }

  /**
   * Live runs whose heartbeat is older than `staleBefore`, or, with a model call open, older
   * than `inFlightStaleBefore` (the bounded grace). Across tenants, oldest first.
   */
  async stale(staleBefore: Date, inFlightStaleBefore: Date, take: number): Promise<RunRecord[]> {
    const rows = await this.db.run.findMany({
      where: {
        status: { notIn: [...TERMINAL_RUN_STATUSES] },
        OR: [{ inFlightSince: null, heartbeatAt: { lt: staleBefore } }, { heartbeatAt: { lt: inFlightStaleBefore } }],
        // a session's run waiting for tool results outlives its server: whoever takes the session resumes it
        NOT: { status: 'REQUIRES_ACTION', sessionId: { not: null } },
      },
      orderBy: { heartbeatAt: 'asc' },
      take,
      select,
    })
    return rows.map(toRecord)
  }

  /** The request a run ran, as its entry held it when it started; null when it is not kept. */
  async requestOf(tenantId: string, id: string): Promise<RunRequest | null> {
    const row = await this.db.run.findFirst({ where: { tenantId, id }, select: { request: true } })
    return (row?.request as RunRequest | null | undefined) ?? null
  }

  async find(tenantId: string, id: string): Promise<RunRecord | null> {
    const row = await this.db.run.findFirst({ where: { tenantId, id }, select })
    return row && toRecord(row)
  }

  /** The newest run of a queue entry (an entry recovered after a crash runs again). */
  async latestOfEntry(tenantId: string, queueId: string): Promise<RunRecord | null> {
    const row = await this.db.run.findFirst({ where: { tenantId, queueId }, orderBy: { startedAt: 'desc' }, select })
    return row && toRecord(row)
  }

  /** The tenant's runs with these ids, in one query, by id. */
  async findMany(tenantId: string, ids: readonly string[]): Promise<Map<string, RunRecord>> {
    const rows = await this.db.run.findMany({ where: { tenantId, id: { in: [...ids] } }, select })
    return new Map(rows.map((row) => [row.id, toRecord(row)]))
  }

  async list(tenantId: string, filter: RunFilter, after: RunCursor | null, take: number): Promise<RunRecord[]> {
    const rows = await this.db.run.findMany({
      where: {
        tenantId,
        ...(filter.sessionId != null && { sessionId: filter.sessionId }),
        ...(filter.status != null && { status: filter.status }),
        ...(filter.promptId != null && { promptId: filter.promptId }),
        ...(filter.promptVersion != null && { promptVersion: filter.promptVersion }),
        ...(filter.promptLabel != null && { promptLabel: filter.promptLabel }),
        ...(filter.tag != null && { tagRows: { some: { tag: filter.tag } } }),
        ...(after && {
          OR: [{ startedAt: { lt: new Date(after.startedAt) } }, { startedAt: new Date(after.startedAt), id: { lt: after.id } }],
        }),
      },
      orderBy: [{ startedAt: 'desc' }, { id: 'desc' }],
      take,
      select,
    })
    return rows.map(toRecord)
  }

  /** Usage and cost summed over a tenant's runs; cost is null when any run with usage has none. */
  async totals(tenantId: string): Promise<Totals> {
    const [sums, unpriced] = await Promise.all([
      this.db.run.aggregate({ where: { tenantId }, _sum: SUMMED }),
      this.db.run.count({ where: { tenantId, ...UNPRICED } }),
    ])
    return toTotals(sums._sum, unpriced)
  }

  /** The same, for each of a tenant's sessions, in two grouped queries whatever their number. */
  async totalsBySession(tenantId: string, sessionIds: readonly string[]): Promise<Totals[]> {
    const where = { tenantId, sessionId: { in: [...sessionIds] } }
    const [sums, unpriced] = await Promise.all([
      this.db.run.groupBy({ by: ['sessionId'], where, _sum: SUMMED }),
      this.db.run.groupBy({ by: ['sessionId'], where: { ...where, ...UNPRICED }, _count: { _all: true } }),
    ])
    const summed = new Map(sums.map((row) => [row.sessionId, row._sum]))
    const unpricedBySession = new Map(unpriced.map((row) => [row.sessionId, row._count._all]))
    return sessionIds.map((id) => toTotals(summed.get(id) ?? {}, unpricedBySession.get(id) ?? 0))
  }

  /** What a tenant's runs started since `since` used: tokens and cost (unpriced runs count no cost). */
  async usageSince(tenantId: string, since: Date): Promise<{ tokens: number; cost: number }> {
    const sums = await this.db.run.aggregate({
      where: { tenantId, startedAt: { gte: since } },
      _sum: { inputTokens: true, outputTokens: true, costUsd: true },
    })
    return { tokens: (sums._sum.inputTokens ?? 0) + (sums._sum.outputTokens ?? 0), cost: sums._sum.costUsd ?? 0 }
  }

  /** Runs not yet terminal, across tenants (at start-up) or of one session (when it is taken over). */
  async unfinished(of: { tenantId: string; sessionId: string } | null = null): Promise<RunRecord[]> {
    const rows = await this.db.run.findMany({ where: { status: { notIn: [...TERMINAL_RUN_STATUSES] }, ...of }, select })
    return rows.map(toRecord)
  }
}
