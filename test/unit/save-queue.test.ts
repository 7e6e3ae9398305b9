import { describe, expect, it } from 'vitest'
import { SaveQueue } from '../../src/store/save-queue.js'

const tick = () => new Promise((r) => setTimeout(r, 5))

describe('the save queue', () => {
  it('runs one key in order and different keys independently', async () => {
    const log: string[] = []
    const queue = new SaveQueue(() => {})
    queue.enqueue('a', async () => {
      await tick()
      log.push('a-insert')
    })
    queue.enqueue('a', async () => log.push('a-update'))
    queue.enqueue('b', async () => log.push('b-insert'))
    await queue.flush()
    expect(log.indexOf('a-insert')).toBeLessThan(log.indexOf('a-update'))
    expect(log.indexOf('b-insert')).toBeLessThan(log.indexOf('a-insert')) // b did not wait for a
  })

  it('replaces a pending whole-row update with a newer one, never the insert before it', async () => {
    const log: string[] = []
    const queue = new SaveQueue(() => {})
    queue.enqueue('run', async () => {
      await tick()
      log.push('insert')
    })
    queue.enqueue('run', async () => log.push('update 1'), 'update')
    queue.enqueue('run', async () => log.push('update 2'), 'update')
    queue.enqueue('run', async () => log.push('heartbeat'))
    queue.enqueue('run', async () => log.push('update 3'), 'update')
    await queue.settled('run')
    expect(log).toEqual(['insert', 'update 2', 'heartbeat', 'update 3'])
  })

  it('discards the pending whole-row updates of a key, never a running one or another kind', async () => {
    const log: string[] = []
    const queue = new SaveQueue(() => {})
    queue.enqueue(
      'run',
      async () => {
        await tick()
        log.push('update 1')
      },
      'update',
    )
    await new Promise(setImmediate) // update 1 is running
    queue.enqueue('run', async () => log.push('heartbeat'))
    queue.enqueue('run', async () => log.push('update 2'), 'update')
    queue.discard('run', 'update')
    queue.discard('other', 'update')
    await queue.settled('run')
    expect(log).toEqual(['update 1', 'heartbeat'])
  })

  it('reports a failed task and goes on with the next', async () => {
    const errors: string[] = []
    const log: string[] = []
    const queue = new SaveQueue((key, error) => errors.push(`${key}: ${(error as Error).message}`))
    queue.enqueue('k', async () => {
      throw new Error('disk full')
    })
    queue.enqueue('k', async () => log.push('next'))
    await queue.flush()
    expect(errors).toEqual(['k: disk full'])
    expect(log).toEqual(['next'])
  })
})
