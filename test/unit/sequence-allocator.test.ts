import { describe, expect, it } from 'vitest'
import { SequenceAllocator, type SequenceSource } from '../../src/events/sequence-allocator.js'

/** A session row and log in memory; reservations land when the test says so. */
function memorySource(reserved: number, persisted: number) {
  const pending: { ceiling: number; land: () => void; fail: (error: Error) => void }[] = []
  const failures: unknown[] = []
  const row = { ceiling: reserved }
  let held = false
  const source: SequenceSource = {
    reserved: async () => row.ceiling,
    persisted: async () => persisted,
    reserve: (ceiling) =>
      held
        ? new Promise<void>((resolve, reject) =>
            pending.push({
              ceiling,
              land: () => {
                row.ceiling = ceiling
                resolve()
              },
              fail: reject,
            }),
          )
        : Promise.resolve().then(() => {
            row.ceiling = ceiling
          }),
    lower: async (from, to) => {
      if (row.ceiling === from) row.ceiling = to
    },
    failed: (error) => failures.push(error),
  }
  return { source, row, pending, failures, hold: () => (held = true) }
}

describe('the sequence allocator', () => {
  it('resumes above both the reserved ceiling and the log, and reserves a block before the first number', async () => {
    const db = memorySource(1000, 1200)
    const sequences = await SequenceAllocator.resume(db.source, 100)
    expect(db.row.ceiling).toBe(1300)
    expect([sequences.take(), sequences.take()]).toEqual([1201, 1202])
    const crashedBefore = memorySource(2000, 1500)
    expect((await SequenceAllocator.resume(crashedBefore.source, 100)).take()).toBe(2001)
  })

  it('reserves the next block once half of this one is used, without holding up numbering', async () => {
    const db = memorySource(0, 0)
    const sequences = SequenceAllocator.fresh(db.source, 10)
    db.hold()
    const taken = Array.from({ length: 12 }, () => sequences.take())
    expect(taken).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12])
    // one reservation asked for, however many numbers were taken meanwhile
    expect(db.pending.map((p) => p.ceiling)).toEqual([20])
    expect(sequences.busy).toBe(true)
    db.pending[0]!.land()
    await Promise.resolve()
    expect(sequences.busy).toBe(false)
    expect(db.row.ceiling).toBe(20)
  })

  it('reports a failed reservation and asks again at the next number', async () => {
    const db = memorySource(0, 0)
    const sequences = SequenceAllocator.fresh(db.source, 10)
    db.hold()
    for (let i = 0; i < 6; i++) sequences.take()
    db.pending[0]!.fail(new Error('database down'))
    await new Promise(setImmediate)
    expect(db.failures).toEqual([new Error('database down')])
    sequences.take()
    expect(db.pending.map((p) => p.ceiling)).toEqual([20, 20])
  })

  it('gives the unused rest of its block back on a clean handoff, so the next owner numbers right after the last event', async () => {
    // a session row is created with its first block reserved
    const db = memorySource(10, 0)
    const first = SequenceAllocator.fresh(db.source, 10)
    expect([first.take(), first.take(), first.take()]).toEqual([1, 2, 3])
    await first.handOff()
    expect(db.row.ceiling).toBe(3)
    const next = await SequenceAllocator.resume(db.source, 10)
    expect(next.take()).toBe(4)
  })

  it('gives nothing back while a reservation is under way, or once someone reserved since', async () => {
    const db = memorySource(0, 0)
    const busy = SequenceAllocator.fresh(db.source, 10)
    db.hold()
    for (let i = 0; i < 6; i++) busy.take()
    await busy.handOff()
    expect(db.pending).toHaveLength(1)
    db.pending[0]!.land()
    expect(db.row.ceiling).toBe(20)

    const overtaken = memorySource(10, 0)
    const stale = SequenceAllocator.fresh(overtaken.source, 10)
    stale.take()
    overtaken.row.ceiling = 30 // another owner resumed and reserved meanwhile
    await stale.handOff()
    expect(overtaken.row.ceiling).toBe(30)
  })
})
