import { describe, expect, it } from 'vitest'
import { RecordJournal } from '../../src/runner/record-journal.js'

/** A write that lands when the test says so. */
function heldWrite(log: string[], name: string) {
  let land!: () => void
  const landed = new Promise<void>((resolve) => {
    land = resolve
  })
  return {
    land,
    run: async () => {
      log.push(`start ${name}`)
      await landed
      log.push(`end ${name}`)
    },
  }
}

describe('a record journal', () => {
  it('runs its writes one at a time, in order, after the write it was opened behind', async () => {
    const log: string[] = []
    const claim = heldWrite(log, 'claim')
    const first = heldWrite(log, 'first')
    const journal = new RecordJournal(() => {}, claim.run())
    const firstDone = journal.write(first.run)
    const secondDone = journal.write(async () => log.push('second'))
    await Promise.resolve()
    expect(log).toEqual(['start claim'])
    claim.land()
    await new Promise(setImmediate)
    expect(log).toEqual(['start claim', 'end claim', 'start first'])
    first.land()
    await Promise.all([firstDone, secondDone])
    expect(log).toEqual(['start claim', 'end claim', 'start first', 'end first', 'second'])
  })

  it('writes a burst of row saves once, with the record as it is when the write runs', async () => {
    const record = { status: 'A' }
    const written: string[] = []
    const journal = new RecordJournal(() => {})
    for (const status of ['B', 'C', 'D']) {
      record.status = status
      journal.saveRow(async () => {
        written.push(record.status)
      })
    }
    await journal.write(async () => {})
    expect(written).toEqual(['D'])
  })

  it('queues a row save behind a write in flight, and runs a failed write past to the next', async () => {
    const log: string[] = []
    const errors: unknown[] = []
    const held = heldWrite(log, 'held')
    const journal = new RecordJournal((error) => errors.push(error))
    const failed = journal.write(async () => {
      throw new Error('refused')
    })
    await expect(failed).rejects.toThrow('refused')
    void journal.write(held.run)
    journal.saveRow(async () => {
      log.push('row')
    })
    await new Promise(setImmediate)
    expect(log).toEqual(['start held'])
    held.land()
    await journal.write(async () => {})
    expect(log).toEqual(['start held', 'end held', 'row'])
    expect(errors).toEqual([])
  })

  it('drops a row save still waiting once closed: the last write stands for it', async () => {
    const written: string[] = []
    const journal = new RecordJournal(() => {})
    journal.saveRow(async () => {
      written.push('row')
    })
    await journal.close()
    journal.saveRow(async () => {
      written.push('after')
    })
    await journal.write(async () => written.push('end'))
    expect(written).toEqual(['end'])
  })

  it('reports a failed row save to its owner', async () => {
    const errors: unknown[] = []
    const journal = new RecordJournal((error) => errors.push((error as Error).message))
    journal.saveRow(async () => {
      throw new Error('disk full')
    })
    await journal.write(async () => {})
    expect(errors).toEqual(['disk full'])
  })
})
