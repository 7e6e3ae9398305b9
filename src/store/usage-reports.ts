import { type ExpressionBuilder, type SelectQueryBuilder, sql } from 'kysely'
import { MAX_USAGE_GROUPS, type UsageDimension, type UsageGroup, type UsageGroupKey, type UsageQuery } from '../domain/usage-report.js'
import type { DB } from '../generated/kysely/tables.js'
import type { Provider } from './database.js'
import type { Sql } from './sql-dialects.js'

type Tables = DB & { r: DB['Run']; t: DB['RunTag'] }
type Scope = ExpressionBuilder<Tables, 'r' | 't'>
// biome-ignore lint/complexity/noBannedTypes: Kysely's type of a query that selects nothing yet
type RunsWithTags = SelectQueryBuilder<Tables, 'r' | 't', {}>

/** The column (or expression) each dimension groups by, named as the key field it fills. */
function dimension(dim: UsageDimension, eb: Scope, postgres: boolean) {
  switch (dim) {
    case 'PROMPT':
      return eb.ref('r.promptId').as('promptId')
    case 'VERSION':
      return eb.ref('r.promptVersion').as('promptVersion')
    case 'LABEL':
      return eb.ref('r.promptLabel').as('promptLabel')
    case 'PROFILE':
      return eb.ref('r.profileId').as('profileId')
    case 'MODEL':
      return eb.ref('r.model').as('model')
    case 'KEY':
      return eb.ref('r.keyId').as('keyId')
    case 'TAG':
      return eb.ref('t.tag').as('tag')
    case 'DAY':
      // the UTC day: PostgreSQL keeps a timestamp without zone, SQLite ISO text
      return (
        postgres ? sql<string>`to_char(${eb.ref('r.startedAt')}, 'YYYY-MM-DD')` : sql<string>`substr(${eb.ref('r.startedAt')}, 1, 10)`
      ).as('day')
  }
}

interface Row extends UsageGroupKey {
  runs: bigint | number
  inputTokens: bigint | number | string | null
  outputTokens: bigint | number | string | null
  cacheReadTokens: bigint | number | string | null
  cacheWriteTokens: bigint | number | string | null
  reasoningTokens: bigint | number | string | null
  costUsd: number | string | null
  unpriced: bigint | number | string | null
}

const count = (value: bigint | number | string | null) => Number(value ?? 0)

/**
 * Usage of a tenant's runs grouped in the database: one GROUP BY over the runs started in the
 * window (joined to their tags when grouped by tag), built by Kysely, so no run is loaded.
 */
export class UsageReports {
  constructor(
    private readonly sql: Sql,
    private readonly provider: Provider,
  ) {}

  async report(tenantId: string, query: UsageQuery): Promise<{ groups: UsageGroup[]; truncated: boolean }> {
    const postgres = this.provider === 'postgresql'
    const byTag = query.groupBy.includes('TAG')
    const runs = this.sql.selectFrom('Run as r')
    // a run counts once per tag when grouped by tag; otherwise no column of `t` is referenced
    const from: RunsWithTags = byTag ? runs.innerJoin('RunTag as t', 't.runId', 'r.id') : (runs as unknown as RunsWithTags)
    const positions = query.groupBy.map((_, i) => sql.raw(String(i + 1)))
    const statement = from
      .where('r.tenantId', '=', tenantId)
      .where('r.startedAt', '>=', query.from)
      .where('r.startedAt', '<', query.to)
      .select((eb) => [
        ...query.groupBy.map((dim) => dimension(dim, eb, postgres)),
        eb.fn.countAll().as('runs'),
        eb.fn.sum('r.inputTokens').as('inputTokens'),
        eb.fn.sum('r.outputTokens').as('outputTokens'),
        eb.fn.sum('r.cacheReadTokens').as('cacheReadTokens'),
        eb.fn.sum('r.cacheWriteTokens').as('cacheWriteTokens'),
        eb.fn.sum('r.reasoningTokens').as('reasoningTokens'),
        eb.fn.sum('r.costUsd').as('costUsd'),
        // a run that used tokens on a model without a price makes its group's cost unknown
        eb.fn
          .sum(
            eb
              .case()
              .when(eb.and([eb('r.costUsd', 'is', null), eb.or([eb('r.inputTokens', '>', 0), eb('r.outputTokens', '>', 0)])]))
              .then(1)
              .else(0)
              .end(),
          )
          .as('unpriced'),
      ])
      // grouped and ordered by the dimensions' positions in the select list
      .$if(positions.length > 0, (q) => positions.reduce((ordered, position) => ordered.orderBy(position), q.groupBy(positions)))
      .limit(MAX_USAGE_GROUPS + 1)
    const rows = await statement.$castTo<Row>().execute()
    const groups = rows.slice(0, MAX_USAGE_GROUPS).map((row) => toGroup(row, query.groupBy))
    return { groups, truncated: rows.length > MAX_USAGE_GROUPS }
  }
}

const KEY_FIELDS: Record<UsageDimension, keyof UsageGroupKey> = {
  PROMPT: 'promptId',
  VERSION: 'promptVersion',
  LABEL: 'promptLabel',
  PROFILE: 'profileId',
  MODEL: 'model',
  KEY: 'keyId',
  TAG: 'tag',
  DAY: 'day',
}

function toGroup(row: Row, groupBy: readonly UsageDimension[]): UsageGroup {
  const key: UsageGroupKey = {}
  for (const dim of groupBy) {
    const field = KEY_FIELDS[dim]
    const value = row[field] ?? null
    Object.assign(key, { [field]: field === 'promptVersion' && value !== null ? Number(value) : value })
  }
  return {
    key,
    runs: count(row.runs),
    usage: {
      inputTokens: count(row.inputTokens),
      outputTokens: count(row.outputTokens),
      cacheReadTokens: count(row.cacheReadTokens),
      cacheWriteTokens: count(row.cacheWriteTokens),
      reasoningTokens: count(row.reasoningTokens),
    },
    costUsd: count(row.unpriced) > 0 ? null : Number(row.costUsd ?? 0),
  }
}
