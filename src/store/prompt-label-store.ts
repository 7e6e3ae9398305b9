import type { Prisma } from '@db/client'
import type { PromptLabel, PromptLabelMove, SplitShare } from '../domain/prompt-labels.js'
import type { Db } from './database.js'
import { driverChecked, isUniqueViolation } from './errors.js'
import { nullableJson } from './json-columns.js'

const labelSelect = { promptId: true, name: true, version: true, split: true, updatedAt: true } satisfies Prisma.PromptLabelSelect

const toLabel = (row: Prisma.PromptLabelGetPayload<{ select: typeof labelSelect }>): PromptLabel => ({
  ...row,
  split: row.split as SplitShare[] | null,
})

const toMove = (row: Prisma.PromptLabelMoveGetPayload<object>): PromptLabelMove => ({
  promptId: row.promptId,
  label: row.label,
  move: row.move,
  version: row.version,
  split: row.split as SplitShare[] | null,
  previousVersion: row.previousVersion,
  keyId: row.keyId,
  movedAt: row.movedAt,
})

/** What a move asks: the label's new target, and the version the caller saw it name (null: it must not exist yet). */
export interface LabelMoveRequest {
  tenantId: string
  promptId: string
  label: string
  version: number
  split: SplitShare[] | null
  expectedVersion: number | null
  keyId: string | null
}

/** The move was made, or the label names another version than the caller expected (`current`: null when there is none). */
export type LabelMoveOutcome = { moved: PromptLabelMove; label: PromptLabel } | { conflict: true; current: number | null }

/** Labels of prompts per tenant, each move kept. */
export class PromptLabelStore {
  constructor(private readonly db: Db) {}

  find(tenantId: string, promptId: string, name: string): Promise<PromptLabel | null> {
    return this.db.promptLabel
      .findUnique({ where: { tenantId_promptId_name: { tenantId, promptId, name } }, select: labelSelect })
      .then((row) => row && toLabel(row))
  }

  async list(tenantId: string, promptId: string): Promise<PromptLabel[]> {
    const rows = await this.db.promptLabel.findMany({ where: { tenantId, promptId }, orderBy: { name: 'asc' }, select: labelSelect })
    return rows.map(toLabel)
  }

  /**
   * Compare-and-set: moves the label only when it names `expectedVersion` now (or does not exist,
   * for null), and keeps the move, in one transaction. A writer that raced it to the same
   * label loses on the update's condition or on the move's key, and gets a conflict.
   */
  async move(request: LabelMoveRequest): Promise<LabelMoveOutcome> {
    const { tenantId, promptId, label: name, version, expectedVersion, keyId } = request
    const split = nullableJson(request.split)
    try {
      return await driverChecked(
        this.db.$transaction(async (tx) => {
          const where = { tenantId_promptId_name: { tenantId, promptId, name } }
          const current = await tx.promptLabel.findUnique({ where, select: labelSelect })
          if ((current?.version ?? null) !== expectedVersion) return { conflict: true as const, current: current?.version ?? null }
          if (current) {
            const { count } = await tx.promptLabel.updateMany({
              where: { tenantId, promptId, name, version: current.version },
              data: { version, split },
            })
            if (count === 0) return { conflict: true as const, current: null }
          } else {
            await tx.promptLabel.create({ data: { tenantId, promptId, name, version, split } })
          }
          const last = await tx.promptLabelMove.findFirst({
            where: { tenantId, promptId, label: name },
            orderBy: { move: 'desc' },
            select: { move: true },
          })
          const moved = await tx.promptLabelMove.create({
            data: {
              tenantId,
              promptId,
              label: name,
              move: (last?.move ?? 0) + 1,
              version,
              split,
              previousVersion: current?.version ?? null,
              keyId,
            },
          })
          const label = await tx.promptLabel.findUniqueOrThrow({ where, select: labelSelect })
          return { moved: toMove(moved), label: toLabel(label) }
        }),
      )
    } catch (err) {
      if (isUniqueViolation(err)) return { conflict: true, current: (await this.find(tenantId, promptId, name))?.version ?? null }
      throw err
    }
  }

  /** A prompt's latest label moves (of one label, or of all), newest first. */
  async moves(tenantId: string, promptId: string, label: string | null, take: number): Promise<PromptLabelMove[]> {
    const rows = await this.db.promptLabelMove.findMany({
      where: { tenantId, promptId, ...(label !== null && { label }) },
      orderBy: [{ movedAt: 'desc' }, { move: 'desc' }],
      take,
    })
    return rows.map(toMove)
  }
}
