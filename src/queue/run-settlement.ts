import type { Logger } from '../domain/logger.js'
import type { QueueEntryRecord, RunRecord } from '../domain/records.js'
import { type KeyCounters, TOKENS_PER_MINUTE } from '../events/key-counters.js'
import type { RunSlots } from '../events/run-slots.js'
import type { BudgetLedger } from '../store/budget-ledger.js'

/**
 * What an entry owes its key and budgets as it leaves: its run slot given back, its reservation
 * replaced by its run's cost, its run's tokens counted against its key's minute. None of it is
 * on the token path; a failure is logged (a slot lapses, the reaper settles a reservation).
 */
export class RunSettlement {
  private readonly pending = new Set<Promise<void>>()

  constructor(
    private readonly budgets: BudgetLedger,
    private readonly counters: KeyCounters,
    private readonly slots: RunSlots,
    private readonly logger: Logger,
  ) {}

  /** An entry leaves this instance (ended, or waiting for tool results): the run slot it held is given back. */
  left(entry: QueueEntryRecord): void {
    const { keyId, concurrentRuns } = entry.request.admission ?? {}
    if (keyId && concurrentRuns && entry.startedAt !== null)
      this.track(this.slots.release(keyId, entry.queueId), 'a run slot could not be given back', entry)
  }

  /** Settles a terminal entry (with its run, when it ran); nobody waits for it but `flush`. */
  ended(entry: QueueEntryRecord, run: RunRecord | null): void {
    const facts = entry.request.admission
    if (facts?.budgetReserved) this.track(this.budgets.settle(entry.queueId), 'a budget reservation could not be settled', entry)
    const tokens = run?.usage ? run.usage.inputTokens + run.usage.outputTokens : 0
    if (facts?.tokensPerMinute && facts.keyId && tokens > 0) {
      const { name, windowMs } = TOKENS_PER_MINUTE
      this.track(this.counters.debit(name, facts.keyId, tokens, facts.tokensPerMinute, windowMs), 'tokens could not be counted', entry)
    }
  }

  /** Waits for every settlement under way (at shutdown, before the database closes). */
  async flush(): Promise<void> {
    await Promise.all(this.pending)
  }

  private track(work: Promise<void>, failure: string, entry: QueueEntryRecord): void {
    const settled = work
      .catch((error: Error) => this.logger.warn(failure, { queueId: entry.queueId, error: error.message }))
      .finally(() => this.pending.delete(settled))
    this.pending.add(settled)
  }
}
