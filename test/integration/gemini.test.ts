import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Credential } from '../../src/domain/credentials.js'
import { mergeSettings } from '../../src/domain/settings.js'
import { GeminiModelClient } from '../../src/providers/gemini-client.js'
import type { GenerateEvent, GenerateRequest } from '../../src/providers/model-client.js'
import { FakeVendorServer } from '../fixtures/fake-vendor.js'

const KEY = 'AIzaSy-test-gemini-key-0123456789'
const WEATHER = {
  name: 'weather',
  description: 'The weather in a city.',
  inputSchema: { type: 'object', properties: { city: { type: 'string' } } },
  strict: false,
}

describe('the Gemini client (the official @google/genai SDK) against a fake Gemini API', () => {
  let server: FakeVendorServer
  const client = new GeminiModelClient()
  beforeAll(async () => {
    server = await FakeVendorServer.start('gemini')
  })
  afterAll(() => server?.close())

  const request = (over: Partial<GenerateRequest> = {}): GenerateRequest => ({
    model: 'gemini-2.5-flash',
    tooling: null,
    messages: [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'one two three' },
    ],
    settings: mergeSettings(),
    endpoint: server.baseUrl,
    credential: new Credential('PROFILE_ENV', 'GEMINI_API_KEY', KEY),
    promptCacheKey: null,
    outputSchema: null,
    files: new Map(),
    ...over,
  })
  const collect = async (req: GenerateRequest, signal = new AbortController().signal) => {
    const events: GenerateEvent[] = []
    for await (const event of client.generate(req, signal)) events.push(event)
    return events
  }
  const textOf = (events: GenerateEvent[]) => events.map((e) => (e.type === 'delta' ? e.text : '')).join('')

  it('streams the text from streamGenerateContent with the key in its header, and ends with the usage', async () => {
    const events = await collect(request())
    expect(textOf(events)).toBe('one two three')
    expect(events.at(-1)).toEqual({
      type: 'end',
      usage: { inputTokens: 5, outputTokens: 3, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 },
      finish: { reason: 'STOP', vendorReason: 'STOP', refusal: null },
      reasoning: null,
    })
    const sent = server.requests.at(-1)!
    expect(sent.path).toBe('/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse')
    expect(sent.apiKey).toBe(KEY)
    expect(sent.body.systemInstruction).toEqual({ parts: [{ text: 'Be brief.' }], role: 'user' })
    expect(sent.body.contents).toEqual([{ role: 'user', parts: [{ text: 'one two three' }] }])
  })

  it('maps settings, reasoning effort and a JSON schema onto generationConfig', async () => {
    const schema = { type: 'object', properties: { city: { type: 'string' } } }
    const settings = mergeSettings({ temperature: 0, maxTokens: 77, topP: 0.5, seed: 3, stop: ['END'], reasoningEffort: 'low' })
    await collect(request({ settings, outputSchema: schema }))
    expect(server.requests.at(-1)!.body.generationConfig).toEqual({
      temperature: 0,
      topP: 0.5,
      seed: 3,
      maxOutputTokens: 77,
      stopSequences: ['END'],
      thinkingConfig: { includeThoughts: true, thinkingLevel: 'LOW' },
      responseMimeType: 'application/json',
      responseJsonSchema: schema,
    })
  })

  it('reads a call, signed, as a tool call, and replays the call, its signature and its result', async () => {
    server.script({ tokens: [], toolCalls: [{ name: 'weather', arguments: '{"city":"Paris"}' }] })
    const tooling = {
      tools: [WEATHER],
      toolChoice: 'REQUIRED' as const,
      parallelToolCalls: null,
      maxToolRounds: 8,
      toolTimeoutMs: 1000,
      mcpServers: [],
    }
    const events = await collect(request({ tooling }))
    expect(events.filter((e) => e.type === 'tool_call')).toEqual([
      { type: 'tool_call', index: 0, vendorId: null, name: 'weather', arguments: '{"city":"Paris"}' },
    ])
    const end = events.at(-1) as Extract<GenerateEvent, { type: 'end' }>
    expect(end.finish).toEqual({ reason: 'TOOL_CALLS', vendorReason: 'STOP', refusal: null })
    expect(end.reasoning?.signature).toMatch(/^EpwI/)
    const first = server.requests.at(-1)!.body
    expect(first.tools).toEqual([
      { functionDeclarations: [{ name: 'weather', description: 'The weather in a city.', parametersJsonSchema: WEATHER.inputSchema }] },
    ])
    expect(first.toolConfig).toEqual({ functionCallingConfig: { mode: 'ANY' } })

    const answered = await collect(
      request({
        tooling,
        messages: [
          { role: 'user', content: 'Weather in Paris?' },
          {
            role: 'assistant',
            content: '',
            toolCalls: [{ callId: 'c1', name: 'weather', arguments: '{"city":"Paris"}' }],
            reasoning: end.reasoning,
          },
          { role: 'tool', toolCallId: 'c1', content: 'sunny' },
        ],
      }),
    )
    expect(textOf(answered)).toBe('sunny')
    expect(server.requests.at(-1)!.body.contents).toEqual([
      { role: 'user', parts: [{ text: 'Weather in Paris?' }] },
      {
        role: 'model',
        parts: [{ functionCall: { id: 'c1', name: 'weather', args: { city: 'Paris' } }, thoughtSignature: end.reasoning!.signature }],
      },
      { role: 'user', parts: [{ functionResponse: { id: 'c1', name: 'weather', response: { output: 'sunny' } } }] },
    ])
  })

  it('keeps thought parts apart from the answer, and counts their tokens as output and reasoning', async () => {
    server.script({ tokens: ['Look ', 'both ', 'ways.'], thinking: ['Street ', 'safety.'] })
    const events = await collect(request())
    expect(textOf(events)).toBe('Look both ways.')
    expect(events.at(-1)).toMatchObject({
      reasoning: { text: 'Street safety.', signature: null },
      usage: { outputTokens: 5, reasoningTokens: 2 },
    })
  })

  it.each([
    [429, 'RETRYABLE', 'RATE_LIMITED'],
    [500, 'RETRYABLE', 'SERVER_ERROR'],
    [503, 'RETRYABLE', 'OVERLOADED'],
    [403, 'NEXT_CANDIDATE', 'UNAUTHORIZED'],
    [404, 'NEXT_CANDIDATE', 'NOT_FOUND'],
    [400, 'FATAL', 'BAD_REQUEST'],
  ])('classifies a %i answer, with the wait its RetryInfo asks for', async (status, kind, reason) => {
    server.script({ status, retryAfter: status === 429 ? '34.4' : undefined, errorMessage: `trouble for ${KEY}` })
    const error = await collect(request()).catch((e: unknown) => e)
    expect(error).toMatchObject({ kind, reason, status })
    expect((error as Error).message).not.toContain(KEY)
    if (status === 429) expect(error).toMatchObject({ retryAfterMs: 34_400 })
  })

  it('treats a context past the model’s window as fatal CONTEXT_LENGTH', async () => {
    server.script({ status: 400, errorMessage: 'The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).' })
    expect(await collect(request()).catch((e: unknown) => e)).toMatchObject({ kind: 'FATAL', reason: 'CONTEXT_LENGTH' })
  })

  it('classifies an error sent inside the stream by its RPC status, after the tokens it got', async () => {
    server.script({ tokens: ['a ', 'b ', 'c '], streamErrorAfter: 2, streamErrorType: 'RESOURCE_EXHAUSTED' })
    const events: GenerateEvent[] = []
    const error = await (async () => {
      for await (const event of client.generate(request(), new AbortController().signal)) events.push(event)
    })().catch((e: unknown) => e)
    expect(textOf(events)).toBe('a b ')
    expect(error).toMatchObject({ kind: 'RETRYABLE', reason: 'RATE_LIMITED' })
  })

  it('closes the vendor request when aborted mid-stream', async () => {
    server.script({ tokens: Array.from({ length: 50 }, (_, i) => `t${i} `), delayMs: 20 })
    const controller = new AbortController()
    const reason = new Error('stop')
    let seen = 0
    const error = await (async () => {
      for await (const event of client.generate(request(), controller.signal))
        if (event.type === 'delta' && ++seen === 3) controller.abort(reason)
    })().catch((e: unknown) => e)
    expect(error).toBe(reason)
    await server.requests.at(-1)!.closed
    expect(server.requests.at(-1)).toMatchObject({ closedByClient: true, ended: false })
  })
})
