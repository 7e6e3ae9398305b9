import type { RunCache } from '../domain/records.js'
import { builder } from './builder.js'
import { UsageRef } from './usage.js'

export const RunCacheRef = builder.objectRef<RunCache>('RunCache').implement({
  description:
    "What the exact response cache made of a run that asked for it. A hit is a run of its own: the source's answer replayed as ordinary token events, with zero usage and zero cost of its own, never counted by a budget.",
  fields: (t) => ({
    hit: t.exposeBoolean('hit', { description: 'Whether the answer came from the cache.' }),
    sourceRunId: t.exposeID('sourceRunId', { nullable: true, description: 'A hit: the run whose answer it replays.' }),
    ageMs: t.exposeInt('ageMs', { nullable: true, description: 'A hit: how old the cached answer was.' }),
    sourceUsage: t.field({
      type: UsageRef,
      nullable: true,
      description: "A hit: the source run's usage, shown apart (this run's own usage is zero).",
      resolve: (c) => c.sourceUsage,
    }),
    sourceCost: t.float({
      nullable: true,
      description: "A hit: the source run's cost in USD, shown apart.",
      resolve: (c) => c.sourceCostUsd,
    }),
  }),
})
