import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Credential } from '../../src/domain/credentials.js'
import { mergeSettings } from '../../src/domain/settings.js'
import { azureOpenAI } from '../../src/providers/azure-openai.js'
import type { GenerateEvent, GenerateRequest } from '../../src/providers/model-client.js'
import { OpenAIModelClient } from '../../src/providers/openai-client.js'
import { FakeVendorServer } from '../fixtures/fake-vendor.js'

const KEY = 'azure-test-key-0123456789abcdef'

describe("the Azure OpenAI client (the openai SDK's AzureOpenAI) against a fake deployment", () => {
  let server: FakeVendorServer
  const client = new OpenAIModelClient(azureOpenAI('2025-04-01-preview'))
  beforeAll(async () => {
    server = await FakeVendorServer.start('openai')
  })
  afterAll(() => server?.close())

  const request = (over: Partial<GenerateRequest> = {}): GenerateRequest => ({
    model: 'prod-gpt-4o',
    tooling: null,
    messages: [{ role: 'user', content: 'one two three' }],
    settings: mergeSettings({ maxTokens: 50 }),
    endpoint: server.origin,
    credential: new Credential('BACKEND_ENV', 'AZURE_OPENAI_API_KEY', KEY),
    promptCacheKey: null,
    outputSchema: null,
    files: new Map(),
    ...over,
  })
  const collect = async (req: GenerateRequest) => {
    const events: GenerateEvent[] = []
    for await (const event of client.generate(req, new AbortController().signal)) events.push(event)
    return events
  }

  it('sends to the deployment with its api-version and api-key, and streams the answer', async () => {
    const events = await collect(request())
    expect(events.map((e) => (e.type === 'delta' ? e.text : '')).join('')).toBe('one two three')
    const sent = server.requests.at(-1)!
    expect(sent.path).toBe('/openai/deployments/prod-gpt-4o/chat/completions?api-version=2025-04-01-preview')
    expect(sent.apiKey).toBe(KEY)
    expect(sent.body).toMatchObject({ max_completion_tokens: 50, stream_options: { include_usage: true } })
    expect(sent.body.max_tokens).toBeUndefined()
  })

  it('names Azure in its errors, and classifies them as OpenAI’s', async () => {
    server.script({ status: 429, retryAfter: '3' })
    const error = await collect(request()).catch((e: unknown) => e)
    expect(error).toMatchObject({ kind: 'RETRYABLE', reason: 'RATE_LIMITED', retryAfterMs: 3000 })
    expect((error as Error).message).toMatch(/^Azure OpenAI rate-limited/)
  })
})
