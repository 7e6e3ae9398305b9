export interface CoalescerOptions {
  /** Longest a delta waits to be merged with the ones after it while few runs stream (ms). */
  windowMs: number
  /** Most deltas merged into one chunk while few runs stream. */
  maxDeltas: number
  /**
   * Token events a second the process aims to stay under: with more runs streaming than
   * `windowMs` allows for that, every window (and `maxDeltas`) widens in proportion, up to
   * `MAX_WINDOW_MS`. 0 never widens.
   */
  eventsPerSecond: number
}

export const DEFAULT_COALESCER_OPTIONS: CoalescerOptions = { windowMs: 15, maxDeltas: 32, eventsPerSecond: 1000 }

/** Ten updates a second still read as a stream. */
export const MAX_WINDOW_MS = 100

/**
 * The process's streaming runs, shared by all their coalescers. Under load each token event
 * costs every subscriber's socket and the event log the same whatever its length, so the
 * windows widen with the number of streams and the event rate stays near `eventsPerSecond`:
 * at 50 streams and the defaults, a chunk every 50 ms a run.
 */
export class CoalescerPacing {
  private streams = 0

  constructor(readonly options: CoalescerOptions = DEFAULT_COALESCER_OPTIONS) {}

  opened(): void {
    this.streams++
  }

  closed(): void {
    this.streams--
  }

  /** How many times the options' window and chunk size apply now: 1 while few runs stream. */
  get widening(): number {
    const { windowMs, eventsPerSecond } = this.options
    if (eventsPerSecond === 0 || windowMs === 0) return 1
    const wanted = (this.streams * 1000) / (eventsPerSecond * windowMs)
    return Math.max(1, Math.min(wanted, MAX_WINDOW_MS / windowMs))
  }
}

/**
 * Merges a run's token deltas into fewer chunks before they get a sequence. The first delta
 * (of the run, or after `restart()`) goes out at once so first-token latency pays nothing;
 * later ones wait at most the window or until the chunk size has gathered, both as `pacing`
 * sets them when the chunk starts. Constant work per delta. The owner calls `flush()` before
 * publishing any other event of the run, and `close()` once when the run ends.
 */
export class TokenCoalescer {
  private buffer = ''
  private count = 0
  private limit = 0
  private first = true
  private timer: NodeJS.Timeout | null = null

  constructor(
    private readonly emit: (text: string) => void,
    private readonly pacing: CoalescerPacing,
  ) {
    pacing.opened()
  }

  push(text: string): void {
    if (text === '') return
    if (this.first) {
      this.first = false
      this.emit(text)
      return
    }
    this.buffer += text
    if (this.count++ === 0) {
      const { options, widening } = this.pacing
      this.limit = options.maxDeltas * widening
      this.timer = setTimeout(() => this.flush(), options.windowMs * widening)
    }
    if (this.count >= this.limit) this.flush()
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
    this.pacing.closed()
  }
}
