export interface CoalescerOptions {
  /** Longest a delta waits to be merged with the ones after it (ms). */
  windowMs: number
  /** Most deltas merged into one chunk. */
  maxDeltas: number
}

export const DEFAULT_COALESCER_OPTIONS: CoalescerOptions = { windowMs: 15, maxDeltas: 32 }

/**
 * Merges a run's token deltas into fewer chunks before they get a sequence. The first delta
 * (of the run, or after `restart()`) goes out at once so first-token latency pays nothing;
 * later ones wait at most `windowMs` or until `maxDeltas` have gathered. Constant work per
 * delta. The owner calls `flush()` before publishing any other event of the run, and
 * `close()` when the run ends.
 */
export class TokenCoalescer {
  private buffer = ''
  private count = 0
  private first = true
  private timer: NodeJS.Timeout | null = null

  constructor(
    private readonly emit: (text: string) => void,
    private readonly options: CoalescerOptions = DEFAULT_COALESCER_OPTIONS,
  ) {}

  push(text: string): void {
    if (text === '') return
    if (this.first) {
      this.first = false
      this.emit(text)
      return
    }
    this.buffer += text
    if (++this.count >= this.options.maxDeltas) this.flush()
    else this.timer ??= setTimeout(() => this.flush(), this.options.windowMs)
  }

  flush(): void {
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    if (this.buffer === '') return
    const text = this.buffer
    this.buffer = ''
    this.count = 0
    this.emit(text)
  }

  /** The next delta is a first one again (a new attempt or segment). */
  restart(): void {
    this.flush()
    this.first = true
  }

  close(): void {
    this.flush()
  }
}
