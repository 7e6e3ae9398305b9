import OpenAI from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sha256Hex } from '../../src/domain/hash.js'
import { FakeVendorServer } from '../fixtures/fake-vendor.js'
import { BackendDialectsDocument, ProviderRunDocument } from '../generated/graphql.js'
import { vendorCatalog } from '../helpers/catalog-dir.js'
import { ADMIN_KEY, gql } from '../helpers/key-checks.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

const WEATHER: OpenAI.Chat.ChatCompletionTool = {
  type: 'function',
  function: { name: 'weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
}

// OPENAI backends that name their server (`dialect`), each at a fake OpenAI vendor, asked
// through promptline's OpenAI door with the openai SDK: what each server is sent, and how its runs are priced.
describe('named OpenAI-compatible servers, end to end', () => {
  let t: TestServer
  let vendor: FakeVendorServer
  let anthropic: FakeVendorServer
  let client: OpenAI
  beforeAll(async () => {
    ;[vendor, anthropic] = await Promise.all([FakeVendorServer.start('openai'), FakeVendorServer.start('anthropic')])
    const at = `baseUrl: "${vendor.baseUrl}"`
    t = await startTestServer({
      provider: 'sqlite',
      apiKey: ADMIN_KEY,
      secrets: { OA_KEY: 'sk-test-openai', AN_KEY: 'sk-test-anthropic', GROQ_KEY: 'gsk_test_0123456789', DS_KEY: 'sk-ds-0123456789' },
      app: {
        catalogDir: vendorCatalog(vendor, anthropic, {
          backends: [
            `{ id: ollama, kind: OPENAI, dialect: ollama, ${at} }`,
            `{ id: mistral, kind: OPENAI, dialect: MISTRAL, ${at}, credentialEnv: OA_KEY }`,
            `{ id: groq, kind: OPENAI, dialect: GROQ, ${at}, credentialEnv: GROQ_KEY }`,
            `{ id: deepseek, kind: OPENAI, dialect: DEEPSEEK, ${at}, credentialEnv: DS_KEY }`,
          ],
          profiles: [
            '{ id: local-gemma, backendId: ollama, model: "gemma3:4b" }',
            '{ id: mistral-small, backendId: mistral, model: mistral-small-latest }',
            '{ id: groq-llama, backendId: groq, model: llama-3.3-70b-versatile }',
            '{ id: deepseek-chat, backendId: deepseek, model: deepseek-chat }',
          ],
        }),
        apiKeys: [{ sha256: sha256Hex(ADMIN_KEY), tenantId: 'acme', role: 'admin' }],
      },
    })
    client = new OpenAI({ baseURL: `${t.http.url}/v1`, apiKey: ADMIN_KEY, maxRetries: 0 })
  })
  afterAll(async () => {
    await t?.stop({ dropDatabase: true })
    await Promise.all([vendor?.close(), anthropic?.close()])
  })
  const ask = (model: string, more: Partial<OpenAI.Chat.ChatCompletionCreateParamsNonStreaming> = {}) =>
    client.chat.completions.create({ model, messages: [{ role: 'user', content: 'one two three' }], ...more })
  const runOf = async (completionId: string) =>
    (await gql(t.http.url, ADMIN_KEY, ProviderRunDocument, { id: completionId.replace('chatcmpl-', '') })).data!.run!

  it('runs on Ollama with no key configured, sends max_tokens and no parallel_tool_calls, and prices nothing', async () => {
    const completion = await ask('local-gemma', { max_tokens: 20, tools: [WEATHER], parallel_tool_calls: true })
    expect(completion.choices[0]!.message.content).toBe('one two three')
    const sent = vendor.requests.at(-1)!.body
    expect(sent).toMatchObject({ model: 'gemma3:4b', max_tokens: 20, stream_options: { include_usage: true } })
    expect(sent.max_completion_tokens).toBeUndefined()
    expect(sent.parallel_tool_calls).toBeUndefined()
    expect(await runOf(completion.id)).toMatchObject({ backendId: 'ollama', cost: null })
  })

  it('sends Mistral the seed as random_seed and no stream_options or prompt_cache_key, which it would refuse', async () => {
    await ask('mistral-small', { seed: 7, prompt_cache_key: 'session-1' } as never)
    const sent = vendor.requests.at(-1)!.body
    expect(sent.random_seed).toBe(7)
    for (const field of ['seed', 'stream_options', 'prompt_cache_key']) expect(sent[field]).toBeUndefined()
  })

  it("sends Groq max_completion_tokens, and prices its run from genai-prices' Groq table", async () => {
    const completion = await ask('groq-llama', { max_tokens: 30 })
    const sent = vendor.requests.at(-1)!
    expect(sent.body.max_completion_tokens).toBe(30)
    expect(sent.apiKey).toBe('gsk_test_0123456789')
    const run = await runOf(completion.id)
    expect(run.backendId).toBe('groq')
    expect(run.cost).toBeGreaterThan(0)
  })

  it('refuses what DeepSeek takes no field for at admission, naming it, and validates a schema instead of sending one', async () => {
    const before = vendor.requests.length
    const refused = await ask('deepseek-chat', { seed: 1 }).catch((error: unknown) => error)
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError)
    expect((refused as Error).message).toContain('DeepSeek takes no seed')
    expect(vendor.requests.length).toBe(before)
    vendor.script({ tokens: ['{"city":', '"Oslo"}'] })
    const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false }
    const answered = await ask('deepseek-chat', { response_format: { type: 'json_schema', json_schema: { name: 'city', schema } } })
    expect(JSON.parse(answered.choices[0]!.message.content!)).toEqual({ city: 'Oslo' })
    expect(vendor.requests.at(-1)!.body.response_format).toBeUndefined()
  })

  it('shows each backend’s dialect and what its server takes in GraphQL', async () => {
    const { backends } = (await gql(t.http.url, ADMIN_KEY, BackendDialectsDocument, {})).data!
    const byId = new Map(backends.map((b) => [b.id, b]))
    expect(byId.get('deepseek')).toMatchObject({
      kind: 'OPENAI',
      dialect: 'DEEPSEEK',
      capabilities: { imageMediaTypes: [], nativeStructuredOutput: false, singleToolCall: false },
    })
    expect(byId.get('ollama')).toMatchObject({ dialect: 'OLLAMA', capabilities: { singleToolCall: false } })
    expect(byId.get('oa')).toMatchObject({ dialect: null, capabilities: { nativeStructuredOutput: true, singleToolCall: true } })
  })
})
