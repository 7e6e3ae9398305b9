import { randomUUID } from 'node:crypto'
import type { Prisma } from '@db/client'
import type { Dataset, DatasetItem, DatasetItemContent, DatasetVersion } from '../domain/datasets.js'
import type { Db } from './database.js'
import { driverChecked, isUniqueViolation, UniqueViolation, uniqueChecked } from './errors.js'
import { jsonValue, nullableJson } from './json-columns.js'

type DatasetRow = Prisma.DatasetGetPayload<object>
type ItemRow = Prisma.DatasetItemGetPayload<object>
type VersionRow = Prisma.DatasetVersionGetPayload<object>
type Tx = Prisma.TransactionClient

const toDataset = (row: DatasetRow): Dataset => ({
  id: row.id,
  description: row.description,
  version: row.version,
  createdAt: row.createdAt.toISOString(),
})

const toVersion = (row: VersionRow): DatasetVersion => ({
  version: row.version,
  itemCount: row.itemCount,
  createdAt: row.createdAt.toISOString(),
})

const toItem = (row: ItemRow): DatasetItem => ({
  id: row.id,
  position: row.position,
  variables: row.variables as Record<string, unknown>,
  input: row.input,
  expected: row.expected ?? null,
  metadata: (row.metadata as Record<string, unknown> | null) ?? null,
  sourceRunId: row.sourceRunId,
  addedIn: row.addedIn,
})

/** The items of version `version`: added by then, and not removed by then. */
const inVersion = (tenantId: string, datasetId: string, version: number) => ({
  tenantId,
  datasetId,
  addedIn: { lte: version },
  OR: [{ removedIn: null }, { removedIn: { gt: version } }],
})

/** What a change of a dataset's items gave: its new version, or why there is none. */
export type VersionOutcome = { version: DatasetVersion } | { missing: 'DATASET' } | { missing: 'ITEMS'; ids: string[] }

const ATTEMPTS = 3

/**
 * Datasets and their versions. An item is never changed: a version adds items, or ends some
 * (`removedIn`), and records how many it holds, in one transaction that takes the dataset's
 * version by compare-and-set (two writers racing for one version: the loser tries again).
 */
export class DatasetStore {
  constructor(private readonly db: Db) {}

  /** Creates an empty dataset; throws UniqueViolation when the id is taken. */
  async create(tenantId: string, id: string, description: string | null): Promise<Dataset> {
    const row = await driverChecked(uniqueChecked(this.db.dataset.create({ data: { tenantId, id, description } })))
    return toDataset(row)
  }

  find(tenantId: string, id: string): Promise<Dataset | null> {
    return this.db.dataset.findUnique({ where: { tenantId_id: { tenantId, id } } }).then((row) => row && toDataset(row))
  }

  async versions(tenantId: string, datasetId: string): Promise<DatasetVersion[]> {
    const rows = await this.db.datasetVersion.findMany({ where: { tenantId, datasetId }, orderBy: { version: 'asc' } })
    return rows.map(toVersion)
  }

  /** A page of version `version`'s items, in the order they were added, after `afterPosition`. */
  async items(tenantId: string, datasetId: string, version: number, afterPosition: number, take: number): Promise<DatasetItem[]> {
    const rows = await this.db.datasetItem.findMany({
      where: { ...inVersion(tenantId, datasetId, version), position: { gt: afterPosition } },
      orderBy: { position: 'asc' },
      take,
    })
    return rows.map(toItem)
  }

  /** The items `ids` names, in any version. */
  async itemsById(tenantId: string, datasetId: string, ids: string[]): Promise<DatasetItem[]> {
    const rows = await this.db.datasetItem.findMany({ where: { tenantId, datasetId, id: { in: ids } } })
    return rows.map(toItem)
  }

  /** A new version with `items` added to the newest one's. */
  addItems(tenantId: string, datasetId: string, items: DatasetItemContent[]): Promise<VersionOutcome> {
    return this.newVersion(tenantId, datasetId, async (tx, version) => {
      const last = await tx.datasetItem.findFirst({
        where: { tenantId, datasetId },
        orderBy: { position: 'desc' },
        select: { position: true },
      })
      const first = (last?.position ?? 0) + 1
      await tx.datasetItem.createMany({
        data: items.map((item, i) => ({
          tenantId,
          datasetId,
          id: randomUUID(),
          position: first + i,
          variables: jsonValue(item.variables),
          input: item.input,
          expected: nullableJson(item.expected),
          metadata: nullableJson(item.metadata),
          sourceRunId: item.sourceRunId,
          addedIn: version,
        })),
      })
      return items.length
    })
  }

  /** A new version without the items `ids` names; none is removed unless every one is in the newest version. */
  removeItems(tenantId: string, datasetId: string, ids: string[]): Promise<VersionOutcome> {
    return this.newVersion(tenantId, datasetId, async (tx, version) => {
      const present = await tx.datasetItem.findMany({
        where: { ...inVersion(tenantId, datasetId, version - 1), id: { in: ids } },
        select: { id: true },
      })
      if (present.length !== ids.length) {
        const found = new Set(present.map((p) => p.id))
        return { missing: ids.filter((id) => !found.has(id)) }
      }
      await tx.datasetItem.updateMany({ where: { tenantId, datasetId, id: { in: ids } }, data: { removedIn: version } })
      return -ids.length
    })
  }

  /**
   * Makes the version after the newest: `change` adds or ends items in it and answers how the
   * count moved (or which items it lacks, to make none); the version's row and the dataset's
   * number follow in the same transaction.
   */
  private async newVersion(
    tenantId: string,
    datasetId: string,
    change: (tx: Tx, version: number) => Promise<number | { missing: string[] }>,
  ): Promise<VersionOutcome> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await driverChecked(
          this.db.$transaction(async (tx): Promise<VersionOutcome> => {
            const dataset = await tx.dataset.findUnique({ where: { tenantId_id: { tenantId, id: datasetId } } })
            if (!dataset) return { missing: 'DATASET' }
            const version = dataset.version + 1
            const previous = await tx.datasetVersion.findUnique({
              where: { tenantId_datasetId_version: { tenantId, datasetId, version: dataset.version } },
            })
            const moved = await change(tx, version)
            if (typeof moved !== 'number') return { missing: 'ITEMS', ids: moved.missing }
            const taken = await tx.dataset.updateMany({ where: { tenantId, id: datasetId, version: dataset.version }, data: { version } })
            if (taken.count === 0) throw new UniqueViolation(`version ${version} of dataset '${datasetId}' was taken`)
            const row = await tx.datasetVersion.create({
              data: { tenantId, datasetId, version, itemCount: (previous?.itemCount ?? 0) + moved },
            })
            return { version: toVersion(row) }
          }),
        )
      } catch (error) {
        if (!isUniqueViolation(error) || attempt === ATTEMPTS) throw error
      }
    }
  }
}
