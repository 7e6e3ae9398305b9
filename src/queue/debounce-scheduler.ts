/**
 * The debounce timers of scheduled prompts, by queue id: (re)arming one restarts its delay.
 * Owns every timer it starts; `close` clears them all.
 */
export class DebounceScheduler {
  private readonly timers = new Map<string, NodeJS.Timeout>()

  arm(queueId: string, delayMs: number, fire: () => void): void {
    clearTimeout(this.timers.get(queueId))
    const timer = setTimeout(
      () => {
        this.timers.delete(queueId)
        fire()
      },
      Math.max(0, delayMs),
    )
    this.timers.set(queueId, timer)
  }

  disarm(queueId: string): void {
    clearTimeout(this.timers.get(queueId))
    this.timers.delete(queueId)
  }

  close(): void {
    for (const timer of this.timers.values()) clearTimeout(timer)
    this.timers.clear()
  }
}
