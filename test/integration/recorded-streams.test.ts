// Real vendor responses (../shared/real-streams/providers, SOURCES.md there for each one's
// provenance and the facts below), replayed byte for byte through promptline's clients.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Credential } from '../../src/domain/credentials.js'
import type { FinishReason, Usage } from '../../src/domain/records.js'
import { mergeSettings } from '../../src/domain/settings.js'
import { AZURE_API_VERSION, azureOpenAI } from '../../src/providers/azure-openai.js'
import { GeminiModelClient } from '../../src/providers/gemini-client.js'
import type { GenerateEvent, GenerateRequest, ModelClient } from '../../src/providers/model-client.js'
import { OpenAIModelClient } from '../../src/providers/openai-client.js'
import { REAL_STREAMS, ReplayVendor } from '../fixtures/replay-vendor.js'

interface Expected {
  text: string
  finish: FinishReason
  vendorReason: string
  usage: Partial<Usage>
  toolCalls?: { name: string; arguments: string }[]
  /** The thought text's start, and whether the answer carried a thought signature. */
  thinking?: { startsWith: string; length: number } | null
  signed?: boolean
}

const usage = (inputTokens: number, outputTokens: number, reasoningTokens = 0, cacheReadTokens = 0): Usage => ({
  inputTokens,
  outputTokens,
  cacheReadTokens,
  cacheWriteTokens: 0,
  reasoningTokens,
})

// output counts Gemini's thoughts with its candidates (docs/providers.md)
const GEMINI: Record<string, Expected> = {
  'gemini-text.sse': { text: 'The capital of France is Paris.\n', finish: 'STOP', vendorReason: 'STOP', usage: usage(13, 8) },
  'gemini-tool-thought-signature.sse': {
    text: '',
    finish: 'TOOL_CALLS',
    vendorReason: 'STOP',
    usage: usage(29, 212, 202),
    toolCalls: [{ name: 'get_country', arguments: '{}' }],
    signed: true,
  },
  'gemini-thinking.sse': {
    text: '3',
    finish: 'STOP',
    vendorReason: 'STOP',
    usage: usage(30, 1947, 1947),
    thinking: { startsWith: '**Analyzing Prime Substrings**\n\nOkay, so', length: 1257 },
  },
  'gemini-max-tokens.sse': { text: 'Here are all 50 U.S.', finish: 'LENGTH', vendorReason: 'MAX_TOKENS', usage: usage(9, 48, 38) },
  'gemini-json-safety.json': { text: '', finish: 'CONTENT_FILTER', vendorReason: 'SAFETY', usage: usage(14, 0) },
  'vertex-text.sse': { text: 'OK', finish: 'STOP', vendorReason: 'STOP', usage: usage(5, 101, 100), signed: true },
}

const request = (endpoint: string): GenerateRequest => ({
  model: 'gemini-2.5-flash',
  tooling: null,
  messages: [{ role: 'user', content: 'What is the capital of France?' }],
  settings: mergeSettings(),
  endpoint,
  credential: new Credential('PROFILE_ENV', 'GEMINI_API_KEY', 'AIzaSy-replay-key-000000'),
  promptCacheKey: null,
  outputSchema: null,
  files: new Map(),
})

async function generated(client: ModelClient, req: GenerateRequest) {
  const events: GenerateEvent[] = []
  for await (const event of client.generate(req, new AbortController().signal)) events.push(event)
  return events
}

describe.skipIf(REAL_STREAMS === null)('real Gemini and Vertex responses, replayed through the Gemini client', () => {
  let vendor: ReplayVendor
  const client = new GeminiModelClient()
  beforeAll(async () => {
    vendor = await ReplayVendor.start('providers')
  })
  afterAll(() => vendor?.close())

  it.each(Object.entries(GEMINI))('%s gives its text, calls, finish reason and normalized usage', async (file, expected) => {
    vendor.serve(file)
    const events = await generated(client, request(vendor.origin))
    expect(events.map((e) => (e.type === 'delta' ? e.text : '')).join('')).toBe(expected.text)
    const calls = events.filter((e) => e.type === 'tool_call').map((e) => ({ name: e.name, arguments: e.arguments }))
    expect(calls).toEqual(expected.toolCalls ?? [])
    const end = events.at(-1) as Extract<GenerateEvent, { type: 'end' }>
    expect(end.finish).toEqual({ reason: expected.finish, vendorReason: expected.vendorReason, refusal: null })
    expect(end.usage).toEqual(expected.usage)
    if (expected.thinking) {
      expect(end.reasoning!.text.startsWith(expected.thinking.startsWith)).toBe(true)
      expect(end.reasoning!.text).toHaveLength(expected.thinking.length)
    }
    expect(end.reasoning?.signature != null).toBe(expected.signed === true)
  })

  it.each([
    // an invalid key, answered 400 as an event stream: the next candidate is tried
    ['gemini-error-400.json', { kind: 'NEXT_CANDIDATE', reason: 'UNAUTHORIZED', status: 400 }],
    // retried after the 34.4 s its RetryInfo asks for
    ['gemini-error-429.json', { kind: 'RETRYABLE', reason: 'RATE_LIMITED', status: 429, retryAfterMs: 34_400 }],
  ])('%s fails with its class and its wait', async (file, expected) => {
    vendor.serve(file)
    await expect(generated(client, request(vendor.origin))).rejects.toMatchObject(expected)
  })
})

