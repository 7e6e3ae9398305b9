import { createClient } from 'graphql-sse'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sha256Hex } from '../../src/domain/hash.js'
import {
  ApiKeysDocument,
  CreateApiKeyDocument,
  CreateSessionDocument,
  EnqueueForKeyDocument,
  RevokeApiKeyDocument,
  RotateApiKeyDocument,
  UpdateApiKeyDocument,
  ViewerDocument,
} from '../generated/graphql.js'
import {
  ADMIN_KEY,
  checkBudget,
  checkConcurrentRuns,
  checkExpiry,
  checkRequestsPerMinute,
  checkRevocation,
  checkRotation,
  createKey,
  gql,
  KEYS_CATALOG,
  TENANT,
} from '../helpers/key-checks.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

// Keys stored in the database, on one instance without Redis: its limits count in memory.
describe('API keys, limits and budgets on one instance', () => {
  let t: TestServer
  let url: string
  const logLines: string[] = []
  beforeAll(async () => {
    t = await startTestServer({
      provider: 'sqlite',
      apiKey: ADMIN_KEY,
      logLines,
      app: { catalogDir: KEYS_CATALOG(), apiKeys: [{ sha256: sha256Hex(ADMIN_KEY), tenantId: TENANT, role: 'admin' }] },
    })
    url = t.http.url
  })
  afterAll(() => t?.stop({ dropDatabase: true }))

  it('creates a key whose secret is answered once and works at once; lists show its prefix, never its secret', async () => {
    const created = await gql(url, ADMIN_KEY, CreateApiKeyDocument, { input: { name: 'reporting', role: 'READ' } })
    if (created.data?.createApiKey.__typename !== 'CreateApiKeyPayload') throw new Error(JSON.stringify(created))
    const { key, secret } = created.data.createApiKey
    expect(key).toMatchObject({ name: 'reporting', role: 'READ', tenantId: TENANT, prefix: secret.slice(0, 8), revokedAt: null })
    const viewer = await gql(url, secret, ViewerDocument)
    expect(viewer.data!.viewer).toMatchObject({ tenantId: TENANT, role: 'READ', keysRequired: true, key: { id: key.id } })
    const listed = await gql(url, ADMIN_KEY, ApiKeysDocument, { first: 50 })
    expect(JSON.stringify(listed)).not.toContain(secret)
    expect(listed.data!.apiKeys.edges.map((e) => e.node.id)).toContain(key.id)
    expect(logLines.join('\n')).not.toContain(secret)
    const stored = await t.app.store.apiKeys.find(TENANT, key.id)
    expect(JSON.stringify(stored)).not.toContain(secret)
  })

  it('lets only an admin key manage keys; any other key sees and rotates only itself', async () => {
    const writer = await createKey(url, { name: 'writer' })
    const other = await createKey(url, { name: 'other' })
    const refused = await gql(url, writer.secret, CreateApiKeyDocument, { input: { name: 'x', role: 'ADMIN' } })
    expect(refused.errors?.[0]?.extensions?.code).toBe('FORBIDDEN')
    const own = await gql(url, writer.secret, ApiKeysDocument, {})
    expect(own.data!.apiKeys.edges.map((e) => e.node.id)).toEqual([writer.id])
    const rotateOther = await gql(url, writer.secret, RotateApiKeyDocument, { input: { id: other.id } })
    expect(rotateOther.errors?.[0]?.extensions?.code).toBe('FORBIDDEN')
    expect((await gql(url, other.secret, ViewerDocument)).data?.viewer.key?.id).toBe(other.id)
  })

  it('refuses bad input with a typed error and creates nothing', async () => {
    const before = (await gql(url, ADMIN_KEY, ApiKeysDocument, { first: 200 })).data!.apiKeys.edges.length
    const past = await gql(url, ADMIN_KEY, CreateApiKeyDocument, {
      input: { name: 'late', role: 'WRITE', expiresAt: new Date(Date.now() - 1000).toISOString() },
    })
    expect(past.data?.createApiKey).toMatchObject({ __typename: 'InvalidRequestError', code: 'INVALID_REQUEST' })
    const negative = await gql(url, ADMIN_KEY, CreateApiKeyDocument, {
      input: { name: 'broke', role: 'WRITE', budget: { costUsd: -1, period: 'DAY' } },
    })
    expect(negative.data?.createApiKey.__typename).toBe('InvalidRequestError')
    expect((await gql(url, ADMIN_KEY, ApiKeysDocument, { first: 200 })).data!.apiKeys.edges.length).toBe(before)
  })

  it('runs only the prompts and profiles a key allows', async () => {
    const key = await createKey(url, { allowedProfiles: ['fake-echo'] })
    await gql(url, ADMIN_KEY, UpdateApiKeyDocument, { input: { id: key.id, name: 'echo only' } })
    const session = `allowed-${key.id}`
    await gql(url, ADMIN_KEY, CreateSessionDocument, { input: { id: session } })
    const ok = await gql(url, key.secret, EnqueueForKeyDocument, { input: { sessionId: session, input: 'hi', profileId: 'fake-echo' } })
    expect(ok.data?.enqueuePrompt.__typename).toBe('EnqueuePromptPayload')
    const other = await gql(url, key.secret, EnqueueForKeyDocument, { input: { sessionId: session, input: 'hi', profileId: 'slow-echo' } })
    expect(other.errors?.[0]).toMatchObject({ extensions: { code: 'FORBIDDEN' }, message: "this key may not run profile 'slow-echo'" })
  })

  it('refuses a key over its tokens per minute with RateLimitedError until the window frees', async () => {
    const key = await createKey(url, { limits: { tokensPerMinute: 10 } })
    const session = `tokens-${key.id}`
    await gql(url, ADMIN_KEY, CreateSessionDocument, { input: { id: session } })
    const first = await gql(url, key.secret, EnqueueForKeyDocument, {
      input: { sessionId: session, input: 'one two three four five six', profileId: 'fake-echo' },
    })
    expect(first.data?.enqueuePrompt.__typename).toBe('EnqueuePromptPayload')
    // 6 words in, 6 out: 12 tokens pass the 10 of the minute once the run has ended
    let refused: Record<string, unknown> | undefined
    const deadline = Date.now() + 10_000
    while (!refused && Date.now() < deadline) {
      const next = await gql(url, key.secret, EnqueueForKeyDocument, {
        input: { sessionId: session, input: 'again', profileId: 'fake-echo' },
      })
      if (next.data?.enqueuePrompt.__typename === 'RateLimitedError') refused = next.data.enqueuePrompt
      else await new Promise((resolve) => setTimeout(resolve, 50))
    }
    expect(refused).toMatchObject({ code: 'RATE_LIMITED', limit: 'TOKENS_PER_MINUTE' })
    expect(refused!.retryAfterMs as number).toBeGreaterThan(0)
    expect(refused!.retryAfterMs as number).toBeLessThanOrEqual(60_000)
  })

  it('admits at most a key’s requests per minute', () => checkRequestsPerMinute([url]))
  it('never lets concurrent admissions reserve past a key’s cost budget', () => checkBudget([url]))
  it('never runs more than a key’s concurrent runs at once', () => checkConcurrentRuns([url]))
  it('refuses a revoked key within a second and closes its subscription', () => checkRevocation([url]))
  it('keeps a rotated key’s old secret working through its grace only', () => checkRotation([url]))
  it('refuses a key once it expires', () => checkExpiry([url]))

  it('ends a revoked key’s subscription over SSE with a FORBIDDEN error as its last event', async () => {
    const key = await createKey(url, {})
    const sessionId = `sse-${key.id}`
    await gql(url, ADMIN_KEY, CreateSessionDocument, { input: { id: sessionId, defaultProfileId: 'fake-echo' } })
    await gql(url, key.secret, EnqueueForKeyDocument, { input: { sessionId, input: 'watched' } })
    const client = createClient({
      url: `${url}/graphql/stream`,
      headers: { authorization: `Bearer ${key.secret}` },
      retryAttempts: 0,
    })
    const results: { errors?: readonly { message: string; extensions?: Record<string, unknown> }[] }[] = []
    const query = 'subscription($s: ID!) { sessionEvents(sessionId: $s, afterSequence: 0) { __typename } }'
    try {
      for await (const result of client.iterate({ query, variables: { s: sessionId } })) {
        results.push(result as never)
        if (results.length === 1) await gql(url, ADMIN_KEY, RevokeApiKeyDocument, { input: { id: key.id } })
      }
    } finally {
      client.dispose()
    }
    expect(results.at(-1)!.errors).toEqual([expect.objectContaining({ extensions: expect.objectContaining({ code: 'FORBIDDEN' }) })])
  })

  it('answers a retried admission with its entry even once the budget it reserved from is spent', async () => {
    const key = await createKey(url, { budget: { costUsd: 0.0002, period: 'DAY' } })
    const sessionId = `retry-${key.id}`
    await gql(url, ADMIN_KEY, CreateSessionDocument, { input: { id: sessionId } })
    const input = { sessionId, input: 'once', profileId: 'priced-slow', idempotencyKey: 'retry-1' }
    const first = await gql(url, key.secret, EnqueueForKeyDocument, { input })
    const retry = await gql(url, key.secret, EnqueueForKeyDocument, { input })
    const other = await gql(url, key.secret, EnqueueForKeyDocument, { input: { ...input, idempotencyKey: 'retry-2' } })
    if (first.data?.enqueuePrompt.__typename !== 'EnqueuePromptPayload') throw new Error(JSON.stringify(first))
    expect(retry.data?.enqueuePrompt).toEqual(first.data.enqueuePrompt)
    expect(other.data?.enqueuePrompt).toMatchObject({ __typename: 'BudgetExceededError', budget: 'keyCost' })
  })

  it('answers NOT_FOUND for a revoked key changed again', async () => {
    const key = await createKey(url, {})
    await gql(url, ADMIN_KEY, RevokeApiKeyDocument, { input: { id: key.id } })
    const again = await gql(url, ADMIN_KEY, RevokeApiKeyDocument, { input: { id: key.id } })
    expect(again.data?.revokeApiKey).toMatchObject({ __typename: 'NotFoundError', code: 'NOT_FOUND' })
  })
})
