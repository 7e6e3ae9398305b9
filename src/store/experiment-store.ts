import type { Prisma } from '@db/client'
import type { Experiment, ExperimentStatus, ExperimentUnit, HumanScore, Score, Scorer } from '../domain/experiments.js'
import { experimentMovesTo } from '../domain/lifecycles.js'
import { experimentEndedDelivery } from '../domain/webhooks.js'
import type { Db } from './database.js'
import { driverChecked, uniqueChecked } from './errors.js'
import { jsonValue, nullableJson } from './json-columns.js'

type ExperimentRow = Prisma.ExperimentGetPayload<object>
type UnitRow = Prisma.ExperimentUnitGetPayload<object>

const toExperiment = (row: ExperimentRow): Experiment => ({
  id: row.id,
  name: row.name,
  status: row.status as ExperimentStatus,
  datasetId: row.datasetId,
  datasetVersion: row.datasetVersion,
  promptId: row.promptId,
  promptVersion: row.promptVersion,
  promptLabel: row.promptLabel,
  profileId: row.profileId,
  repetitions: row.repetitions,
  concurrency: row.concurrency,
  scorers: row.scorers as unknown as Scorer[],
  keyId: row.keyId,
  errorMessage: row.errorMessage,
  createdAt: row.createdAt.toISOString(),
  finishedAt: row.finishedAt?.toISOString() ?? null,
})

const toUnit = (row: UnitRow): ExperimentUnit => ({
  unit: row.unit,
  itemId: row.itemId,
  repetition: row.repetition,
  runId: row.runId,
  status: row.status as ExperimentUnit['status'],
  scores: (row.scores as Score[] | null) ?? null,
})

/** A new experiment: what it froze, and its units, all PENDING. */
export type NewExperiment = Omit<Experiment, 'status' | 'errorMessage' | 'createdAt' | 'finishedAt'> & {
  idempotencyKey: string | null
  webhookUrl: string | null
}

/** Experiments and their units; statuses move by compare-and-set, so a cancel and an end never both win. */
export class ExperimentStore {
  constructor(
    private readonly db: Db,
    /** Told when an end wrote a delivery, so it is posted at once. */
    private readonly webhooks: { created(): void },
  ) {}

  /** Writes the experiment (QUEUED) and its units in one transaction; throws UniqueViolation for a key already used. */
  async create(
    tenantId: string,
    experiment: NewExperiment,
    units: Omit<ExperimentUnit, 'runId' | 'status' | 'scores'>[],
  ): Promise<Experiment> {
    const { scorers, ...rest } = experiment
    const row = await driverChecked(
      uniqueChecked(
        this.db.$transaction(async (tx) => {
          const created = await tx.experiment.create({ data: { tenantId, ...rest, scorers: jsonValue(scorers), status: 'QUEUED' } })
          await tx.experimentUnit.createMany({
            data: units.map((u) => ({ tenantId, experimentId: experiment.id, ...u, status: 'PENDING' })),
          })
          return created
        }),
      ),
    )
    return toExperiment(row)
  }

  find(tenantId: string, id: string): Promise<Experiment | null> {
    return this.db.experiment.findUnique({ where: { tenantId_id: { tenantId, id } } }).then((row) => row && toExperiment(row))
  }

  /** The tenant's experiments, newest first, after (createdAt, id). */
  async list(tenantId: string, after: { createdAt: string; id: string } | null, take: number): Promise<Experiment[]> {
    const at = after && new Date(after.createdAt)
    const rows = await this.db.experiment.findMany({
      where: { tenantId, ...(at && { OR: [{ createdAt: { lt: at } }, { createdAt: at, id: { lt: after.id } }] }) },
      orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
      take,
    })
    return rows.map(toExperiment)
  }

  findByKey(tenantId: string, idempotencyKey: string): Promise<Experiment | null> {
    return this.db.experiment
      .findUnique({ where: { tenantId_idempotencyKey: { tenantId, idempotencyKey } } })
      .then((row) => row && toExperiment(row))
  }

  /** Units in order, after `afterUnit`. */
  async units(tenantId: string, experimentId: string, afterUnit: number, take: number): Promise<ExperimentUnit[]> {
    const rows = await this.db.experimentUnit.findMany({
      where: { tenantId, experimentId, unit: { gt: afterUnit } },
      orderBy: { unit: 'asc' },
      take,
    })
    return rows.map(toUnit)
  }

