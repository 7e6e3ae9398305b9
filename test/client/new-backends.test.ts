import OpenAI from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sha256Hex } from '../../src/domain/hash.js'
import { FakeVendorServer } from '../fixtures/fake-vendor.js'
import { ProviderRunDocument } from '../generated/graphql.js'
import { vendorCatalog } from '../helpers/catalog-dir.js'
import { ADMIN_KEY, gql } from '../helpers/key-checks.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

const GE_KEY = 'AIzaSy-test-gemini-0123456789'
const WEATHER: OpenAI.Chat.ChatCompletionTool = {
  type: 'function',
  function: { name: 'weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
}

// Profiles on the GEMINI and AZURE_OPENAI kinds, run by promptline through the official SDKs
// (@google/genai; openai's AzureOpenAI) against fake vendors, and asked through promptline's own
// OpenAI door with the openai SDK.
describe('Gemini and Azure OpenAI backends, end to end', () => {
  let t: TestServer
  let openai: FakeVendorServer
  let anthropic: FakeVendorServer
  let gemini: FakeVendorServer
  let client: OpenAI
  beforeAll(async () => {
    ;[openai, anthropic, gemini] = await Promise.all([
      FakeVendorServer.start('openai'),
      FakeVendorServer.start('anthropic'),
      FakeVendorServer.start('gemini'),
    ])
    t = await startTestServer({
      provider: 'sqlite',
      apiKey: ADMIN_KEY,
      secrets: { OA_KEY: 'sk-test-openai', AN_KEY: 'sk-test-anthropic', GE_KEY, AZ_KEY: 'azure-test-key-0123' },
      app: {
        catalogDir: vendorCatalog(openai, anthropic, {
          backends: [
            `{ id: ge, kind: GEMINI, baseUrl: "${gemini.baseUrl}", credentialEnv: GE_KEY }`,
            `{ id: az, kind: AZURE_OPENAI, baseUrl: "${openai.origin}", credentialEnv: AZ_KEY, apiVersion: 2025-04-01-preview }`,
          ],
          profiles: [
            '{ id: flash, backendId: ge, model: gemini-2.5-flash }',
            '{ id: flash-then-gpt, backendId: ge, model: gemini-2.5-flash, candidates: [oa-plain] }',
            '{ id: azure-then-flash, backendId: az, model: prod-gpt-4o-mini, candidates: [flash] }',
          ],
        }),
        apiKeys: [{ sha256: sha256Hex(ADMIN_KEY), tenantId: 'acme', role: 'admin' }],
      },
    })
    client = new OpenAI({ baseURL: `${t.http.url}/v1`, apiKey: ADMIN_KEY, maxRetries: 0 })
  })
  const runOf = async (completionId: string) =>
    (await gql(t.http.url, ADMIN_KEY, ProviderRunDocument, { id: completionId.replace('chatcmpl-', '') })).data!.run!

  afterAll(async () => {
    await t?.stop({ dropDatabase: true })
    await Promise.all([openai?.close(), anthropic?.close(), gemini?.close()])
  })

  it('answers a plain prompt, with the usage Gemini counted and its price from genai-prices', async () => {
    const completion = await client.chat.completions.create({ model: 'flash', messages: [{ role: 'user', content: 'hello from gemini' }] })
    expect(completion.choices[0]!.message.content).toBe('hello from gemini')
    expect(completion.usage).toMatchObject({ prompt_tokens: 3, completion_tokens: 3 })
    expect(gemini.requests.at(-1)!.apiKey).toBe(GE_KEY)
    const run = await runOf(completion.id)
    expect(run).toMatchObject({ backendId: 'ge', model: 'gemini-2.5-flash' })
    expect(run.cost).toBeGreaterThan(0)
  })

  it('streams a tool round trip: the call, then the answer from its result', async () => {
    gemini.script({ tokens: [], toolCalls: [{ name: 'weather', arguments: '{"city":"Paris"}' }] })
    const user: OpenAI.Chat.ChatCompletionMessageParam = { role: 'user', content: 'Weather in Paris?' }
    const calls: { id: string; name: string; arguments: string }[] = []
    let finish: string | null = null
    for await (const chunk of await client.chat.completions.create({ model: 'flash', messages: [user], tools: [WEATHER], stream: true })) {
      for (const call of chunk.choices[0]?.delta.tool_calls ?? []) {
        if (call.id) calls.push({ id: call.id, name: call.function?.name ?? '', arguments: '' })
        calls[call.index]!.arguments += call.function?.arguments ?? ''
      }
      finish = chunk.choices[0]?.finish_reason ?? finish
    }
    expect(finish).toBe('tool_calls')
    expect(calls).toMatchObject([{ name: 'weather', arguments: '{"city":"Paris"}' }])
    const assistant: OpenAI.Chat.ChatCompletionMessageParam = {
      role: 'assistant',
      content: null,
      tool_calls: calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })),
    }
    let text = ''
    const stream = await client.chat.completions.create({
      model: 'flash',
      messages: [user, assistant, { role: 'tool', tool_call_id: calls[0]!.id, content: 'sunny' }],
      tools: [WEATHER],
      stream: true,
    })
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ''
    expect(text).toBe('sunny')
    // the call went back to Gemini with its thought signature, and the result as a functionResponse
    const contents = gemini.requests.at(-1)!.body.contents
    expect(contents[1].parts[0]).toMatchObject({
      functionCall: { name: 'weather', args: { city: 'Paris' } },
      thoughtSignature: expect.any(String),
    })
    expect(contents[2].parts[0]).toMatchObject({ functionResponse: { name: 'weather', response: { output: 'sunny' } } })
  })

  it('sends a JSON-schema answer natively as responseJsonSchema', async () => {
    const schema = { type: 'object', properties: { answer: { type: 'integer' } }, required: ['answer'] }
    gemini.script({ tokens: ['{"answer": ', '42}'] })
    const completion = await client.chat.completions.create({
      model: 'flash',
      messages: [{ role: 'user', content: 'the answer?' }],
      response_format: { type: 'json_schema', json_schema: { name: 'answer', schema } },
    })
    expect(JSON.parse(completion.choices[0]!.message.content!)).toEqual({ answer: 42 })
    expect(gemini.requests.at(-1)!.body.generationConfig).toMatchObject({
      responseMimeType: 'application/json',
      responseJsonSchema: schema,
    })
  })

  it('fails over from Gemini to OpenAI when Gemini refuses the key', async () => {
    gemini.script({ status: 403 })
    const completion = await client.chat.completions.create({
      model: 'flash-then-gpt',
      messages: [{ role: 'user', content: 'from the backup' }],
    })
    expect(completion.choices[0]!.message.content).toBe('from the backup')
    const run = await runOf(completion.id)
    expect(run.failoverAttempts.map((a) => [a.profileId, a.outcome, a.errorCode])).toEqual([
      ['flash-then-gpt', 'FAILED', 'UNAUTHORIZED'],
      ['oa-plain', 'SUCCEEDED', null],
    ])
  })

  it('refuses parallel_tool_calls: false on Gemini by name, and sends nothing', async () => {
    const before = gemini.requests.length
    const refused = await client.chat.completions
      .create({ model: 'flash', messages: [{ role: 'user', content: 'x' }], tools: [WEATHER], parallel_tool_calls: false })
      .catch((e: unknown) => e)
    expect(refused).toMatchObject({ status: 400 })
    expect((refused as Error).message).toMatch(/parallelToolCalls: false/)
    expect(gemini.requests.length).toBe(before)
  })

  it('answers on an Azure OpenAI deployment, and fails over from Azure to Gemini after a 500 that persists', async () => {
    const plain = await client.chat.completions.create({ model: 'azure-then-flash', messages: [{ role: 'user', content: 'from azure' }] })
    expect(plain.choices[0]!.message.content).toBe('from azure')
    expect(openai.requests.at(-1)!.path).toBe('/openai/deployments/prod-gpt-4o-mini/chat/completions?api-version=2025-04-01-preview')
    expect(await runOf(plain.id)).toMatchObject({ backendId: 'az', model: 'prod-gpt-4o-mini' })

    openai.script({ status: 500 }, { status: 500 }, { status: 500 })
    const moved = await client.chat.completions.create({ model: 'azure-then-flash', messages: [{ role: 'user', content: 'from gemini' }] })
    expect(moved.choices[0]!.message.content).toBe('from gemini')
    const run = await runOf(moved.id)
    expect(run.failoverAttempts.map((a) => [a.profileId, a.outcome, a.errorCode])).toEqual([
      ['azure-then-flash', 'FAILED', 'SERVER_ERROR'],
      ['azure-then-flash', 'FAILED', 'SERVER_ERROR'],
      ['azure-then-flash', 'FAILED', 'SERVER_ERROR'],
      ['flash', 'SUCCEEDED', null],
    ])
  })
})
