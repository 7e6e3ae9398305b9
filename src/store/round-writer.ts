import type { Condition, RawWriter, Row, Writer } from './raw-writer.js'

interface PendingUpdate {
  table: string
  key: { column: string; value: unknown }
  values: Row
  json: ReadonlySet<string> | undefined
  condition: Condition | null | undefined
  resolve: (changed: number) => void
}

interface InsertGroup {
  table: string
  rows: Row[]
  json: ReadonlySet<string> | undefined
}

/**
 * The writer the writes of one shared transaction go through, so that many runs' rows cost few
 * statements: inserts are gathered and go out as one multi-row statement per table and shape;
 * updates wait for the round and go out together per table, columns and condition (one statement
 * on SQLite, `RawWriter.updateRows`), each write seeing its own update's count before it goes on.
 * A round sends what is gathered — inserts first, so an update submitted with the insert of its
 * row finds it — and the writes then go on to their next step. `quiet()` tells when every write
 * has gone as far as it can, counted rather than waited for: a turn of the event loop lasts
 * milliseconds under load, and every other write waits for the transaction that long.
 */
export class RoundWriter {
  private readonly inserts = new Map<string, InsertGroup>()
  private updates: PendingUpdate[] = []
  /** Writes neither settled nor waiting for an update's count. */
  private running = 0
  private wake: (() => void) | null = null

  /** Runs `write` in this round's transaction. */
  run<T>(write: (raw: Writer) => Promise<T>): Promise<T> {
    let updates = 0
    let state: 'running' | 'waiting' | 'settled' = 'running'
    const writer: Writer = {
      insert: (table, rows, json) => this.insert(table, rows, json),
      update: (table, key, values, json, condition) => {
        updates++
        if (state === 'running') {
          state = 'waiting'
          this.paused()
        }
        return new Promise((resolve) => {
          const counted = (changed: number) => {
            if (--updates === 0 && state === 'waiting') {
              state = 'running'
              this.running++
            }
            resolve(changed)
          }
          this.updates.push({ table, key, values, json, condition, resolve: counted })
        })
      },
    }
    this.running++
    return write(writer).finally(() => {
      if (state === 'running') this.paused()
      state = 'settled'
    })
  }

  /** Resolves once every write has settled or waits for the next round. */
  quiet(): Promise<void> {
    if (this.running === 0) return Promise.resolve()
    return new Promise((resolve) => {
      this.wake = resolve
    })
  }

  private paused(): void {
    if (--this.running > 0 || !this.wake) return
    const wake = this.wake
    this.wake = null
    wake()
  }

  private insert(table: string, rows: readonly Row[], json?: ReadonlySet<string>): Promise<void> {
    if (rows.length === 0) return Promise.resolve()
    const shape = `${table}(${Object.keys(rows[0]!).join(',')})`
    const group = this.inserts.get(shape)
    if (group) group.rows.push(...rows)
    else this.inserts.set(shape, { table, rows: [...rows], json })
    return Promise.resolve()
  }

  /** Nothing gathered: once `quiet()` has resolved, every write has settled. */
  get idle(): boolean {
    return this.inserts.size === 0 && this.updates.length === 0
  }

  /** Sends what is gathered through `raw`. A statement that fails fails the round (and so the transaction). */
  async send(raw: RawWriter): Promise<void> {
    const inserts = [...this.inserts.values()]
    this.inserts.clear()
    for (const { table, rows, json } of inserts) await raw.insert(table, rows, json)
    const updates = this.updates
    this.updates = []
    // updates of one table, columns and condition share a statement; a row updated twice, or an
    // update whose condition binds values, first sends what is gathered so its order holds
    let groups = new Map<string, { condition: string; keys: Set<unknown>; updates: PendingUpdate[] }>()
    const sendGroups = async () => {
      for (const { condition, updates: group } of groups.values()) {
        const [first] = group
        const items = group.map((u) => ({ key: u.key.value, values: u.values }))
        const changed = await raw.updateRows(first!.table, first!.key.column, items, first!.json, condition || null)
        for (const u of group) u.resolve(changed.has(u.key.value) ? 1 : 0)
      }
      groups = new Map()
    }
    for (const u of updates) {
      const condition = u.condition ? withoutValues(u.condition) : ''
      if (condition === null) {
        await sendGroups()
        u.resolve(await raw.update(u.table, u.key, u.values, u.json, u.condition))
        continue
      }
      const shape = `${u.table}\u0000${u.key.column}\u0000${Object.keys(u.values).join(',')}\u0000${condition}`
      if (groups.get(shape)?.keys.has(u.key.value)) await sendGroups()
      let group = groups.get(shape)
      if (!group) {
        group = { condition, keys: new Set(), updates: [] }
        groups.set(shape, group)
      }
      group.keys.add(u.key.value)
      group.updates.push(u)
    }
    await sendGroups()
  }
}

/** A condition's SQL when it binds no value (so rows may share it), else null. */
function withoutValues(condition: Condition): string | null {
  let binds = false
  const sql = condition(() => {
    binds = true
    return '?'
  })
  return binds ? null : sql
}
