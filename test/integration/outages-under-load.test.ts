import { afterAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from '../helpers/databases.js'
import { TwoInstancesUnderLoad } from '../helpers/outage-load.js'
import { type OwnPostgres, startOwnPostgres } from '../helpers/postgres-server.js'
import { type OwnRedis, startOwnRedis } from '../helpers/redis-server.js'

const OUTAGE_MS = 5_000
const outageOf = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

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
    const { readyDuring } = await load.run(async (during) => {
      await postgres!.stop()
      const ready = await during()
      await outageOf(OUTAGE_MS)
      await postgres!.start()
      return ready
    })
    expect(load.refusedDuring().length).toBeGreaterThan(0)
    expect(new Set(load.refusedDuring())).toEqual(new Set(['UNAVAILABLE']))
    expect(readyDuring).toEqual([503, 503])
    await load.expectReady()
    await load.expectEveryAdmissionRanOnce()
    await load.expectSubscribersSawTheLog()
    // neither process restarted, and each told its operators of the outage and its end
    for (const instance of [load.a, load.b]) {
      expect(instance.child.exitCode).toBeNull()
      const lines = load.logOf(instance)
      expect(lines.some((line) => line.message.startsWith('the database is unreachable'))).toBe(true)
      expect(lines.find((line) => line.message === 'the database is reachable again')?.downMs).toBeGreaterThan(OUTAGE_MS / 2)
    }
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

  it('runs every acknowledged admission once, replays to every subscriber with no gap or duplicate, and answers UNAVAILABLE for the other instance meanwhile', async () => {
    redis = await startOwnRedis()
    database = await createTestDatabase('postgresql')
    load = await TwoInstancesUnderLoad.start(database.url, redis.url)
    const { readyDuring } = await load.run(async (during) => {
      await redis!.stop()
      const ready = await during()
      await outageOf(OUTAGE_MS)
      await redis!.start()
      return ready
    })
    // admissions through the holder go on; through the other instance they are refused
    expect(load.refusedDuring().length).toBeGreaterThan(0)
    expect(new Set(load.refusedDuring())).toEqual(new Set(['UNAVAILABLE']))
    expect(readyDuring).toEqual([503, 503])
    await load.expectReady()
    await load.expectEveryAdmissionRanOnce()
    await load.expectSubscribersSawTheLog()
    for (const instance of [load.a, load.b]) {
      expect(instance.child.exitCode).toBeNull()
      const lines = load.logOf(instance)
      expect(lines.some((line) => line.message.startsWith('redis is unreachable'))).toBe(true)
      expect(lines.find((line) => line.message === 'redis is reachable again')?.downMs).toBeGreaterThan(OUTAGE_MS / 2)
    }
  }, 120_000)
})
