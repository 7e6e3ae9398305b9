import { Mutex } from 'async-mutex'

/** How many turns one COMMIT may carry: the first turn's answer waits for the group's end. */
const MAX_TURNS_PER_COMMIT = 32

/** What the lane needs of the connection: a statement run with no values, and whether a transaction is open. */
export interface LaneStatements {
  run(sql: string): void
  inTransaction(): boolean
}

/** Consecutive turns' writes in one open transaction, and the promise of its COMMIT. */
class CommitGroup {
  turns = 0
  private settle: (error?: unknown) => void = () => {}
  readonly durable = new Promise<void>((resolve, reject) => {
    this.settle = (error) => (error === undefined ? resolve() : reject(error))
  })

  constructor() {
    // a turn that joined awaits it; this only keeps a failed COMMIT from being unhandled too
    this.durable.catch(() => {})
  }

  end(error?: unknown): void {
    this.settle(error)
  }
}

const lost = () => new Error('SQLite ended the open transaction after an error: its writes were not committed')

/**
 * The connection's turns, one at a time: a statement, or a transaction with its awaits. While
 * other turns wait, the lane leaves its transaction open and the next turn writes into it (a
 * transaction inside a savepoint, so its rollback undoes only its own writes); one COMMIT then
 * ends the group once no turn waits, and every turn in it is answered after that COMMIT. A run's
 * statements cost a fraction of their COMMIT's WAL write, so concurrent runs share one; a turn
 * alone is its own transaction, as without the lane. A turn is answered only once durable,
 * reads included: what they saw was written by turns of the same group.
 */
export class SqliteLane {
  private readonly mutex = new Mutex()
  private waiting = 0
  private group: CommitGroup | null = null

  constructor(private readonly statements: LaneStatements) {}

  async enter(): Promise<LaneTurn> {
    this.waiting++
    const leave = await this.mutex.acquire()
    this.waiting--
    return new LaneTurn(this, leave)
  }

  /** Runs `work` alone: the open group is committed first (a migration's script has its own transactions). */
  async exclusive<T>(work: () => T): Promise<T> {
    const turn = await this.enter()
    try {
      this.commitGroup()
      return work()
    } finally {
      await turn.leave()
    }
  }

  /**
   * @internal the group a turn's statement runs in: the open one, else a new one (`BEGIN`) for a
   * transaction, or for a write while other turns wait; a read or a write alone runs on its own.
   */
  join(kind: 'read' | 'write' | 'transaction'): { group: CommitGroup | null; opened: boolean } {
    if (this.group) {
      this.group.turns++
      return { group: this.group, opened: false }
    }
    if (kind === 'read' || (kind === 'write' && this.waiting === 0)) return { group: null, opened: false }
    this.statements.run('BEGIN')
    this.group = new CommitGroup()
    this.group.turns++
    return { group: this.group, opened: true }
  }

  /** @internal whether `group` is still the open one (SQLite may have ended it). */
  isOpen(group: CommitGroup | null): boolean {
    return group !== null && this.group === group
  }

  /** @internal a transaction's savepoint statements, or the rollback of the whole group it opened. */
  run(sql: string): void {
    this.statements.run(sql)
  }

  /** @internal ends the group when SQLite has rolled its transaction back itself, failing every turn in it. */
  checkGroup(): void {
    if (this.group && !this.statements.inTransaction()) this.endGroup(lost())
  }

  /** @internal a group opened by a transaction that rolled back before any other turn joined it. */
  dropGroup(): void {
    this.statements.run('ROLLBACK')
    this.endGroup()
  }

  /** @internal at a turn's end: the group's COMMIT when no turn waits or the group is full. */
  settle(): void {
    if (this.group && (this.waiting === 0 || this.group.turns >= MAX_TURNS_PER_COMMIT)) this.commitGroup()
  }

  private commitGroup(): void {
    if (!this.group) return
    this.checkGroup()
    if (!this.group) return
    try {
      this.statements.run('COMMIT')
      this.endGroup()
    } catch (error) {
      if (this.statements.inTransaction()) this.statements.run('ROLLBACK')
      this.endGroup(error)
    }
  }

  private endGroup(error?: unknown): void {
    this.group?.end(error)
    this.group = null
  }
}

/** One holder of the lane; `leave()` hands it on and answers once the turn's writes are durable. */
export class LaneTurn {
  private group: CommitGroup | null = null
  private savepoint = false

  constructor(
    private readonly lane: SqliteLane,
    private readonly release: () => void,
  ) {}

  /** Before each statement of the turn (in a transaction, it already has its group). */
  statement(writes: boolean): void {
    if (this.group) return
    this.group = this.lane.join(writes ? 'write' : 'read').group
  }

  /** A transaction's start: the group's savepoint, or the group itself. */
  begin(): void {
    const { group, opened } = this.lane.join('transaction')
    this.group = group
    this.savepoint = !opened
    if (this.savepoint) this.lane.run('SAVEPOINT turn')
  }

  /** The transaction's end; its writes become durable with the group's COMMIT. */
  commit(): void {
    if (this.savepoint) this.lane.run('RELEASE turn')
    this.savepoint = false
  }

  /** Undoes the transaction's writes, and no earlier turn's. */
  rollback(): void {
    this.lane.checkGroup()
    // when SQLite has rolled the group back itself, nothing is left to undo
    if (this.lane.isOpen(this.group)) {
      if (this.savepoint) {
        this.lane.run('ROLLBACK TO turn')
        this.lane.run('RELEASE turn')
      } else this.lane.dropGroup()
    }
    this.savepoint = false
    this.group = null
  }

  /** After a statement failed: SQLite may have rolled the whole group back; the statement's own error says so. */
  failed(): void {
    this.lane.checkGroup()
    if (!this.lane.isOpen(this.group)) this.group = null
  }

  async leave(): Promise<void> {
    const group = this.group
    this.group = null
    this.lane.settle()
    this.release()
    await group?.durable
  }
}