  /** Records a unit's run, and (once it ended) its status and scores. */
  async updateUnit(
    tenantId: string,
    experimentId: string,
    unit: number,
    change: Partial<Pick<ExperimentUnit, 'runId' | 'status' | 'scores'>>,
  ) {
    const { scores, ...rest } = change
    await driverChecked(
      this.db.experimentUnit.update({
        where: { tenantId_experimentId_unit: { tenantId, experimentId, unit } },
        data: { ...rest, ...(scores !== undefined && { scores: nullableJson(scores) }) },
      }),
    )
  }

  /**
   * Moves the experiment to `to` where its state machine allows it from where it is; false when
   * it does not. An end with a webhook writes its delivery in the same transaction (`told`
   * gives its data), then wakes the dispatcher.
   */
  async move(tenantId: string, id: string, to: ExperimentStatus, errorMessage: string | null = null, told: Record<string, unknown> = {}) {
    const ends = to !== 'RUNNING'
    const delivered = await driverChecked(
      this.db.$transaction(async (tx) => {
        const { count } = await tx.experiment.updateMany({
          where: { tenantId, id, status: { in: experimentMovesTo(to) } },
          data: { status: to, errorMessage, ...(ends ? { finishedAt: new Date() } : { heartbeatAt: new Date() }) },
        })
        if (count === 0) return null
        const row = ends ? await tx.experiment.findUnique({ where: { tenantId_id: { tenantId, id } }, select: { webhookUrl: true } }) : null
        if (!row?.webhookUrl) return false
        const delivery = experimentEndedDelivery(tenantId, id, row.webhookUrl, { experimentId: id, status: to, errorMessage, ...told })
        await tx.webhookDelivery.create({
          data: {
            ...delivery,
            payload: jsonValue(delivery.payload),
            attempts: jsonValue([]),
            nextAttemptAt: new Date(delivery.nextAttemptAt!),
            createdAt: new Date(delivery.createdAt),
          },
        })
        return true
      }),
    )
    if (delivered) this.webhooks.created()
    return delivered !== null
  }

  /** Replaces the experiment's scorers (its units are scored again apart). */
  async setScorers(tenantId: string, id: string, scorers: Scorer[]): Promise<void> {
    await driverChecked(this.db.experiment.update({ where: { tenantId_id: { tenantId, id } }, data: { scorers: jsonValue(scorers) } }))
  }

  /** Keeps a person's score of a run; one of the same name replaces it. */
  async scoreRun(tenantId: string, runId: string, score: Omit<HumanScore, 'createdAt'>): Promise<void> {
    const { name, value, comment, keyId } = score
    await driverChecked(
      this.db.runScore.upsert({
        where: { tenantId_runId_name: { tenantId, runId, name } },
        create: { tenantId, runId, name, value, comment, keyId },
        update: { value, comment, keyId, createdAt: new Date() },
      }),
    )
  }

  async runScores(tenantId: string, runId: string): Promise<HumanScore[]> {
    const rows = await this.db.runScore.findMany({ where: { tenantId, runId }, orderBy: { name: 'asc' } })
    return rows.map(({ name, value, comment, keyId, createdAt }) => ({ name, value, comment, keyId, createdAt: createdAt.toISOString() }))
  }

  /** Marks running experiments alive. */
  async heartbeat(keys: { tenantId: string; id: string }[]): Promise<void> {
    const now = new Date()
    await driverChecked(this.db.experiment.updateMany({ where: { OR: keys, status: 'RUNNING' }, data: { heartbeatAt: now } }))
  }

  /** Ends FAILED the experiments left RUNNING or QUEUED whose mark is older than `staleBefore`: nobody runs them. */
  async failStale(staleBefore: Date, errorMessage: string): Promise<number> {
    const { count } = await driverChecked(
      this.db.experiment.updateMany({
        where: {
          status: { in: ['RUNNING', 'QUEUED'] },
          OR: [{ heartbeatAt: { lt: staleBefore } }, { heartbeatAt: null, createdAt: { lt: staleBefore } }],
        },
        data: { status: 'FAILED', errorMessage, finishedAt: new Date() },
      }),
    )
    return count
  }
}
