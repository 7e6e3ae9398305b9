import { StreamTimeoutError } from '../domain/errors.js'

/**
 * Ends a model call whose stream stalls: no event within `firstTokenMs` of the start, or none for
 * `idleMs` after the last one. `signal` is the call's: the run's signal, or it aborted with a
 * StreamTimeoutError. An event only notes the time; the one timer re-arms itself when it fires
 * early, so a token costs no timer work. Without limits it is inert.
 */
export class StreamWatchdog {
  readonly signal: AbortSignal
  private readonly controller = new AbortController()
  private timer: NodeJS.Timeout | null = null
  private lastEventAt: number | null = null

  constructor(
    runSignal: AbortSignal,
    private readonly firstTokenMs: number | null,
    private readonly idleMs: number | null,
  ) {
    const limit = firstTokenMs ?? idleMs
    this.signal = limit === null ? runSignal : AbortSignal.any([runSignal, this.controller.signal])
    const startedAt = performance.now()
    if (limit !== null) this.arm(() => (this.lastEventAt === null ? startedAt + limit : this.idleDeadline()))
  }

  noteEvent(): void {
    if (this.timer === null) return
    if (this.lastEventAt === null && this.idleMs === null) this.close() // only the first token was watched
    this.lastEventAt = performance.now()
  }

  close(): void {
    if (this.timer !== null) clearTimeout(this.timer)
    this.timer = null
  }

  private idleDeadline(): number | null {
    return this.idleMs === null || this.lastEventAt === null ? null : this.lastEventAt + this.idleMs
  }

  private arm(deadline: () => number | null): void {
    const at = deadline()
    if (at === null) {
      this.close()
      return
    }
    const wait = at - performance.now()
    if (wait > 0) {
      this.timer = setTimeout(() => this.arm(deadline), wait)
      this.timer.unref()
      return
    }
    this.timer = null
    const stalled =
      this.lastEventAt === null
        ? `no token came within ${this.firstTokenMs ?? this.idleMs} ms (${this.firstTokenMs !== null ? 'firstTokenTimeoutMs' : 'streamIdleTimeoutMs'})`
        : `the stream was silent for ${this.idleMs} ms (streamIdleTimeoutMs)`
    this.controller.abort(new StreamTimeoutError(stalled))
  }
}
