import { afterEach, describe, expect, it, vi } from 'vitest'
import { CapacityPool, CapacityPools, DEFAULT_CAPACITY, type Release } from '../../src/capacity/capacity-pool.js'
import type { Logger } from '../../src/domain/logger.js'

function recordingLogger() {
  const lines: { level: string; message: string; fields: Record<string, unknown> | undefined }[] = []
  const log = (level: string) => (message: string, fields?: Record<string, unknown>) => void lines.push({ level, message, fields })
  const logger = { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') } as unknown as Logger
  return { logger, lines }
}

const signal = () => new AbortController().signal

async function take(pool: CapacityPool, n: number): Promise<Release[]> {
  return Promise.all(Array.from({ length: n }, () => pool.permit(signal())))
}

describe('the adaptive call limit of a backend', () => {
  afterEach(() => vi.useRealTimers())

  it('is high by default, so the server is not what holds a backend back', () => {
    const pool = new CapacityPools(recordingLogger().logger).get({ id: 'b' })
    expect(pool.snapshot()).toMatchObject({ maxActive: DEFAULT_CAPACITY.maxActive, activeLimit: DEFAULT_CAPACITY.maxActive })
    expect(DEFAULT_CAPACITY.maxActive).toBeGreaterThanOrEqual(1000)
  })

  it('halves from the calls in flight on a throttle, makes new calls wait, and logs the cut', async () => {
    const { logger, lines } = recordingLogger()
    const pool = new CapacityPool('b', { maxAccepted: 100, maxActive: 100, maxWaiting: 100 }, logger)
    const held = await take(pool, 8)
    pool.throttled(null)
    expect(pool.snapshot()).toMatchObject({ activeLimit: 4, active: 8 })
    expect(lines).toContainEqual(
      expect.objectContaining({ level: 'warn', fields: expect.objectContaining({ backendId: 'b', activeLimit: 4 }) }),
    )

    let granted = false
    const next = pool.permit(signal()).then((release) => {
      granted = true
      return release
    })
    for (const release of held.slice(0, 4)) release() // 4 still in flight: at the limit
    await Promise.resolve()
    expect(granted).toBe(false)
    expect(pool.snapshot()).toMatchObject({ active: 4, callsWaiting: 1 })
    held[4]!()
    ;(await next)()
    expect(granted).toBe(true)
    for (const release of held.slice(5)) release()
    expect(pool.snapshot()).toMatchObject({ active: 0, callsWaiting: 0, activeLimit: 4 })
  })

  it('grows back by one per success only while it holds calls back, up to maxActive', async () => {
    const { logger, lines } = recordingLogger()
    const pool = new CapacityPool('b', { maxAccepted: 100, maxActive: 3, maxWaiting: 100 }, logger)
    const [first, second] = await take(pool, 2)
    pool.throttled(null)
    expect(pool.snapshot().activeLimit).toBe(1)
    pool.succeeded() // two in flight over a limit of one: it holds calls back
    expect(pool.snapshot().activeLimit).toBe(2)
    first!()
    second!()
    pool.succeeded() // nothing in flight, nobody waiting: no growth
    expect(pool.snapshot().activeLimit).toBe(2)

    const [a, b] = await take(pool, 2)
    const waiter = pool.permit(signal())
    pool.succeeded() // a call waits: the limit grows and lets it in
    const c = await waiter
    expect(pool.snapshot()).toMatchObject({ activeLimit: 3, active: 3, callsWaiting: 0 })
    expect(lines).toContainEqual(expect.objectContaining({ level: 'info', fields: expect.objectContaining({ activeLimit: 3 }) }))
    pool.succeeded() // at maxActive already
    expect(pool.snapshot().activeLimit).toBe(3)
    for (const release of [a, b, c]) release!()
  })

  it("holds new calls until the vendor's retry-after has passed, holding no permit meanwhile, and an abort leaves the wait", async () => {
    vi.useFakeTimers()
    const pool = new CapacityPool('b', { maxAccepted: 100, maxActive: 10, maxWaiting: 100 }, recordingLogger().logger)
    const [held] = await take(pool, 1)
    pool.throttled(2000)
    expect(pool.snapshot().pausedUntil).toBeInstanceOf(Date)
    held!()
    let granted = false
    const paused = pool.permit(signal()).then((release) => {
      granted = true
      release()
    })
    const leaving = new AbortController()
    const aborted = pool.permit(leaving.signal).catch((error: unknown) => error)
    await vi.advanceTimersByTimeAsync(1900)
    expect(granted).toBe(false)
    expect(pool.snapshot()).toMatchObject({ active: 0 })
    leaving.abort(new Error('gone'))
    expect(await aborted).toMatchObject({ message: 'gone' })
    await vi.advanceTimersByTimeAsync(200)
    await paused
    expect(granted).toBe(true)
    expect(pool.snapshot()).toMatchObject({ active: 0, pausedUntil: null })
  })
})