describe.skipIf(REAL_STREAMS === null)('a real Azure OpenAI response, replayed through the Azure client', () => {
  let vendor: ReplayVendor
  beforeAll(async () => {
    vendor = await ReplayVendor.start('providers')
  })
  afterAll(() => vendor?.close())

  it('azure-text.sse (a prompt_filter_results chunk first, content_filter_results on each) gives its text, finish and usage', async () => {
    vendor.serve('azure-text.sse')
    const client = new OpenAIModelClient(azureOpenAI(AZURE_API_VERSION))
    const events = await generated(client, { ...request(vendor.origin), model: 'my-gpt-4o-mini' })
    expect(events.map((e) => (e.type === 'delta' ? e.text : '')).join('')).toBe('4200 + 42 equals 4242.')
    expect(events.at(-1)).toEqual({
      type: 'end',
      usage: usage(16, 11),
      finish: { reason: 'STOP', vendorReason: 'stop', refusal: null },
      reasoning: null,
    })
    expect(vendor.paths).toContain(`/openai/deployments/my-gpt-4o-mini/chat/completions?api-version=${AZURE_API_VERSION}`)
  })
})

// each server's own fields (docs/providers.md, "OpenAI-compatible servers"); the text and
// reasoning as their start and length where long
const COMPATIBLE: Record<string, Expected & { calls?: number }> = {
  // reasoning_content, then one call in argument fragments; usage with cached_tokens and prompt_cache_hit_tokens
  'deepseek-tool.sse': {
    text: '',
    finish: 'TOOL_CALLS',
    vendorReason: 'tool_calls',
    usage: usage(339, 83, 39, 320),
    toolCalls: [{ name: 'weather', arguments: '{"location": "San Francisco"}' }],
    thinking: { startsWith: 'The user is asking for the weather in San Francisco.', length: 191 },
  },
  // delta.reasoning, usage in x_groq and at the top level
  'groq-tool-reasoning.sse': {
    text: '',
    finish: 'TOOL_CALLS',
    vendorReason: 'tool_calls',
    usage: usage(304, 49, 23),
    toolCalls: [{ name: 'get_something_by_name', arguments: '{"name":"example"}' }],
    thinking: { startsWith: 'We need to call the function with correct parameter "name".', length: 92 },
  },
  'openrouter-text.sse': { text: 'Hello!', finish: 'STOP', vendorReason: 'stop', usage: usage(12, 2) },
  // content as typed chunks: thinking chunks, then text
  'mistral-thinking.sse': {
    text: 'To cross the street safely, follow these steps:\n\n1. Look both ways',
    finish: 'STOP',
    vendorReason: 'stop',
    usage: usage(10, 232),
    thinking: { startsWith: 'Okay, the user is asking how to cross the street.', length: 421 },
  },
  // choices[].text beside delta.content, usage in a last chunk of its own
  'together-text.sse': {
    text: '## Step 1: Understand the problem\nThe problem requires adding two numbers, 4200 and 42.',
    finish: 'STOP',
    vendorReason: 'stop',
    usage: usage(20, 79),
  },
  // one JSON document although the request streamed
  'ollama-json-text.json': { text: '4200 + 42 = 4242\n', finish: 'STOP', vendorReason: 'stop', usage: usage(21, 16) },
}

const TEXT_LENGTHS: Record<string, number> = { 'mistral-thinking.sse': 607, 'together-text.sse': 258 }

describe.skipIf(REAL_STREAMS === null)('real responses of OpenAI-compatible servers, replayed through the OpenAI client', () => {
  let vendor: ReplayVendor
  const client = new OpenAIModelClient()
  beforeAll(async () => {
    vendor = await ReplayVendor.start('providers')
  })
  afterAll(() => vendor?.close())
  const compatible = () => ({ ...request(`${vendor.origin}/v1`), model: 'a-model' })

  it.each(Object.entries(COMPATIBLE))('%s gives its text, reasoning, calls, finish reason and usage', async (file, expected) => {
    vendor.serve(file)
    const events = await generated(client, compatible())
    const text = events.map((e) => (e.type === 'delta' ? e.text : '')).join('')
    expect(text.startsWith(expected.text)).toBe(true)
    expect(text).toHaveLength(TEXT_LENGTHS[file] ?? expected.text.length)
    const calls = events.filter((e) => e.type === 'tool_call').map((e) => ({ name: e.name, arguments: e.arguments }))
    expect(calls).toEqual(expected.toolCalls ?? [])
    const end = events.at(-1) as Extract<GenerateEvent, { type: 'end' }>
    expect(end.finish).toEqual({ reason: expected.finish, vendorReason: expected.vendorReason, refusal: null })
    expect(end.usage).toEqual(expected.usage)
    if (!expected.thinking) return expect(end.reasoning).toBeNull()
    expect(end.reasoning!.text.startsWith(expected.thinking.startsWith)).toBe(true)
    expect(end.reasoning!.text).toHaveLength(expected.thinking.length)
  })

  it("groq-error-400-tool-use-failed.json (the model's malformed call) fails the run with Groq's reason, not retried", async () => {
    vendor.serve('groq-error-400-tool-use-failed.json')
    const failure = await generated(client, compatible()).catch((error: unknown) => error)
    expect(failure).toMatchObject({ kind: 'FATAL', reason: 'BAD_REQUEST', status: 400 })
    expect((failure as Error).message).toContain('did not match schema')
  })
})
