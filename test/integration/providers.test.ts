import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Credential } from '../../src/domain/credentials.js'
import { mergeSettings } from '../../src/domain/settings.js'
import { AnthropicModelClient } from '../../src/providers/anthropic-client.js'
import type { GenerateEvent, GenerateRequest, ModelClient } from '../../src/providers/model-client.js'
import { OpenAIModelClient } from '../../src/providers/openai-client.js'
import { ProviderError } from '../../src/providers/provider-error.js'
import { FakeVendorServer } from '../fixtures/fake-vendor.js'

const KEY = 'sk-test-provider-key-123456'

function request(server: FakeVendorServer, text: string, settings = mergeSettings()): GenerateRequest {
  return {
    model: server.vendor === 'openai' ? 'gpt-test' : 'claude-test',
    tooling: null,
    messages: [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: text },
    ],
    settings,
    endpoint: server.baseUrl,
    credential: new Credential('PROFILE_ENV', 'TEST_KEY', KEY),
    promptCacheKey: null,
    outputSchema: null,
    files: new Map(),
  }
}

async function collect(client: ModelClient, req: GenerateRequest, signal = new AbortController().signal) {
  const events: GenerateEvent[] = []
  for await (const event of client.generate(req, signal)) events.push(event)
  return events
}

/** The events a generation yields before it fails, and its error. */
async function collectUntilError(client: ModelClient, req: GenerateRequest) {
  const events: GenerateEvent[] = []
  const error = await (async () => {
    for await (const event of client.generate(req, new AbortController().signal)) events.push(event)
  })().catch((e: unknown) => e)
  return { events, error }
}

