const ignore = () => {}

/**
 * The writes of one live record (a run or a queue entry), owned by whoever owns the record: they
 * run in order, one at a time, so a row's insert lands before its updates and an older state
 * never overwrites a newer one. A whole-row save waiting behind a write is queued once and writes
 * the record as it is when its turn comes, so a busy database writes each row's latest state
 * instead of every step of it. Nobody on the token path awaits it; the owner awaits `close()`
 * before the record's last write, and readers read a record live from its owner until then.
 */
export class RecordJournal {
  private tail: Promise<void>
  private rowQueued = false
  private closed = false

  /** `after`: a write that must land first (a run's row is inserted by its entry's claim). */
  constructor(
    private readonly onError: (error: unknown) => void,
    after: Promise<unknown> = Promise.resolve(),
  ) {
    this.tail = after.then(ignore, ignore)
  }

  /** Runs `step` after every earlier write; settles with it, for a write the caller acknowledges. */
  write<T>(step: () => Promise<T>): Promise<T> {
    const result = this.tail.then(step)
    this.tail = result.then(ignore, ignore)
    return result
  }

  /** Saves the whole record after every earlier write; `save` reads the record when it runs. */
  saveRow(save: () => Promise<unknown>): void {
    if (this.rowQueued || this.closed) return
    this.rowQueued = true
    this.write(async () => {
      // let this turn of the event loop finish: a burst of changes (a status, then the in-flight
      // marker of the call it opens) collapses into one write
      await new Promise(setImmediate)
      this.rowQueued = false
      if (!this.closed) await save()
    }).catch(this.onError)
  }

  /** Takes no more row saves (the record's last write stands for them); resolves once every earlier write has landed. */
  close(): Promise<void> {
    this.closed = true
    return this.tail
  }
}
