interface Task {
  run: () => Promise<unknown>
  /** A pending task with the same tag is superseded by a newer one (a whole-row update). */
  replaceable: string | null
}

/**
 * Ordered write-behind for records: tasks with the same key run one after another in the order
 * they were enqueued (so a row's insert always lands before its updates), tasks with different
 * keys run independently. A replaceable task (a full-row update) that has not started yet is
 * replaced by a newer one with the same tag, so a busy database writes each row's latest state
 * once instead of every step of it. Nobody on the token path awaits it; `settled(key)` and
 * `flush()` are for the few places that need a write to have landed (receipts, shutdown, tests).
 */
export class SaveQueue {
  private readonly pending = new Map<string, Task[]>()
  private readonly running = new Map<string, Promise<void>>()

  constructor(private readonly onError: (key: string, error: unknown) => void) {}

  enqueue(key: string, run: () => Promise<unknown>, replaceable: string | null = null): void {
    let tasks = this.pending.get(key)
    if (!tasks) {
      tasks = []
      this.pending.set(key, tasks)
    }
    const last = tasks.at(-1)
    if (replaceable !== null && last?.replaceable === replaceable) last.run = run
    else tasks.push({ run, replaceable })
    if (!this.running.has(key)) this.running.set(key, this.drain(key))
  }

  private async drain(key: string): Promise<void> {
    // let this turn of the event loop finish first: a burst of updates (a status, then the
    // in-flight marker of the call it opens) collapses into one
    await new Promise(setImmediate)
    for (;;) {
      const task = this.pending.get(key)?.shift()
      if (!task) break
      try {
        await task.run()
      } catch (error) {
        this.onError(key, error)
      }
    }
    this.pending.delete(key)
    this.running.delete(key)
  }

  /** Drops `key`'s tasks tagged `replaceable` that have not started: a write that stands for them is coming. */
  discard(key: string, replaceable: string): void {
    const tasks = this.pending.get(key)
    if (tasks)
      this.pending.set(
        key,
        tasks.filter((task) => task.replaceable !== replaceable),
      )
  }

  /** Resolves when every task enqueued for `key` so far has run. */
  async settled(key: string): Promise<void> {
    while (this.running.has(key)) await this.running.get(key)
  }

  /** Resolves when every task enqueued so far (and any they enqueue) has run. */
  async flush(): Promise<void> {
    while (this.running.size > 0) await Promise.all(this.running.values())
  }
}
