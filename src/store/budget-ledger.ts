import { LRUCache } from 'lru-cache'
import { z } from 'zod'
import { parsedColumn } from './json-columns.js'
import { json } from './run-path-rows.js'
import type { Sql } from './sql-dialects.js'

/** Nano-USD: whole numbers, so sums and comparisons of spend are exact. */
export const NANO_PER_USD = 1e9

/** One cost budget's current window, as admission reserves against it. */
export interface BudgetWindowRef {
  /** `key:<id>` or `tenant:<tenantId>`. */
  scope: string
  windowStart: Date
  limitNanoUsd: number
  /** What was spent in the window before it had a row (runs admitted before the budget existed). */
  spentBefore: () => Promise<number>
}

/** A window's spend: settled, and reserved by runs not yet ended. */
export interface WindowSpend {
  usedNanoUsd: number
  reservedNanoUsd: number
}

/** The window that refused a reservation, with its spend then. */
export class ReservationRefused extends Error {
  constructor(
    readonly window: BudgetWindowRef,
    readonly spend: WindowSpend,
  ) {
    super(`budget ${window.scope} has no room`)
  }
}

const windowsColumn = z.array(z.object({ scope: z.string(), windowStart: z.string() }))

/**
 * Cost budgets' windows and the reservations held against them. A reservation is one guarded
 * update per window (`used + reserved + amount <= limit`), so concurrent admissions on any number
 * of instances never reserve past a limit; a run's end replaces it by what the run cost.
 */
export class BudgetLedger {
  /** Windows whose row exists, by scope and start: no row is ever deleted, so each is looked for once. */
  private readonly opened = new LRUCache<string, true>({ max: 10_000 })

  constructor(private readonly sql: Sql) {}

  /**
   * Reserves `amountNanoUsd` for entry `queueId` in every window, all or none; throws
   * `ReservationRefused` naming the first window without room.
   */
  async reserve(queueId: string, tenantId: string, amountNanoUsd: number, windows: readonly BudgetWindowRef[]): Promise<void> {
    for (const window of windows) await this.open(window)
    await this.sql.transaction().execute(async (tx) => {
      for (const window of windows) {
        const { numUpdatedRows } = await tx
          .updateTable('BudgetWindow')
          .set((eb) => ({ reservedNanoUsd: eb('reservedNanoUsd', '+', amountNanoUsd) }))
          .where('scope', '=', window.scope)
          .where('windowStart', '=', window.windowStart)
          .where((eb) => eb(eb('usedNanoUsd', '+', eb('reservedNanoUsd', '+', amountNanoUsd)), '<=', window.limitNanoUsd))
          .executeTakeFirst()
        if (numUpdatedRows === 0n) throw new ReservationRefused(window, (await this.spend(window.scope, window.windowStart, tx))!)
      }
      const held = windows.map((w) => ({ scope: w.scope, windowStart: w.windowStart.toISOString() }))
      await tx
        .insertInto('BudgetReservation')
        .values({ queueId, tenantId, windows: json(held), amountNanoUsd, createdAt: new Date() })
        .execute()
    })
  }

  /**
   * Replaces entry `queueId`'s reservation by what its run cost (nothing when it never ran); once
   * only, whoever calls first (the entry's end, or the sweep).
   */
  async settle(queueId: string): Promise<void> {
    await this.sql.transaction().execute(async (tx) => {
      const held = await tx.deleteFrom('BudgetReservation').where('queueId', '=', queueId).returningAll().executeTakeFirst()
      if (!held) return
      const run = await tx.selectFrom('Run').select('costUsd').where('queueId', '=', queueId).executeTakeFirst()
      const cost = Math.round((run?.costUsd ?? 0) * NANO_PER_USD)
      // PostgreSQL's driver parses JSON; SQLite answers its text
      const windows = typeof held.windows === 'string' ? JSON.parse(held.windows) : held.windows
      for (const w of parsedColumn(windowsColumn, windows, 'BudgetReservation.windows', queueId)) {
        await tx
          .updateTable('BudgetWindow')
          .set((eb) => ({
            reservedNanoUsd: eb('reservedNanoUsd', '-', held.amountNanoUsd),
            usedNanoUsd: eb('usedNanoUsd', '+', cost),
          }))
          .where('scope', '=', w.scope)
          .where('windowStart', '=', new Date(w.windowStart))
          .execute()
      }
    })
  }

  /**
   * Settles reservations older than `before` whose entry has ended or is gone: ends nobody here
   * settled (an instance that died, an entry cancelled while queued, the reaper's ends).
   */
  async sweep(before: Date): Promise<number> {
    const orphans = await this.sql
      .selectFrom('BudgetReservation as r')
      .leftJoin('QueueEntry as e', 'e.id', 'r.queueId')
      .select('r.queueId')
      .where('r.createdAt', '<', before)
      .where((eb) => eb.or([eb('e.id', 'is', null), eb('e.finishedAt', 'is not', null)]))
      .limit(500)
      .execute()
    for (const { queueId } of orphans) await this.settle(queueId)
    return orphans.length
  }

  /** Several windows' spend in one read, in the order asked; null for one nothing was reserved in. */
  async spends(windows: readonly { scope: string; windowStart: Date }[]): Promise<(WindowSpend | null)[]> {
    if (windows.length === 0) return []
    const rows = await this.sql
      .selectFrom('BudgetWindow')
      .select(['scope', 'windowStart', 'usedNanoUsd', 'reservedNanoUsd'])
      .where((eb) => eb.or(windows.map((w) => eb.and([eb('scope', '=', w.scope), eb('windowStart', '=', w.windowStart)]))))
      .execute()
    // a window is one per scope at a time: the scope names the row
    const byScope = new Map(rows.map((row) => [row.scope, row]))
    return windows.map((w) => byScope.get(w.scope) ?? null)
  }

  /** A window's spend now; null before anything was reserved in it. */
  async spend(scope: string, windowStart: Date, on: Sql = this.sql): Promise<WindowSpend | null> {
    const row = await on
      .selectFrom('BudgetWindow')
      .select(['usedNanoUsd', 'reservedNanoUsd'])
      .where('scope', '=', scope)
      .where('windowStart', '=', windowStart)
      .executeTakeFirst()
    return row ?? null
  }

  /** Makes the window's row, with what was spent before it, unless it exists. */
  private async open(window: BudgetWindowRef): Promise<void> {
    const key = `${window.scope} ${window.windowStart.toISOString()}`
    if (this.opened.has(key)) return
    if (!(await this.spend(window.scope, window.windowStart))) {
      const usedNanoUsd = await window.spentBefore()
      await this.sql
        .insertInto('BudgetWindow')
        .values({ scope: window.scope, windowStart: window.windowStart, usedNanoUsd, reservedNanoUsd: 0 })
        .onConflict((oc) => oc.columns(['scope', 'windowStart']).doNothing())
        .execute()
    }
    this.opened.set(key, true)
  }
}
