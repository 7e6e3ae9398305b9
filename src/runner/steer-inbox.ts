export interface Steer {
  steerId: string
  text: string
}

/** Steers accepted for one run: pending until the generation loop applies them. */
export class SteerInbox {
  private readonly seen = new Set<string>()
  private pending: Steer[] = []

  has(steerId: string): boolean {
    return this.seen.has(steerId)
  }

  add(steer: Steer): void {
    this.seen.add(steer.steerId)
    this.pending.push(steer)
  }

  get waiting(): boolean {
    return this.pending.length > 0
  }

  /** Bytes of the steers not yet applied (they count against the session's limits). */
  get pendingBytes(): number {
    return this.pending.reduce((n, s) => n + Buffer.byteLength(s.text), 0)
  }

  get pendingCount(): number {
    return this.pending.length
  }

  take(): Steer[] {
    const taken = this.pending
    this.pending = []
    return taken
  }

  /** Ids accepted but never applied. */
  unapplied(): string[] {
    return this.pending.map((s) => s.steerId)
  }
}
