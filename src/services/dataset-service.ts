import { z } from 'zod'
import {
  anyBoundedJson,
  type Dataset,
  type DatasetItem,
  type DatasetVersion,
  datasetItemSchema,
  itemLine,
  MAX_ITEMS_PER_VERSION,
} from '../domain/datasets.js'
import { idSchema, parseInput } from '../domain/definitions.js'
import { InvalidRequestError, NotFoundError } from '../domain/errors.js'
import type { VersionOutcome } from '../store/dataset-store.js'
import { UniqueViolation } from '../store/errors.js'
import type { Store } from '../store/store.js'
import { recordIdSchema } from './run-service.js'

const createSchema = z.strictObject({ id: idSchema, description: z.string().max(4096).nullish() })
const addSchema = z.strictObject({ datasetId: idSchema, items: z.array(datasetItemSchema).min(1).max(MAX_ITEMS_PER_VERSION) })
const removeSchema = z.strictObject({ datasetId: idSchema, itemIds: z.array(z.string().min(1).max(64)).min(1).max(MAX_ITEMS_PER_VERSION) })
const addRunSchema = z.strictObject({ datasetId: idSchema, runId: recordIdSchema, expected: anyBoundedJson.nullish() })

/** How many items one export reads at a time. */
const EXPORT_PAGE = 500

/**
 * Datasets for experiments: created empty, then changed only by new versions (items added,
 * taken from a past run, or removed), so an experiment that names a version always reads the
 * same items. JSON Lines import and export.
 */
export class DatasetService {
  constructor(private readonly store: Store) {}

  async create(tenantId: string, input: unknown): Promise<Dataset> {
    const { id, description } = parseInput(createSchema, input, 'input')
    try {
      return await this.store.datasets.create(tenantId, id, description ?? null)
    } catch (error) {
      if (error instanceof UniqueViolation) throw InvalidRequestError.at('input.id', `a dataset '${id}' already exists`)
      throw error
    }
  }

  /** A new version with the items added; answers it once written. */
  async addItems(tenantId: string, input: unknown): Promise<DatasetVersion> {
    const { datasetId, items } = parseInput(addSchema, input, 'input')
    return versionOf(datasetId, await this.store.datasets.addItems(tenantId, datasetId, items))
  }

  /** A new version without the items named; every one must be in the newest version. */
  async removeItems(tenantId: string, input: unknown): Promise<DatasetVersion> {
    const { datasetId, itemIds } = parseInput(removeSchema, input, 'input')
    if (new Set(itemIds).size !== itemIds.length) throw InvalidRequestError.at('input.itemIds', 'names an item twice')
    return versionOf(datasetId, await this.store.datasets.removeItems(tenantId, datasetId, itemIds))
  }

  /** A new version with one item more: the run's variables and input, and the answer it should have given. */
  async addRun(tenantId: string, input: unknown): Promise<DatasetVersion> {
    const { datasetId, runId, expected } = parseInput(addRunSchema, input, 'input')
    const request = await this.store.runs.requestOf(tenantId, runId)
    if (!request) throw new NotFoundError('run', runId)
    const item = {
      variables: request.variables ?? {},
      input: request.input,
      expected: expected ?? null,
      metadata: null,
      sourceRunId: runId,
    }
    return versionOf(datasetId, await this.store.datasets.addItems(tenantId, datasetId, [item]))
  }

  /** A JSON Lines body (one item a line, blank lines skipped) as a new version. */
  async importLines(tenantId: string, datasetId: string, body: string): Promise<DatasetVersion> {
    const lines = body.split('\n').flatMap((line, i) => (line.trim() === '' ? [] : [{ line, number: i + 1 }]))
    const items = lines.map(({ line, number }) => {
      let value: unknown
      try {
        value = JSON.parse(line)
      } catch {
        throw InvalidRequestError.at(`line ${number}`, 'is not JSON')
      }
      // an exported line carries its item's id: an import makes new items of the same content
      const { id: _, ...fields } = (value && typeof value === 'object' ? value : {}) as Record<string, unknown>
      return parseInput(datasetItemSchema, fields, `line ${number}`)
    })
    return this.addItems(tenantId, { datasetId, items: items.map(({ sourceRunId: _, ...item }) => item) })
  }

  /** A version's items as JSON Lines (the newest when `version` is null). */
  async *exportLines(tenantId: string, datasetId: string, version: number | null): AsyncGenerator<string> {
    const at = await this.versionAt(tenantId, datasetId, version)
    for (let after = 0; ; ) {
      const page = await this.store.datasets.items(tenantId, datasetId, at, after, EXPORT_PAGE)
      for (const item of page) yield `${itemLine(item)}\n`
      if (page.length < EXPORT_PAGE) return
      after = page.at(-1)!.position
    }
  }

  get(tenantId: string, id: string): Promise<Dataset | null> {
    return this.store.datasets.find(tenantId, parseInput(idSchema, id, 'id'))
  }

  versions(tenantId: string, datasetId: string): Promise<DatasetVersion[]> {
    return this.store.datasets.versions(tenantId, datasetId)
  }

  /** A page of a version's items (the newest when `version` is null) after the item at `afterPosition`. */
  async items(tenantId: string, datasetId: string, version: number | null, afterPosition: number, take: number): Promise<DatasetItem[]> {
    const at = await this.versionAt(tenantId, datasetId, version)
    return this.store.datasets.items(tenantId, datasetId, at, afterPosition, take)
  }

  /** The items `ids` names, in any version of the dataset. */
  itemsById(tenantId: string, datasetId: string, ids: string[]): Promise<DatasetItem[]> {
    return this.store.datasets.itemsById(tenantId, datasetId, ids)
  }

  /** `version` checked against the dataset's, or its newest. */
  private async versionAt(tenantId: string, datasetId: string, version: number | null): Promise<number> {
    const dataset = await this.store.datasets.find(tenantId, datasetId)
    if (!dataset) throw new NotFoundError('dataset', datasetId)
    if (version === null) return dataset.version
    if (!Number.isInteger(version) || version < 1 || version > dataset.version) {
      throw InvalidRequestError.at('version', `dataset '${datasetId}' has versions 1 to ${dataset.version}`)
    }
    return version
  }
}

function versionOf(datasetId: string, outcome: VersionOutcome): DatasetVersion {
  if ('version' in outcome) return outcome.version
  if (outcome.missing === 'DATASET') throw new NotFoundError('dataset', datasetId)
  throw InvalidRequestError.at('input.itemIds', `names items the newest version does not hold: ${outcome.ids.join(', ')}`)
}
