/**
 * Ordered write-behind for records: tasks with the same key run one after another in the order
 * they were enqueued (so a row's insert always lands before its updates), tasks with different
 * keys run independently. Nobody on the token path awaits it; `settled(key)` and `flush()` are
 * for the few places that need a write to have landed (abort receipts, shutdown, tests).
 */
export class SaveQueue {
  private readonly tails = new Map<string, Promise<void>>()

  constructor(private readonly onError: (key: string, error: unknown) => void) {}

  enqueue(key: string, task: () => Promise<unknown>): void {
    const previous = this.tails.get(key) ?? Promise.resolve()
    const next = previous.then(task).then(
      () => undefined,
      (error: unknown) => this.onError(key, error),
    )
    this.tails.set(key, next)
    void next.then(() => {
      if (this.tails.get(key) === next) this.tails.delete(key)
    })
  }

  /** Resolves when every task enqueued for `key` so far has run. */
  async settled(key: string): Promise<void> {
    await this.tails.get(key)
  }

  /** Resolves when every task enqueued so far (and any they enqueue) has run. */
  async flush(): Promise<void> {
    while (this.tails.size > 0) await Promise.all(this.tails.values())
  }
}
