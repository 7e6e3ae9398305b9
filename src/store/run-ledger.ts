import type { Prisma } from '@db/client'
import type { SessionEvent } from '../domain/events.js'
import type { MessageRecord, QueueEntryRecord, RunRecord } from '../domain/records.js'
import { runFinishedDelivery, runRequiresActionDelivery } from '../domain/webhooks.js'
import type { Db } from './database.js'
import type { EventStore } from './event-store.js'
import { jsonValue, nullableJson } from './json-columns.js'
import { entryData } from './queue-store.js'
import { liveRun, runData } from './run-store.js'
import { messageRow } from './session-store.js'
import { deliveryRow, type WebhookStore } from './webhook-store.js'

/** Everything a run's end writes. */
export interface RunEnd {
  /** The run, terminal. */
  run: RunRecord
  /** Its queue entry, terminal; null for a run without one. */
  entry: QueueEntryRecord | null
  /** The turn it adds to the session's history (empty: none). */
  messages: MessageRecord[]
  /** Its last events, numbered: the history's, the entry's and RUN_FINISHED. */
  events: SessionEvent[]
  /** Events published before these and not yet written (any session's): stored whether or not the end is. */
  earlier: SessionEvent[]
}

/** Only a run whose heartbeat is older than this (or, with a call open, than `inFlight`) may be ended. */
export interface StaleGuard {
  before: Date
  inFlightBefore: Date
}

/**
 * A run's start and end, each in one transaction, so a crash between writes never leaves the
 * records disagreeing: a run row exists exactly when its entry is claimed, and a terminal run has
 * its entry's status, its history turn, its last events and, when its entry names a webhook, the
 * delivery of its end.
 */
export class RunLedger {
  constructor(
    private readonly db: Db,
    private readonly events: EventStore,
    private readonly webhooks: WebhookStore,
  ) {}

  /** Inserts the run, claims its entry (STARTING, naming the run) and writes `events` (those that report it, and any before them) together. */
  async start(run: RunRecord, entry: QueueEntryRecord, events: readonly SessionEvent[]): Promise<void> {
    const { id, tenantId, sessionId, queueId, keyId, tags, replayOf } = run
    const startedAt = new Date(run.startedAt)
    await this.db.$transaction([
      this.db.run.create({
        data: {
          id,
          tenantId,
          sessionId,
          queueId,
          startedAt,
          keyId,
          tags: nullableJson(tags.length > 0 ? tags : null),
          replayOf,
          request: jsonValue(entry.request),
          ...runData(run),
        },
        select: { id: true },
      }),
      ...(tags.length > 0 ? [this.db.runTag.createMany({ data: tags.map((tag) => ({ tenantId, runId: id, tag, startedAt })) })] : []),
      this.db.queueEntry.updateMany({ where: { id: entry.queueId }, data: entryData(entry) }),
      ...(events.length > 0 ? [this.events.insert(events)] : []),
    ])
  }

  /** Ends an entry that never ran, with the events that report it, in one transaction; resolves to true once written. */
  async endEntry(entry: QueueEntryRecord, events: SessionEvent[]): Promise<boolean> {
    await this.db.$transaction(async (tx) => {
      await tx.queueEntry.updateMany({ where: { id: entry.queueId }, data: entryData(entry) })
      await this.events.append(events, tx)
    })
    return true
  }

  /**
   * Writes a run that now waits for the results of its last round of tool calls, with the
   * delivery that tells its webhook, in one transaction (nothing, if the run has ended).
   */
  async requireAction(run: RunRecord, webhookUrl: string | null): Promise<void> {
    const delivery = webhookUrl ? deliveryRow(runRequiresActionDelivery(run, webhookUrl, run.toolRounds.length - 1)) : null
    const written = await this.db.$transaction(async (tx) => {
      const { count } = await tx.run.updateMany({ where: liveRun(run.id), data: runData(run) })
      if (count > 0 && delivery) await tx.webhookDelivery.create({ data: delivery, select: { id: true } })
      return count > 0
    })
    if (written && delivery) this.webhooks.created()
  }

  /**
   * Writes a run's end if the run is still live (and, with `stale`, still stale); returns
   * whether it did. When it did not, only `earlier` was written.
   */
  async finish(end: RunEnd, stale: StaleGuard | null = null): Promise<boolean> {
    const where: Prisma.RunWhereInput = {
      ...liveRun(end.run.id),
      ...(stale && { OR: [{ inFlightSince: null, heartbeatAt: { lt: stale.before } }, { heartbeatAt: { lt: stale.inFlightBefore } }] }),
    }
    const webhookUrl = end.entry?.request.webhookUrl
    const delivery = webhookUrl ? deliveryRow(runFinishedDelivery(end.run, webhookUrl)) : null
    const ended = await this.db.$transaction(async (tx) => {
      const { count } = await tx.run.updateMany({ where, data: runData(end.run) })
      // already ended (a reaper, or the owner, got there first): of this end, only the events
      // published before it are written (they are the stream's, whoever ends the run)
      if (count === 0) {
        await this.events.append(end.earlier, tx)
        return false
      }
      if (end.entry) await tx.queueEntry.updateMany({ where: { id: end.entry.queueId }, data: entryData(end.entry) })
      // one typed insert a message: a turn has one or two, and a plan of Prisma's createMany is never cached
      for (const m of end.messages) await tx.message.create({ data: messageRow(end.run.tenantId, m), select: { id: true } })
      await this.events.append([...end.earlier, ...end.events], tx)
      if (delivery) await tx.webhookDelivery.create({ data: delivery, select: { id: true } })
      return true
    })
    if (ended && delivery) this.webhooks.created()
    return ended
  }
}
