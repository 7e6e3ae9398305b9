import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sha256Hex } from '../../src/domain/hash.js'
import { CreateSessionDocument, EnqueueForKeyDocument } from '../generated/graphql.js'
import { ADMIN_KEY, createKey, gql, KEYS_CATALOG, TENANT } from '../helpers/key-checks.js'
import { type OwnRedis, startOwnRedis } from '../helpers/redis-server.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

// While Redis (the shared counters) is away, a key with limits of its own is refused or let
// through as PROMPTLINE_LIMITS_WITHOUT_REDIS says; a key without them is never refused for it.
describe.skipIf(!process.env.REDIS_URL).each(['deny', 'allow'] as const)('limits while Redis is away (%s)', (policy) => {
  let redis: OwnRedis
  let t: TestServer
  beforeAll(async () => {
    redis = await startOwnRedis()
    t = await startTestServer({
      provider: 'sqlite',
      apiKey: ADMIN_KEY,
      app: {
        redisUrl: redis.url,
        limitsWithoutRedis: policy,
        catalogDir: KEYS_CATALOG(),
        apiKeys: [{ sha256: sha256Hex(ADMIN_KEY), tenantId: TENANT, role: 'admin' }],
      },
    })
  })
  afterAll(async () => {
    await t?.stop({ dropDatabase: true })
    await redis?.stop()
  })

  it(`${policy === 'deny' ? 'refuses' : 'admits'} a key with limits of its own, and admits one without, until Redis is back`, async () => {
    const url = t.http.url
    const limited = await createKey(url, { limits: { requestsPerMinute: 100 } })
    await gql(url, ADMIN_KEY, CreateSessionDocument, { input: { id: 'away', defaultProfileId: 'fake-echo' } })
    const admit = (secret: string) => gql(url, secret, EnqueueForKeyDocument, { input: { sessionId: 'away', input: 'hello' } })
    expect((await admit(limited.secret)).data?.enqueuePrompt.__typename).toBe('EnqueuePromptPayload')
    await redis.stop()
    const whileAway = await admit(limited.secret)
    if (policy === 'deny') expect(whileAway.errors?.[0]?.extensions).toMatchObject({ code: 'UNAVAILABLE', retryAfterMs: 1_000 })
    else expect(whileAway.data?.enqueuePrompt.__typename).toBe('EnqueuePromptPayload')
    expect((await admit(ADMIN_KEY)).data?.enqueuePrompt.__typename).toBe('EnqueuePromptPayload')
    await redis.start()
    const deadline = Date.now() + 15_000
    let back = await admit(limited.secret)
    while (back.data?.enqueuePrompt.__typename !== 'EnqueuePromptPayload' && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      back = await admit(limited.secret)
    }
    expect(back.data?.enqueuePrompt.__typename).toBe('EnqueuePromptPayload')
  }, 30_000)
})
