import { z } from 'zod'
import type { Usage } from './records.js'

/** What usage can be grouped by: columns of a run, one of its tags, or the (UTC) day it started. */
const USAGE_DIMENSIONS = ['PROMPT', 'VERSION', 'LABEL', 'PROFILE', 'MODEL', 'KEY', 'TAG', 'DAY'] as const
export type UsageDimension = (typeof USAGE_DIMENSIONS)[number]

/** One group's values of the dimensions asked for; the others are absent. */
export interface UsageGroupKey {
  promptId?: string | null
  promptVersion?: number | null
  promptLabel?: string | null
  profileId?: string | null
  model?: string | null
  keyId?: string | null
  tag?: string | null
  day?: string | null
}

export interface UsageGroup {
  key: UsageGroupKey
  runs: number
  usage: Usage
  /** USD; null when a run of the group used tokens on a model without a price. */
  costUsd: number | null
}

/** The most groups one report answers; `truncated` says when there were more. */
export const MAX_USAGE_GROUPS = 5_000
const MAX_SPAN_MS = 366 * 86_400_000

export const usageQuerySchema = z
  .strictObject({
    from: z.date(),
    to: z.date(),
    groupBy: z
      .array(z.enum(USAGE_DIMENSIONS))
      .max(USAGE_DIMENSIONS.length)
      .refine((dims) => new Set(dims).size === dims.length, 'names a dimension twice'),
  })
  .refine((q) => q.from < q.to, { message: 'must be after from', path: ['to'] })
  .refine((q) => q.to.getTime() - q.from.getTime() <= MAX_SPAN_MS, { message: 'a report spans at most 366 days', path: ['to'] })

export type UsageQuery = z.infer<typeof usageQuerySchema>