describe.each([
  ['openai', () => new OpenAIModelClient()],
  ['anthropic', () => new AnthropicModelClient()],
] as const)('the %s client against a fake vendor server', (vendor, makeClient) => {
  let server: FakeVendorServer
  const client = makeClient()
  beforeAll(async () => {
    server = await FakeVendorServer.start(vendor)
  })
  afterAll(() => server?.close())

  it('streams the text and ends with the vendor usage', async () => {
    const events = await collect(client, request(server, 'one two three'))
    expect(
      events
        .filter((e) => e.type === 'delta')
        .map((e) => (e as { text: string }).text)
        .join(''),
    ).toBe('one two three')
    // deltas that arrive in one read go out together, counted (a stream ended early is billed by them)
    expect(events.reduce((n, e) => n + (e.type === 'delta' ? e.deltas : 0), 0)).toBe(3)
    expect(events.at(-1)).toEqual({
      type: 'end',
      usage: { inputTokens: 5, outputTokens: 3, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 },
      finish: { reason: 'STOP', vendorReason: vendor === 'openai' ? 'stop' : 'end_turn', refusal: null },
      reasoning: null,
    })
    const sent = server.requests.at(-1)!
    expect(sent.apiKey).toBe(KEY)
    if (vendor === 'anthropic') {
      expect(sent.body.system).toBe('Be brief.')
      expect(sent.body.messages).toEqual([{ role: 'user', content: 'one two three' }])
    } else {
      expect(sent.body.stream_options).toEqual({ include_usage: true })
    }
  })

  it('maps settings onto the vendor parameters', async () => {
    await collect(
      client,
      request(server, 'x', mergeSettings({ temperature: 0, maxTokens: 77, topP: 0.5, stop: ['END'], extra: { seed: 3 } })),
    )
    const body = server.requests.at(-1)!.body
    expect(body).toMatchObject({ temperature: 0, top_p: 0.5, seed: 3 })
    if (vendor === 'openai') expect(body).toMatchObject({ max_tokens: 77, stop: ['END'] })
    else expect(body).toMatchObject({ max_tokens: 77, stop_sequences: ['END'] })
  })

  it.each([
    [429, 'RETRYABLE', 'RATE_LIMITED'],
    [500, 'RETRYABLE', 'SERVER_ERROR'],
    [529, 'RETRYABLE', 'OVERLOADED'],
    [401, 'NEXT_CANDIDATE', 'UNAUTHORIZED'],
    [404, 'NEXT_CANDIDATE', 'NOT_FOUND'],
    [400, 'FATAL', 'BAD_REQUEST'],
  ])('classifies a %i answer', async (status, kind, reason) => {
    server.script({ status, retryAfter: status === 429 ? '2' : undefined })
    const error = await collect(client, request(server, 'x')).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ProviderError)
    expect(error).toMatchObject({ kind, reason, status })
    if (status === 429) expect((error as ProviderError).retryAfterMs).toBe(2000)
  })

  it('treats a context-length rejection as fatal and never echoes a key in the message', async () => {
    server.script({ status: 400, errorCode: 'context_length_exceeded', errorMessage: `prompt is too long for key ${KEY}` })
    const error = (await collect(client, request(server, 'x')).catch((e: unknown) => e)) as ProviderError
    expect(error).toMatchObject({ kind: 'FATAL', reason: 'CONTEXT_LENGTH' })
    expect(error.message).not.toContain(KEY)
  })

  it('fails a vendor nobody listens for as a retryable network error, with no key in the message', async () => {
    const closed = await import('node:net').then(
      ({ createServer }) =>
        new Promise<number>((resolve) => {
          const probe = createServer().listen(0, '127.0.0.1', () => {
            const { port } = probe.address() as { port: number }
            probe.close(() => resolve(port))
          })
        }),
    )
    const error = await collect(client, { ...request(server, 'x'), endpoint: `http://127.0.0.1:${closed}/v1` }).catch((e: unknown) => e)
    expect(error).toMatchObject({ kind: 'RETRYABLE', reason: 'NETWORK' })
    expect((error as Error).message).not.toContain(KEY)
  })

  it('fails a stream cut halfway as a retryable network error, after the tokens it got', async () => {
    server.script({ tokens: ['a ', 'b ', 'c ', 'd '], cutAfter: 2 })
    const { events, error } = await collectUntilError(client, request(server, 'x'))
    expect(events.map((e) => (e as { text?: string }).text).join('')).toBe('a b ')
    expect(error).toMatchObject({ kind: 'RETRYABLE', reason: 'NETWORK' })
  })

  it.each([
    ['overloaded_error', 'RETRYABLE', 'OVERLOADED'],
    ['api_error', 'RETRYABLE', 'SERVER_ERROR'],
    ['server_error', 'RETRYABLE', 'SERVER_ERROR'],
    ['rate_limit_error', 'RETRYABLE', 'RATE_LIMITED'],
    ['invalid_request_error', 'FATAL', 'BAD_REQUEST'],
    ['authentication_error', 'NEXT_CANDIDATE', 'UNAUTHORIZED'],
  ])("classifies the vendor's in-stream %s by its type, after the tokens it got", async (type, kind, reason) => {
    server.script({ tokens: ['a ', 'b ', 'c '], streamErrorAfter: 2, streamErrorType: type, errorMessage: `trouble for ${KEY}` })
    const { events, error } = await collectUntilError(client, request(server, 'x'))
    expect(events.map((e) => (e as { text?: string }).text).join('')).toBe('a b ')
    expect(error).toMatchObject({ kind, reason })
    expect((error as Error).message).toContain(type)
    expect((error as Error).message).not.toContain(KEY)
  })

  it('reads a whole JSON answer to a streaming request as the complete answer, with its usage and finish reason', async () => {
    const cached = vendor === 'openai' ? { prompt_tokens_details: { cached_tokens: 3 } } : { cache_read_input_tokens: 3 }
    server.script({ tokens: ['all ', 'at ', 'once'], jsonBody: true, usage: cached })
    const events = await collect(client, request(server, 'x'))
    expect(events).toEqual([
      { type: 'delta', text: 'all at once', deltas: 1 },
      {
        type: 'end',
        // OpenAI counts cached tokens among prompt_tokens; Anthropic's are added to its input_tokens
        usage: { inputTokens: vendor === 'openai' ? 3 : 6, outputTokens: 3, cacheReadTokens: 3, cacheWriteTokens: 0, reasoningTokens: 0 },
        finish: { reason: 'STOP', vendorReason: vendor === 'openai' ? 'stop' : 'end_turn', refusal: null },
        reasoning: null,
      },
    ])
  })

  it.runIf(vendor === 'anthropic').each([false, true])(
    "keeps Anthropic's thinking and its signature apart from the answer (whole JSON body: %s)",
    async (jsonBody) => {
      server.script({ tokens: ['Look ', 'both ', 'ways.'], thinking: ['Street ', 'safety.'], jsonBody })
      const events = await collect(client, request(server, 'x'))
      expect(events.map((e) => (e.type === 'delta' ? e.text : '')).join('')).toBe('Look both ways.')
      expect(events.at(-1)).toMatchObject({ reasoning: { text: 'Street safety.', signature: expect.stringMatching(/^EvMC/) } })
    },
  )

  it("records a cut-off answer as LENGTH with the vendor's own reason", async () => {
    const vendorReason = vendor === 'openai' ? 'length' : 'max_tokens'
    server.script({ tokens: ['cut '], finishReason: vendorReason })
    const events = await collect(client, request(server, 'x'))
    expect(events.at(-1)).toMatchObject({ type: 'end', finish: { reason: 'LENGTH', vendorReason, refusal: null } })
  })

  it('records a refusal as REFUSAL, with its text where the vendor sends it apart from the answer', async () => {
    const words = ["I'm", ' sorry,', ' I', " can't", ' help.']
    server.script(vendor === 'openai' ? { tokens: words, refusal: true } : { tokens: words, finishReason: 'refusal' })
    const events = await collect(client, request(server, 'x'))
    const text = events.map((e) => (e.type === 'delta' ? e.text : '')).join('')
    const end = events.at(-1)
    if (vendor === 'openai') {
      expect(text).toBe('')
      expect(end).toMatchObject({ finish: { reason: 'REFUSAL', vendorReason: 'stop', refusal: "I'm sorry, I can't help." } })
    } else {
      expect(text).toBe("I'm sorry, I can't help.")
      expect(end).toMatchObject({ finish: { reason: 'REFUSAL', vendorReason: 'refusal', refusal: null } })
    }
  })

  it('closes the vendor request when aborted, mid-stream or while the vendor hangs', async () => {
    server.script({ tokens: Array.from({ length: 50 }, (_, i) => `t${i} `), delayMs: 20 })
    const controller = new AbortController()
    const reason = new Error('stop')
    const seen: string[] = []
    const error = await (async () => {
      for await (const event of client.generate(request(server, 'x'), controller.signal)) {
        if (event.type === 'delta') seen.push(event.text)
        if (seen.length === 3) controller.abort(reason)
      }
    })().catch((e: unknown) => e)
    expect(error).toBe(reason)
    await server.requests.at(-1)!.closed
    expect(server.requests.at(-1)).toMatchObject({ closedByClient: true, ended: false })

    server.script({ hang: true })
    const hanging = new AbortController()
    setTimeout(() => hanging.abort(reason), 100)
    await expect(collect(client, request(server, 'x'), hanging.signal)).rejects.toBe(reason)
    await server.requests.at(-1)!.closed
    expect(server.requests.at(-1)!.closedByClient).toBe(true)
  })
})
