import { z } from 'zod'
import { boundedJsonObject, jsonOutOfBounds } from './json-bounds.js'

/** A named set of inputs for experiments; each change of its items makes a new version. */
export interface Dataset {
  id: string
  description: string | null
  /** Its newest version; 0 before any item was added. */
  version: number
  createdAt: string
}

/** One version of a dataset. */
export interface DatasetVersion {
  version: number
  itemCount: number
  createdAt: string
}

/** What an item holds: a run's variables and input, and what its answer should be. */
export interface DatasetItemContent {
  variables: Record<string, unknown>
  input: string | null
  expected: unknown
  metadata: Record<string, unknown> | null
  /** The run it was taken from (addRunToDataset); null for an item given whole. */
  sourceRunId: string | null
}

/** An item as stored: never changed, in the versions from `addedIn` on until one removes it. */
export interface DatasetItem extends DatasetItemContent {
  id: string
  /** Its place in the order items were added. */
  position: number
  addedIn: number
}

/** The most items one request adds (a JSON Lines import included). */
export const MAX_ITEMS_PER_VERSION = 10_000

/** Any JSON value within the bounds a client may send in one field. */
export const anyBoundedJson = z.unknown().superRefine((value, ctx) => {
  const problem = jsonOutOfBounds(value)
  if (problem) ctx.addIssue({ code: 'custom', message: problem })
})

/** One item as a client gives it (GraphQL's DatasetItemInput, or a line of a JSON Lines import). */
export const datasetItemSchema = z
  .strictObject({
    variables: boundedJsonObject(),
    input: z
      .string()
      .max(256 * 1024)
      .nullish(),
    expected: anyBoundedJson.nullish(),
    metadata: boundedJsonObject().nullish(),
  })
  .transform(
    (item): DatasetItemContent => ({
      variables: item.variables,
      input: item.input ?? null,
      expected: item.expected ?? null,
      metadata: item.metadata ?? null,
      sourceRunId: null,
    }),
  )

/** The line an item exports as, and imports from: the fields a client gives, and the item's id. */
export const itemLine = (item: DatasetItem): string =>
  JSON.stringify({ id: item.id, variables: item.variables, input: item.input, expected: item.expected, metadata: item.metadata })
