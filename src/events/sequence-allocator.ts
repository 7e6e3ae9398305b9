/** Where a session's numbering is kept: its row's reserved ceiling and the log's highest sequence. */
export interface SequenceSource {
  /** The highest sequence reserved in the session row. */
  reserved(): Promise<number>
  /** The highest sequence in the event log. */
  persisted(): Promise<number>
  /** Raises the row's reserved ceiling to `ceiling`. */
  reserve(ceiling: number): Promise<void>
  /** Lowers the row's ceiling from `from` to `to`, only if it still is `from` (nobody reserved since). */
  lower(from: number, to: number): Promise<void>
  /** Told when reserving a further block failed (the next `take` past half a block tries again). */
  failed(error: unknown): void
}

/**
 * Numbers one session's events on its owner, in memory, from blocks reserved ahead in the
 * session row: a process that crashes, or loses the session, may have handed out any number up
 * to the ceiling, so whoever numbers next resumes above it and none is ever used twice. The next
 * block is reserved once half of the current one is used, without making anyone wait. An owner
 * that lets go cleanly gives the unused rest back, so a gap in the numbering marks only a crash.
 */
export class SequenceAllocator {
  private reserving = false

  private constructor(
    private next: number,
    private ceiling: number,
    private readonly block: number,
    private readonly source: SequenceSource,
  ) {}

  /** Resumes numbering above anything reserved or written before, and reserves a block first. */
  static async resume(source: SequenceSource, block: number): Promise<SequenceAllocator> {
    const [reserved, persisted] = await Promise.all([source.reserved(), source.persisted()])
    const next = Math.max(reserved, persisted) + 1
    const ceiling = next + block - 1
    await source.reserve(ceiling)
    return new SequenceAllocator(next, ceiling, block, source)
  }

  /** Numbering for a session whose row was created with the first block reserved: nothing to read. */
  static fresh(source: SequenceSource, block: number): SequenceAllocator {
    return new SequenceAllocator(1, block, block, source)
  }

  /** The next sequence. */
  take(): number {
    const sequence = this.next++
    if (this.next > this.ceiling - this.block / 2) this.reserveNext()
    return sequence
  }

  /** The last sequence handed out (0 before any). */
  get last(): number {
    return this.next - 1
  }

  /** Whether a block is being reserved (the session is not yet safe to unload). */
  get busy(): boolean {
    return this.reserving
  }

  /**
   * Gives the unused rest of the reserved block back, once every number taken is written and no
   * more will be: the next owner then numbers right after the last event. Nothing to give back
   * while a reservation is under way (the next owner resumes above it).
   */
  async handOff(): Promise<void> {
    if (this.reserving || this.last >= this.ceiling) return
    await this.source.lower(this.ceiling, this.last)
  }

  private reserveNext(): void {
    if (this.reserving) return
    this.reserving = true
    const target = this.ceiling + this.block
    this.source.reserve(target).then(
      () => {
        this.ceiling = target
        this.reserving = false
      },
      (error: unknown) => {
        this.reserving = false
        this.source.failed(error)
      },
    )
  }
}
