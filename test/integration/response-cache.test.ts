import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { FakeVendorServer } from '../fixtures/fake-vendor.js'
import { RunEventsDocument, RunForAnswerDocument, type RunForAnswerMutationVariables } from '../generated/graphql.js'
import { providers } from '../helpers/databases.js'
import { startWithFakeVendors, type VendorTestServer } from '../helpers/fake-vendors.js'
import { createSession } from '../helpers/flow.js'
import type { TestServer } from '../helpers/server.js'

// The exact response cache: a request equal in all that decides its answer gets the earlier
// answer as a run of its own, free, and uncounted by budgets; a request may bypass it.
describe.each(providers)('the exact response cache (%s)', (provider) => {
  let openai: FakeVendorServer
  let t: TestServer
  let vendors: VendorTestServer
  let sessions = 0
  beforeAll(async () => {
    const budgets = [{ tenantId: 'local', metric: 'tokens' as const, limit: 1_000, windowMs: 86_400_000 }]
    vendors = await startWithFakeVendors(
      `
profiles:
  - { id: gpt, backendId: oa, model: gpt-4o, cache: { mode: EXACT, ttlSeconds: 600 } }
`,
      { provider, app: { budgets } },
    )
    ;({ t, openai } = vendors)
  })
  afterAll(() => vendors?.stop())

  /** Runs in a fresh session, so equal inputs render equal messages. */
  async function run(input: Omit<RunForAnswerMutationVariables['input'], 'sessionId'>) {
    const sessionId = await createSession(t, `cached-${sessions++}`)
    const { data } = await t.request(RunForAnswerDocument, { input: { sessionId, profileId: 'gpt', ...input } })
    if (data?.runPrompt.__typename !== 'RunPromptPayload') throw new Error(JSON.stringify(data))
    return data.runPrompt.run!
  }
  async function tokensUsed(): Promise<number> {
    const response = await t.app.yoga.fetch('http://promptline.test/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ budgets { used } }' }),
    })
    return ((await response.json()) as { data: { budgets: { used: number }[] } }).data.budgets[0]!.used
  }

  it('answers an equal request from the cache as its own zero-cost run naming its source, streamed as token events', async () => {
    const source = await run({ input: 'what is the capital of France' })
    expect(source.cache).toEqual({ hit: false, sourceRunId: null, ageMs: null, sourceUsage: null, sourceCost: null })
    expect(source.usage!.outputTokens).toBeGreaterThan(0)
    expect(source.cost).toBeGreaterThan(0)
    const calls = openai.requests.length

    const hit = await run({ input: 'what is the capital of France' })
    expect(openai.requests.length).toBe(calls)
    expect(hit).toMatchObject({ status: 'COMPLETED', output: source.output, cost: 0 })
    expect(hit.id).not.toBe(source.id)
    expect(hit.usage).toEqual({ inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 })
    expect(hit.cache).toMatchObject({
      hit: true,
      sourceRunId: source.id,
      sourceUsage: { inputTokens: source.usage!.inputTokens, outputTokens: source.usage!.outputTokens },
      sourceCost: source.cost,
    })
    expect(hit.cache!.ageMs).toBeGreaterThanOrEqual(0)

    const events = t.subscribe(RunEventsDocument, { runId: hit.id, afterSequence: 0 })
    await events.until((results) => results.some((r) => r.data?.runEvents.__typename === 'RunFinishedEvent'))
    events.unsubscribe()
    const text = events.results.flatMap((r) => (r.data!.runEvents.__typename === 'TokenDeltaEvent' ? [r.data!.runEvents.text] : []))
    expect(text.join('')).toBe(source.output)
  })

  it('does not count a hit against the token budget', async () => {
    await run({ input: 'name a primary colour' })
    const used = await tokensUsed()
    expect(used).toBeGreaterThan(0)
    for (let i = 0; i < 3; i++) expect((await run({ input: 'name a primary colour' })).cache?.hit).toBe(true)
    expect(await tokensUsed()).toBe(used)
  })

  it('misses when settings or the namespace differ, and is bypassed by a request that turns it OFF', async () => {
    await run({ input: 'count to three' })
    const calls = openai.requests.length
    const warmer = await run({ input: 'count to three', overrides: { temperature: 0.7 } })
    expect(warmer.cache?.hit).toBe(false)
    const elsewhere = await run({ input: 'count to three', cache: { namespace: 'team-b' } })
    expect(elsewhere.cache?.hit).toBe(false)
    const bypass = await run({ input: 'count to three', cache: { mode: 'OFF' } })
    expect(bypass.cache).toBeNull()
    expect(bypass.usage!.outputTokens).toBeGreaterThan(0)
    expect(openai.requests.length).toBe(calls + 3)
  })
})
