import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FakeVendorServer } from '../fixtures/fake-vendor.js'
import { RunPromptDocument } from '../generated/graphql.js'
import { catalogDir } from '../helpers/catalog-dir.js'
import { createSession } from '../helpers/flow.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

const OA_KEY = 'sk-openai-costs-0123456789'
const AN_KEY = 'sk-ant-costs-9876543210'

// Usage and cost from both vendors' own usage fields, with prompt caching, priced by the bundled
// genai-prices table (gpt-4o: $2.50 input, $1.25 cached, $10 output per million; claude-sonnet-4-5:
// $3 input, $0.30 cache read, $3.75 cache write, $15 output), and by the catalog for its own models.
describe('usage and cost with cached tokens', () => {
  let openai: FakeVendorServer
  let anthropic: FakeVendorServer
  let t: TestServer
  const logLines: string[] = []
  beforeAll(async () => {
    openai = await FakeVendorServer.start('openai')
    anthropic = await FakeVendorServer.start('anthropic')
    const catalog = catalogDir({
      'catalog.yaml': `
backends:
  - { id: fake, kind: FAKE }
  - { id: oa, kind: OPENAI, baseUrl: "${openai.baseUrl}", credentialEnv: OA_KEY, prices: { private-model: { inputPerMillion: 1, outputPerMillion: 2, cacheReadPerMillion: 0.5 } } }
  - { id: an, kind: ANTHROPIC, baseUrl: "${anthropic.baseUrl}", credentialEnv: AN_KEY }
profiles:
  - { id: fake-echo, backendId: fake, model: echo }
  - { id: gpt, backendId: oa, model: gpt-4o }
  - { id: sonnet, backendId: an, model: claude-sonnet-4-5 }
  - { id: private, backendId: oa, model: private-model }
  - { id: unknown, backendId: oa, model: no-such-model-anywhere }
`,
    })
    t = await startTestServer({ provider: 'sqlite', app: { catalogDir: catalog }, secrets: { OA_KEY, AN_KEY }, logLines })
  })
  afterAll(async () => {
    await t?.stop({ dropDatabase: true })
    await openai?.close()
    await anthropic?.close()
  })

  let sessions = 0
  async function runOn(profileId: string) {
    const sessionId = await createSession(t, `costs-${sessions++}`)
    const { data } = await t.request(RunPromptDocument, { input: { sessionId, profileId, input: 'price me' } })
    if (data?.runPrompt.__typename !== 'RunPromptPayload') throw new Error(JSON.stringify(data))
    return data.runPrompt.run!
  }

  it('OpenAI: prompt_tokens include the cached ones; cached input is priced at its own rate', async () => {
    openai.script({
      tokens: ['ok'],
      usage: {
        prompt_tokens: 10_000,
        completion_tokens: 500,
        total_tokens: 10_500,
        prompt_tokens_details: { cached_tokens: 8_000 },
        completion_tokens_details: { reasoning_tokens: 200 },
      },
    })
    const run = await runOn('gpt')
    expect(run.usage).toMatchObject({
      inputTokens: 10_000,
      outputTokens: 500,
      cacheReadTokens: 8_000,
      cacheWriteTokens: 0,
      reasoningTokens: 200,
    })
    // 2 000 uncached × 2.50 + 8 000 cached × 1.25 + 500 out × 10, per million
    expect(run.cost).toBeCloseTo((2_000 * 2.5 + 8_000 * 1.25 + 500 * 10) / 1e6, 12)
    expect(run.priceTable).toMatch(/^genai-prices \d+\.\d+\.\d+$/)
  })

  it('Anthropic: input_tokens leave the cache out; reads and writes are added up and priced at their own rates', async () => {
    anthropic.script({ tokens: ['ok'], usage: { input_tokens: 1_000, cache_read_input_tokens: 6_000, cache_creation_input_tokens: 3_000 } })
    const run = await runOn('sonnet')
    expect(run.usage).toMatchObject({ inputTokens: 10_000, cacheReadTokens: 6_000, cacheWriteTokens: 3_000 })
    const output = run.usage!.outputTokens
    // 1 000 uncached × 3 + 6 000 read × 0.30 + 3 000 written × 3.75 + output × 15, per million
    expect(run.cost).toBeCloseTo((1_000 * 3 + 6_000 * 0.3 + 3_000 * 3.75 + output * 15) / 1e6, 12)
  })

  it("prices a private model from the catalog, and an unknown model's cost is null, never 0", async () => {
    openai.script({
      tokens: ['a', 'b'],
      usage: { prompt_tokens: 4_000, completion_tokens: 2, total_tokens: 4_002, prompt_tokens_details: { cached_tokens: 1_000 } },
    })
    const priv = await runOn('private')
    expect(priv.cost).toBeCloseTo((3_000 * 1 + 1_000 * 0.5 + 2 * 2) / 1e6, 12)
    expect(priv.priceTable).toBe('catalog')
    const unknown = await runOn('unknown')
    expect(unknown.usage!.inputTokens).toBeGreaterThan(0)
    expect(unknown.cost).toBeNull()
    expect(unknown.priceTable).toBeNull()
  })

  it('never writes a key into a log line, not even one a vendor echoed in its error', async () => {
    openai.script({ status: 401, errorMessage: `Incorrect API key provided: ${OA_KEY}`, errorCode: 'invalid_api_key' })
    const refused = await runOn('gpt')
    expect(refused.status).toBe('FAILED')
    expect(logLines.filter((line) => line.includes('run finished')).length).toBeGreaterThanOrEqual(4)
    expect(logLines.join('\n')).not.toContain(OA_KEY)
    expect(logLines.join('\n')).not.toContain(AN_KEY)
  })
})
