import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'
import { CreateSessionDocument, EnqueuePromptDocument, SessionEventsDocument } from '../generated/graphql.js'
import { createTestDatabase, type TestDatabase } from '../helpers/databases.js'
import { scrape } from '../helpers/prometheus.js'
import { type OwnRedis, startOwnRedis } from '../helpers/redis-server.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

/** Resolves once every server answers /readyz 200: Redis is back and reconnected (ioredis, with its own backoff). */
async function ready(...servers: TestServer[]): Promise<void> {
  for (const server of servers)
    await vi.waitFor(async () => expect((await fetch(`${server.http.url}/readyz`)).status).toBe(200), { timeout: 15_000, interval: 100 })
}

describe('Redis going away and coming back', () => {
  let redis: OwnRedis
  let server: TestServer
  const logLines: string[] = []
  beforeAll(async () => {
    redis = await startOwnRedis()
    server = await startTestServer({
      provider: 'sqlite',
      app: { redisUrl: redis.url, redisPrefix: `test-${randomBytes(6).toString('hex')}:` },
      logLines,
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
  beforeEach(() => ready(server))

  it('answers /readyz 503 naming Redis, instead of hanging, while Redis is frozen (no answer, no reset), and 200 once it answers again', async () => {
    expect((await probe('/readyz')).status).toBe(200)
    redis.pause()
    try {
      expect(await probe('/readyz')).toEqual({ status: 503, body: { status: 'unavailable', reason: 'redis does not answer' } })
      expect((await probe('/healthz')).status).toBe(200)
    } finally {
      redis.resume()
    }
    await ready(server)
  }, 30_000)

  it('answers /readyz 503 naming Redis while it is gone, keeps /healthz 200, and is ready again once it is back', async () => {
    expect(await probe('/readyz')).toEqual({ status: 200, body: { status: 'ready' } })
    await redis.stop()
    expect(await probe('/readyz')).toEqual({ status: 503, body: { status: 'unavailable', reason: 'redis does not answer' } })
    expect((await probe('/healthz')).status).toBe(200)
    await redis.start()
    await ready(server)
  }, 30_000)

  it("streams a session's events to the subscribers of the instance holding it while Redis is gone, with no gap", async () => {
    await server.request(CreateSessionDocument, { input: { id: 'streams-on', defaultProfileId: 'fake-echo' } })
    const events = server.subscribe(SessionEventsDocument, { sessionId: 'streams-on', afterSequence: 0 })
    await server.request(EnqueuePromptDocument, { input: { sessionId: 'streams-on', input: 'before' } })
    const finished = () => events.results.filter((r) => r.data?.sessionEvents.__typename === 'RunFinishedEvent').length
    await events.until(() => finished() === 1)
    await redis.stop()
    try {
      const enqueued = await server.request(EnqueuePromptDocument, { input: { sessionId: 'streams-on', input: 'while redis is gone' } })
      expect(enqueued.data?.enqueuePrompt.__typename).toBe('EnqueuePromptPayload')
      await events.until(() => finished() === 2)
      const sequences = events.results.map((r) => r.data!.sessionEvents.sequence)
      expect(sequences).toEqual(Array.from({ length: sequences.length }, (_, i) => i + 1))
    } finally {
      events.unsubscribe()
      await redis.start()
    }
  }, 30_000)

  it('tells operators: promptline_dependency_up is 0 for redis while it is gone, and one log line marks the outage, one its end with how long it lasted', async () => {
    const redisUp = async () => (await scrape(server.http.url))('promptline_dependency_up', { dependency: 'redis' })
    expect(await redisUp()).toBe(1)
    logLines.length = 0
    await redis.stop()
    expect(await redisUp()).toBe(0)
    expect((await scrape(server.http.url))('promptline_dependency_up', { dependency: 'database' })).toBe(1)
    await redis.start()
    await vi.waitFor(async () => expect(await redisUp()).toBe(1), { timeout: 15_000, interval: 200 })
    const outage = logLines.map((line) => JSON.parse(line)).filter((entry) => /^redis is (unreachable|reachable again)/.test(entry.message))
    expect(outage).toEqual([
      expect.objectContaining({ level: 'error', since: expect.any(String) }),
      expect.objectContaining({ level: 'info', since: outage[0]?.since, downMs: expect.any(Number) }),
    ])
  }, 30_000)
})

describe.skipIf(!process.env.DATABASE_URL)('two instances while Redis is gone', () => {
  let redis: OwnRedis
  let database: TestDatabase
  let a: TestServer
  let b: TestServer
  const bLogs: string[] = []
  beforeAll(async () => {
    redis = await startOwnRedis()
    database = await createTestDatabase('postgresql')
    const app = { redisUrl: redis.url, redisPrefix: `test-${randomBytes(6).toString('hex')}:` }
    a = await startTestServer({ provider: 'postgresql', database, app })
    b = await startTestServer({ provider: 'postgresql', database, app, logLines: bLogs })
  })
  afterAll(async () => {
    await a?.stop()
    await b?.stop({ dropDatabase: true })
    await redis?.stop()
  })

  it('answers UNAVAILABLE with retryAfterMs where the session is held by the other instance, keeps serving it at its holder, and routes again once Redis is back', async () => {
    // A creates the session, so A holds it
    await a.request(CreateSessionDocument, { input: { id: 'held-by-a', defaultProfileId: 'fake-echo' } })
    const enqueue = (through: TestServer, input: string) =>
      through.request(EnqueuePromptDocument, { input: { sessionId: 'held-by-a', input } })
    await redis.stop()

    const refused = await enqueue(b, 'through b while redis is gone')
    expect(refused.data).toBeNull()
    expect(refused.errors?.[0]?.extensions).toEqual({ code: 'UNAVAILABLE', retryAfterMs: 1000 })
    const kept = await enqueue(a, 'through a while redis is gone')
    expect(kept.data?.enqueuePrompt.__typename).toBe('EnqueuePromptPayload')

    await redis.start()
    await vi.waitFor(
      async () => expect((await enqueue(b, 'through b once redis is back')).data?.enqueuePrompt.__typename).toBe('EnqueuePromptPayload'),
      { timeout: 15_000, interval: 200 },
    )
  }, 30_000)

  it('replays to a subscriber on the other instance, once Redis is back, what the holder published while it was gone: no gap, no duplicate', async () => {
    await ready(a, b)
    await a.request(CreateSessionDocument, { input: { id: 'watched-from-b', defaultProfileId: 'fake-echo' } })
    const events = b.subscribe(SessionEventsDocument, { sessionId: 'watched-from-b', afterSequence: 0 })
    const finished = () => events.results.filter((r) => r.data?.sessionEvents.__typename === 'RunFinishedEvent').length
    await a.request(EnqueuePromptDocument, { input: { sessionId: 'watched-from-b', input: 'before' } })
    await events.until(() => finished() === 1)
    await redis.stop()
    try {
      // the holder runs it while nobody else hears
      const ran = await a.request(EnqueuePromptDocument, { input: { sessionId: 'watched-from-b', input: 'while redis is gone' } })
      expect(ran.data?.enqueuePrompt.__typename).toBe('EnqueuePromptPayload')
    } finally {
      await redis.start()
    }
    await events.until(() => finished() === 2, 20_000)
    events.unsubscribe()
    const sequences = events.results.map((r) => r.data!.sessionEvents.sequence)
    expect(sequences).toEqual(Array.from({ length: sequences.length }, (_, i) => i + 1))
  }, 40_000)

  it('lets a subscription opened on the other instance while Redis is gone hear the session once Redis is back', async () => {
    await ready(a, b)
    await a.request(CreateSessionDocument, { input: { id: 'opened-in-outage', defaultProfileId: 'fake-echo' } })
    await redis.stop()
    const events = b.subscribe(SessionEventsDocument, { sessionId: 'opened-in-outage' })
    try {
      // Redis stays away until B has given up on the subscription's SUBSCRIBE (its retries spent)
      await vi.waitFor(() => expect(bLogs.some((line) => line.includes('could not subscribe in redis'))).toBe(true), {
        timeout: 15_000,
        interval: 50,
      })
    } finally {
      await redis.start()
    }
    await ready(b)
    await a.request(EnqueuePromptDocument, { input: { sessionId: 'opened-in-outage', input: 'after the outage' } })
    await events.until((results) => results.some((r) => r.data?.sessionEvents.__typename === 'RunFinishedEvent'), 20_000)
    events.unsubscribe()
  }, 40_000)
})
