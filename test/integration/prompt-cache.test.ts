import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { FakeVendorServer } from '../fixtures/fake-vendor.js'
import { RunPromptDocument, type RunPromptMutationVariables } from '../generated/graphql.js'
import { startWithFakeVendors, type VendorTestServer } from '../helpers/fake-vendors.js'
import { createSession } from '../helpers/flow.js'
import type { TestServer } from '../helpers/server.js'

// Prompt caching on request: the marks and keys each vendor takes, and the cache reads the
// fake vendors (which keep prefixes as the real ones do) report on a session's second run.
describe('prompt caching on request', () => {
  let openai: FakeVendorServer
  let anthropic: FakeVendorServer
  let t: TestServer
  let vendors: VendorTestServer
  beforeAll(async () => {
    vendors = await startWithFakeVendors(`
profiles:
  - { id: gpt, backendId: oa, model: gpt-4o, settings: { promptCache: { mode: auto } } }
  - { id: gpt-hour, backendId: oa, model: gpt-4o, settings: { promptCache: { mode: AUTO, ttl: ONE_HOUR, key: PROMPT } } }
  - id: sonnet
    backendId: an
    model: claude-sonnet-4-5
    settings: { promptCache: { mode: AUTO, ttl: ONE_HOUR } }
    tools: [{ name: lookup, description: Looks a word up, inputSchema: { type: object, properties: { word: { type: string } } } }]
prompts:
  - id: tutor
    messages:
      - { role: system, content: You are a patient tutor who answers in one short sentence. }
      - { role: user, content: "{{input}}" }
`)
    ;({ t, openai, anthropic } = vendors)
  })
  afterAll(() => vendors?.stop())

  async function run(input: RunPromptMutationVariables['input']) {
    const { data } = await t.request(RunPromptDocument, { input })
    if (data?.runPrompt.__typename !== 'RunPromptPayload') throw new Error(JSON.stringify(data))
    return data.runPrompt.run!
  }

  it('Anthropic: marks the tools, the system text and the ends of history and request, and the second run of a session reads the first one’s prefix', async () => {
    const sessionId = await createSession(t, 'cache-anthropic')
    const first = await run({ sessionId, promptId: 'tutor', profileId: 'sonnet', input: 'what is a noun' })
    const second = await run({ sessionId, promptId: 'tutor', profileId: 'sonnet', input: 'and a verb' })
    const [a, b] = anthropic.requests.slice(-2).map((r) => r.body)
    const hour = { type: 'ephemeral', ttl: '1h' }
    expect(a!.tools.at(-1).cache_control).toEqual(hour)
    expect(a!.system).toEqual([{ type: 'text', text: 'You are a patient tutor who answers in one short sentence.', cache_control: hour }])
    expect(a!.messages.at(-1).content.at(-1).cache_control).toEqual(hour)
    // the second request: the first answer is history, its end marked too
    expect(b!.messages.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant', 'user'])
    expect(b!.messages[1].content.at(-1).cache_control).toEqual(hour)
    expect(b!.messages[2].content.at(-1).cache_control).toEqual(hour)
    expect(first.usage).toMatchObject({ cacheReadTokens: 0 })
    expect(first.usage!.cacheWriteTokens).toBeGreaterThan(0)
    // what the first run wrote (tools, system, its question) is what the second reads
    expect(second.usage!.cacheReadTokens).toBe(first.usage!.cacheWriteTokens)
  })

  it('OpenAI: sends a prompt_cache_key per session, and the second run of the session reads its cached prefix', async () => {
    const sessionId = await createSession(t, 'cache-openai')
    const first = await run({ sessionId, promptId: 'tutor', profileId: 'gpt', input: 'what is a noun' })
    const second = await run({ sessionId, promptId: 'tutor', profileId: 'gpt', input: 'and a verb' })
    const other = await run({ sessionId: await createSession(t, 'cache-openai-2'), promptId: 'tutor', profileId: 'gpt', input: 'x' })
    const [a, b, c] = openai.requests.slice(-3).map((r) => r.body)
    expect(a!.prompt_cache_key).toMatch(/^pl-[0-9a-f]{40}$/)
    expect(b!.prompt_cache_key).toBe(a!.prompt_cache_key)
    // another session, another key; no id of ours in it
    expect(c!.prompt_cache_key).not.toBe(a!.prompt_cache_key)
    expect(a!.prompt_cache_key).not.toContain('cache-openai')
    expect(a).not.toHaveProperty('prompt_cache_retention')
    expect(first.usage!.cacheReadTokens).toBe(0)
    expect(second.usage!.cacheReadTokens).toBeGreaterThan(0)
    expect(other.usage!.cacheReadTokens).toBe(0)
  })

  it('OpenAI: a ONE_HOUR prompt-scoped cache asks for extended retention, with one key across sessions', async () => {
    await run({ sessionId: await createSession(t, 'cache-hour-1'), promptId: 'tutor', profileId: 'gpt-hour', input: 'a' })
    await run({ sessionId: await createSession(t, 'cache-hour-2'), promptId: 'tutor', profileId: 'gpt-hour', input: 'b' })
    const [a, b] = openai.requests.slice(-2).map((r) => r.body)
    expect(a).toMatchObject({ prompt_cache_retention: '24h' })
    expect(b!.prompt_cache_key).toBe(a!.prompt_cache_key)
  })

  it('sends no marks and no key when a request turns the cache OFF', async () => {
    const sessionId = await createSession(t, 'cache-off')
    await run({ sessionId, promptId: 'tutor', profileId: 'sonnet', input: 'q', overrides: { promptCache: { mode: 'OFF' } } })
    await run({ sessionId, promptId: 'tutor', profileId: 'gpt', input: 'q', overrides: { promptCache: { mode: 'OFF' } } })
    const marked = JSON.stringify(anthropic.requests.at(-1)!.body)
    expect(marked).not.toContain('cache_control')
    expect(openai.requests.at(-1)!.body).not.toHaveProperty('prompt_cache_key')
  })
})
