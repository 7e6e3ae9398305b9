import { afterAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from '../helpers/databases.js'
import { TwoInstancesUnderLoad } from '../helpers/outage-load.js'
import { type OwnPostgres, startOwnPostgres } from '../helpers/postgres-server.js'
import { type OwnRedis, startOwnRedis } from '../helpers/redis-server.js'

const OUTAGE_MS = 5_000

/**
 * Runs the load while `dependency` is stopped for 5 s and started again, then checks what every
 * outage must leave: UNAVAILABLE the only refusal, /readyz 503 during and 200 after, every
 * acknowledged admission run once, every subscriber given the log, both processes up, and each
 * of them logging the outage (`lost`) and its end (`back`, with how long).
 */
async function throughAnOutage(
  load: TwoInstancesUnderLoad,
  dependency: { stop(): Promise<void>; start(): Promise<void> },
  log: { lost: string; back: string },
): Promise<void> {
  const { readyDuring } = await load.run(async (during) => {
    await dependency.stop()
    const ready = await during()
    await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS))
    await dependency.start()
    return ready
  })
  expect(load.refusedDuring().length).toBeGreaterThan(0)
  expect(new Set(load.refusedDuring())).toEqual(new Set(['UNAVAILABLE']))
  expect(readyDuring).toEqual([503, 503])
  await load.expectReady()
  await load.expectEveryAdmissionRanOnce()
  await load.expectSubscribersSawTheLog()
  for (const instance of [load.a, load.b]) {
    expect(instance.child.exitCode).toBeNull()
    const lines = load.logOf(instance)
    expect(lines.some((line) => line.message.startsWith(log.lost))).toBe(true)
    expect(lines.find((line) => line.message === log.back)?.downMs).toBeGreaterThan(OUTAGE_MS / 2)
  }
}

describe.skipIf(!process.env.REDIS_URL)('two instances under load while PostgreSQL stops for 5 s and starts again', () => {
  let postgres: OwnPostgres | undefined
  let load: TwoInstancesUnderLoad | undefined
  afterAll(async () => {
    await load?.stop()
    await postgres?.remove()
  })

  it('loses no acknowledged admission, ends every run once where it ran, writes what subscribers saw, and answers UNAVAILABLE meanwhile', async () => {
    postgres = await startOwnPostgres()
    load = await TwoInstancesUnderLoad.start(postgres.url, process.env.REDIS_URL!)
    await throughAnOutage(load, postgres, { lost: 'the database is unreachable', back: 'the database is reachable again' })
  }, 120_000)
})

describe.skipIf(!process.env.DATABASE_URL)('two instances under load while Redis stops for 5 s and starts again', () => {
  let redis: OwnRedis | undefined
  let database: TestDatabase | undefined
  let load: TwoInstancesUnderLoad | undefined
  afterAll(async () => {
    await load?.stop()
    await redis?.stop()
    await database?.drop()
  })

  // admissions through the holder go on; through the other instance they are refused
  it('runs every acknowledged admission once, replays to every subscriber with no gap or duplicate, and answers UNAVAILABLE for the other instance meanwhile', async () => {
    redis = await startOwnRedis()
    database = await createTestDatabase('postgresql')
    load = await TwoInstancesUnderLoad.start(database.url, redis.url)
    await throughAnOutage(load, redis, { lost: 'redis is unreachable', back: 'redis is reachable again' })
  }, 120_000)
})
