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

/** Row writes: they can share a group's COMMIT. A PRAGMA or DDL outside a transaction runs alone (SQLite ignores some PRAGMAs in one). */
const ROW_WRITE = /^\s*(INSERT|UPDATE|DELETE|REPLACE|WITH)\b/i

/** How a statement outside a transaction takes its turn. */
export function statementKind(statement: { readonly: boolean; source: string }): 'read' | 'write' | 'alone' {
  if (statement.readonly) return 'read'
  return ROW_WRITE.test(statement.source) ? 'write' : 'alone'
}

const lost = () => new Error('SQLite ended the open transaction after an error: its writes were not committed')

/**
 * The connection's turns, one at a time: a statement, or a transaction with its awaits. A write
 * opens a group, a transaction left open across turns: the turns that come before the event
 * loop's next check phase (the other requests read in the same poll) write into it too, each
 * transaction inside a savepoint so its rollback undoes only its own writes. One COMMIT then ends
 * the group (sooner when it is full), and every turn in it, reads included, is answered after
 * that COMMIT: what a read saw was written by the group. A COMMIT writes a page of the WAL for
 * every page its transaction touched, so concurrent runs' writes share their pages' writes.
 */
export class SqliteLane {
  private readonly mutex = new Mutex()
  private group: CommitGroup | null = null

  constructor(private readonly statements: LaneStatements) {}

  async enter(): Promise<LaneTurn> {
    return new LaneTurn(this, await this.mutex.acquire())
  }

  /** Runs `work` alone: the open group is committed first (a migration's script has its own transactions). */
  async exclusive<T>(work: () => T | Promise<T>): Promise<T> {
    const turn = await this.enter()
    try {
      this.commitOpenGroup()
      return await work()
    } finally {
      await turn.leave()
    }
  }

  /**
   * @internal the group a turn's statement runs in: the open one, else a new one (`BEGIN`, its
   * COMMIT planned for the next check phase) for a write; a read with no group open runs alone.
   */
  join(writes: boolean): { group: CommitGroup | null; opened: boolean } {
    if (this.group) {
      this.group.turns++
      return { group: this.group, opened: false }
    }
    if (!writes) return { group: null, opened: false }
    this.statements.run('BEGIN')
    const group = new CommitGroup()
    this.group = group
    group.turns++
    setImmediate(() => void this.commitLater(group))
    return { group, opened: true }
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

  /** @internal at a turn's end: the group's COMMIT now when it is full. */
  settle(): void {
    if (this.group && this.group.turns >= MAX_TURNS_PER_COMMIT) this.commitOpenGroup()
  }

  /** The group's planned COMMIT, as a turn of its own: after the turn that holds the lane. */
  private async commitLater(group: CommitGroup): Promise<void> {
    const leave = await this.mutex.acquire()
    try {
      if (this.group === group) this.commitOpenGroup()
    } finally {
      leave()
    }
  }

  /** @internal commits the open group now (the caller holds the lane). */
  commitOpenGroup(): void {
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
  statement(kind: ReturnType<typeof statementKind>): void {
    if (this.group) return
    if (kind === 'alone') this.lane.commitOpenGroup()
    else this.group = this.lane.join(kind === 'write').group
  }

  /** A transaction's start: the group's savepoint, or the group itself. */
  begin(): void {
    const { group, opened } = this.lane.join(true)
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
