import type { Db } from './database.js'
import type { RawWriter, Writer } from './raw-writer.js'
import { RoundWriter } from './round-writer.js'

interface Pending {
  write: (raw: Writer) => Promise<unknown>
  atomic: boolean
  resolve: (value: unknown) => void
  reject: (error: unknown) => void
}

/** Most writes in one transaction, so none holds the database (or Prisma's timeout) for long. */
const MAX_WRITES = 256

/**
 * Group commit for the writes every run makes (queue entries, runs, events, a run's start and
 * end): what is submitted while a transaction is being written goes, in submission order, into
 * the next one, so under load runs share transactions and their BEGIN/COMMIT instead of each
 * paying its own, and their inserts share multi-row statements (`RoundWriter`); alone, a write
 * waits for no timer. A write that needs several statements to land together is one function,
 * marked atomic. When a shared transaction fails (one write was refused), each of its writes is
 * tried again alone, so only the refused one's caller sees it.
 */
export class GroupCommit {
  private readonly queue: Pending[] = []
  private draining = false

  constructor(
    private readonly db: Db,
    private readonly raw: RawWriter,
  ) {}

  write<T>(write: (raw: Writer) => Promise<T>, atomic = false): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ write, atomic, resolve: resolve as (value: unknown) => void, reject })
      if (this.draining) return
      this.draining = true
      // what the current turn of the event loop submits goes in the same transaction
      setImmediate(() => void this.drain())
    })
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, MAX_WRITES)
      if (batch.length === 1) await this.alone(batch[0]!)
      else await this.together(batch)
    }
    this.draining = false
  }

  private async together(batch: Pending[]): Promise<void> {
    let results: PromiseSettledResult<unknown>[]
    try {
      results = await this.db.$transaction(async (tx) => {
        const raw = this.raw.in(tx)
        const round = new RoundWriter()
        const outcomes = Promise.allSettled(batch.map((pending) => round.run(pending.write)))
        for (;;) {
          // every write goes as far as it can (gathering rows, or waiting for an update's count)
          await round.quiet()
          if (round.idle) break
          await round.send(raw)
        }
        const settled = await outcomes
        if (settled.some((s) => s.status === 'rejected')) throw new Error('a write of the shared transaction failed')
        return settled
      })
    } catch {
      for (const pending of batch) await this.alone(pending)
      return
    }
    for (const [i, pending] of batch.entries()) pending.resolve((results[i] as PromiseFulfilledResult<unknown>).value)
  }

  private alone(pending: Pending): Promise<void> {
    const written = pending.atomic ? this.db.$transaction((tx) => pending.write(this.raw.in(tx))) : pending.write(this.raw)
    return written.then(pending.resolve, pending.reject)
  }
}
