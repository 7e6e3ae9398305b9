import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { type OwnRedis, startOwnRedis } from '../helpers/redis-server.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

describe('Redis going away and coming back', () => {
  let redis: OwnRedis
  let server: TestServer
  beforeAll(async () => {
    redis = await startOwnRedis()
    server = await startTestServer({
      provider: 'sqlite',
      app: { redisUrl: redis.url, redisPrefix: `test-${randomBytes(6).toString('hex')}:` },
    })
  })
  afterAll(async () => {
    await server?.stop({ dropDatabase: true })
    await redis?.stop()
  })

  const probe = async (path: string) => {
    const response = await fetch(`${server.http.url}${path}`)
    return { status: response.status, body: (await response.json()) as { status: string; reason?: string } }
  }

  it('answers /readyz 503 naming Redis, instead of hanging, while Redis is frozen (no answer, no reset), and 200 once it answers again', async () => {
    expect((await probe('/readyz')).status).toBe(200)
    redis.pause()
    try {
      expect(await probe('/readyz')).toEqual({ status: 503, body: { status: 'unavailable', reason: 'redis does not answer' } })
      expect((await probe('/healthz')).status).toBe(200)
    } finally {
      redis.resume()
    }
    await vi.waitFor(async () => expect((await probe('/readyz')).status).toBe(200), { timeout: 15_000, interval: 200 })
  }, 30_000)

  it('answers /readyz 503 naming Redis while it is gone, keeps /healthz 200, and is ready again once it is back', async () => {
    expect(await probe('/readyz')).toEqual({ status: 200, body: { status: 'ready' } })
    await redis.stop()
    // the probe answers rather than waiting for the connection to come back
    expect(await probe('/readyz')).toEqual({ status: 503, body: { status: 'unavailable', reason: 'redis does not answer' } })
    expect((await probe('/healthz')).status).toBe(200)
    await redis.start()
    // ioredis reconnects by itself, with its own backoff
    await vi.waitFor(async () => expect((await probe('/readyz')).status).toBe(200), { timeout: 15_000, interval: 200 })
  }, 30_000)
})
