import type { Prisma } from '@db/client'
import type { DeliveryStatus, WebhookDelivery } from '../domain/webhooks.js'
import type { Db } from './database.js'
import { jsonValue, parsedColumn } from './json-columns.js'
import { attemptsColumn } from './record-json-columns.js'

type Row = Prisma.WebhookDeliveryGetPayload<object>

function toRecord(row: Row): WebhookDelivery {
  return {
    ...row,
    payload: row.payload as Record<string, unknown>,
    status: row.status as DeliveryStatus,
    attempts: parsedColumn(attemptsColumn, row.attempts, 'WebhookDelivery.attempts', row.id),
    nextAttemptAt: row.nextAttemptAt?.toISOString() ?? null,
    createdAt: row.createdAt.toISOString(),
  }
}

/** Webhook deliveries: created with a run's end (see RunLedger), then claimed and settled by the dispatcher. */
export class WebhookStore {
  private readonly listeners = new Set<() => void>()

  constructor(private readonly db: Db) {}

  /** Calls `listener` after a delivery has been committed, so it is posted without waiting for a poll. */
  onCreated(listener: () => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  /** Called by the ledger once a run's end with a delivery has committed. */
  created(): void {
    for (const listener of this.listeners) listener()
  }

  /** PENDING deliveries due by `now`, across tenants, the longest due first. */
  async due(now: Date, take: number): Promise<WebhookDelivery[]> {
    const rows = await this.db.webhookDelivery.findMany({
      where: { status: 'PENDING', nextAttemptAt: { lte: now } },
      orderBy: { nextAttemptAt: 'asc' },
      take,
    })
    return rows.map(toRecord)
  }

  /** When the next attempt of any PENDING delivery falls due (or a claim on one lapses); null when none is pending. */
  async nextAttemptAt(): Promise<Date | null> {
    const row = await this.db.webhookDelivery.findFirst({
      where: { status: 'PENDING', nextAttemptAt: { not: null } },
      orderBy: { nextAttemptAt: 'asc' },
      select: { nextAttemptAt: true },
    })
    return row?.nextAttemptAt ?? null
  }

  /**
   * Takes a due delivery for one attempt by moving its next try to `until` (when the claim lapses
   * if its taker dies); false when another instance took it first.
   */
  async claim(id: string, now: Date, until: Date): Promise<boolean> {
    const { count } = await this.db.webhookDelivery.updateMany({
      where: { id, status: 'PENDING', nextAttemptAt: { lte: now } },
      data: { nextAttemptAt: until },
    })
    return count === 1
  }

  /** Records an attempt's outcome on a claimed delivery. */
  async settle(id: string, outcome: Pick<WebhookDelivery, 'status' | 'attempts' | 'nextAttemptAt'>): Promise<void> {
    await this.db.webhookDelivery.updateMany({
      where: { id, status: 'PENDING' },
      data: {
        status: outcome.status,
        attempts: jsonValue(outcome.attempts),
        nextAttemptAt: outcome.nextAttemptAt === null ? null : new Date(outcome.nextAttemptAt),
      },
    })
  }

  /** Gives a claimed delivery back, due now (its taker is shutting down before the attempt ended). */
  async release(id: string, at: Date): Promise<void> {
    await this.db.webhookDelivery.updateMany({ where: { id, status: 'PENDING' }, data: { nextAttemptAt: at } })
  }

  async forRun(tenantId: string, runId: string): Promise<WebhookDelivery[]> {
    const rows = await this.db.webhookDelivery.findMany({ where: { tenantId, runId }, orderBy: { createdAt: 'asc' } })
    return rows.map(toRecord)
  }
}
