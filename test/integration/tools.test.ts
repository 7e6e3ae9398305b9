import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FakeVendorServer } from '../fixtures/fake-vendor.js'
import {
  AbortRunDocument,
  RunPromptDocument,
  RunToolEventsDocument,
  RunToolsDocument,
  SessionToolHistoryDocument,
  SteerPromptDocument,
  SubmitToolResultsDocument,
  type SubmitToolResultsInput,
  UpsertPromptDocument,
} from '../generated/graphql.js'
import { vendorCatalog } from '../helpers/catalog-dir.js'
import { providers } from '../helpers/databases.js'
import { createSession, enqueue, waitForEntry } from '../helpers/flow.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

const WEATHER = {
  name: 'get_weather',
  description: 'The weather in a city.',
  inputSchema: { type: 'object', required: ['city'], properties: { city: { type: 'string' } }, additionalProperties: false },
  strict: true,
}
const TIME = { name: 'get_time', inputSchema: { type: 'object', properties: { zone: { type: 'string' } } } }
const TWO_CALLS = [
  { name: 'get_weather', arguments: '{"city": "Paris"}', id: 'call_JMW1whyEaYG438VE1OIflxA2' },
  { name: 'get_time', arguments: '{"zone": "CET"}', id: 'call_DNYTawLBoN8fj3KN6qU9N1Ou' },
]

const VENDORS = [
  ['OpenAI', 'oa-plain'],
  ['Anthropic', 'an-plain'],
] as const

describe.each(providers)('tool calls through the real vendor clients (%s)', (provider) => {
  let openai: FakeVendorServer
  let anthropic: FakeVendorServer
  let t: TestServer
  beforeAll(async () => {
    openai = await FakeVendorServer.start('openai')
    anthropic = await FakeVendorServer.start('anthropic')
    const dir = vendorCatalog(openai, anthropic, {
      backends: [
        `{ id: oa-once, kind: OPENAI, baseUrl: "${openai.baseUrl}", credentialEnv: OA_KEY, retry: { maxAttempts: 1 } }`,
        `{ id: oa-single, kind: OPENAI, baseUrl: "${openai.baseUrl}", credentialEnv: OA_KEY, capacity: { maxAccepted: 1, maxWaiting: 0 } }`,
      ],
      profiles: [
        '{ id: oa-then-an, backendId: oa-once, model: gpt-test, candidates: [an-plain] }',
        '{ id: oa-single, backendId: oa-single, model: gpt-test }',
      ],
      prompts: `
  - id: race
    parallel: { profiles: [oa-plain, an-plain], select: FIRST_VALID }
    messages: [{ role: user, content: "{{input}}" }]`,
    })
    t = await startTestServer({ provider, app: { catalogDir: dir }, secrets: { OA_KEY: 'sk-oa-key-1', AN_KEY: 'sk-an-key-2' } })
  })
  afterAll(async () => {
    await t?.stop({ dropDatabase: true })
    await openai?.close()
    await anthropic?.close()
  })
  const vendor = (profileId: string) => (profileId === 'oa-plain' ? openai : anthropic)

  let sessions = 0
  /** Enqueues with tools in a fresh session and waits until the run asks for its tool results. */
  async function untilRequested(profileId: string, extra: Record<string, unknown> = {}) {
    const sessionId = await createSession(t, `tools-${sessions++}`)
    const entry = await enqueue(t, { sessionId, input: 'weather and time in Paris?', profileId, tools: [WEATHER, TIME], ...extra })
    const runId = (await waitForEntry(t, sessionId, entry.queueId, ['STARTING', 'RUNNING', 'COMPLETED', 'FAILED'])).runId!
    const events = t.subscribe(RunToolEventsDocument, { runId })
    await events.until((r) => r.some((e) => e.data?.runEvents.__typename === 'ToolCallsRequestedEvent'))
    return { sessionId, entry, runId, events }
  }
  const submit = async (input: SubmitToolResultsInput) => (await t.request(SubmitToolResultsDocument, { input })).data!.submitToolResults
  const runOf = async (id: string) => (await t.request(RunToolsDocument, { id })).data!.run!

  it.each(VENDORS)(
    '%s: a two-call round, its results submitted one at a time, ends with the final answer and both rounds in usage',
    async (_v, profileId) => {
      vendor(profileId).script({ tokens: [], toolCalls: TWO_CALLS })
      const { sessionId, runId, events } = await untilRequested(profileId)
      const types = events.results.map((e) => e.data!.runEvents)
      const started = types.filter((e) => e.__typename === 'ToolCallStartedEvent')
      expect(started.map((e) => [e.name, e.round])).toEqual([
        ['get_weather', 0],
        ['get_time', 0],
      ])
      // each call's argument deltas join to its arguments
      for (const [i, call] of TWO_CALLS.entries()) {
        const callId = (started[i] as { callId: string }).callId
        const deltas = types.filter((e) => e.__typename === 'ToolCallDeltaEvent' && e.callId === callId)
        expect(deltas.map((e) => (e as { argumentsDelta: string }).argumentsDelta).join('')).toBe(call.arguments)
      }
      const waiting = await runOf(runId)
      expect(waiting).toMatchObject({ status: 'REQUIRES_ACTION', finishReason: 'TOOL_CALLS' })
      expect(waiting.pendingToolCalls.map((c) => [c.name, c.arguments, c.argumentErrors])).toEqual([
        ['get_weather', { city: 'Paris' }, []],
        ['get_time', { zone: 'CET' }, []],
      ])
      const [weather, time] = waiting.pendingToolCalls.map((c) => c.callId)

      const first = await submit({ runId, results: [{ callId: weather!, output: 'sunny, 21 °C' }], idempotencyKey: 'k1' })
      expect(first).toMatchObject({
        __typename: 'SubmitToolResultsPayload',
        run: { status: 'REQUIRES_ACTION', pendingToolCalls: [{ callId: time }] },
      })
      // a retry with the same key takes nothing and answers the same; another key for the same call is refused
      expect(await submit({ runId, results: [{ callId: weather!, output: 'other' }], idempotencyKey: 'k1' })).toEqual(first)
      expect(await submit({ runId, results: [{ callId: weather!, output: 'other' }], idempotencyKey: 'k2' })).toMatchObject({
        reason: 'ALREADY_ANSWERED',
      })
      expect(await submit({ runId, results: [{ callId: 'nope', output: 'x' }] })).toMatchObject({ reason: 'UNKNOWN_CALL' })
      expect((await runOf(runId)).toolRounds[0]!.results).toEqual([{ callId: weather, output: 'sunny, 21 °C', isError: false }])

      // the last result answers with the run going on, not waiting for what was just given
      const last = await submit({ runId, results: [{ callId: time!, output: '12:00', isError: false }], idempotencyKey: 'k3' })
      expect(last).toMatchObject({ __typename: 'SubmitToolResultsPayload', run: { pendingToolCalls: [] } })
      expect(last).not.toMatchObject({ run: { status: 'REQUIRES_ACTION' } })
      await events.done()
      const done = await runOf(runId)
      expect(done).toMatchObject({ status: 'COMPLETED', output: 'sunny, 21 °C\n12:00', finishReason: 'STOP' })
      // the run's usage is both rounds': the first round's, and the final answer's
      const firstRound = done.toolRounds[0]!.usage
      expect(firstRound.outputTokens).toBe(2)
      expect(done.usage!.outputTokens).toBe(firstRound.outputTokens + done.output!.match(/\S+\s*/g)!.length)
      expect(done.usage!.inputTokens).toBeGreaterThan(firstRound.inputTokens)
      // the model saw its calls and their results, paired by id, in its own vendor's shape
      const sent = vendor(profileId).requests.at(-1)!.body
      if (profileId === 'oa-plain') {
        expect(sent.messages.slice(-3)).toEqual([
          {
            role: 'assistant',
            content: null,
            tool_calls: TWO_CALLS.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })),
          },
          { role: 'tool', tool_call_id: TWO_CALLS[0]!.id, content: 'sunny, 21 °C' },
          { role: 'tool', tool_call_id: TWO_CALLS[1]!.id, content: '12:00' },
        ])
        expect(sent.tools[0]).toEqual({
          type: 'function',
          function: { name: 'get_weather', description: WEATHER.description, parameters: WEATHER.inputSchema, strict: true },
        })
      } else {
        expect(sent.messages.slice(-2)).toEqual([
          {
            role: 'assistant',
            content: TWO_CALLS.map((c) => ({ type: 'tool_use', id: c.id, name: c.name, input: JSON.parse(c.arguments) })),
          },
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: TWO_CALLS[0]!.id, content: 'sunny, 21 °C' },
              { type: 'tool_result', tool_use_id: TWO_CALLS[1]!.id, content: '12:00' },
            ],
          },
        ])
        expect(sent.tools[0]).toEqual({ name: 'get_weather', description: WEATHER.description, input_schema: WEATHER.inputSchema })
      }
      // the conversation keeps the exchange
      const history = (await t.request(SessionToolHistoryDocument, { id: sessionId })).data!.session!.messages
      expect(history.map((m) => [m.role, m.toolCallId, m.toolCalls.map((c) => c.name)])).toEqual([
        ['USER', null, []],
        ['ASSISTANT', null, ['get_weather', 'get_time']],
        ['TOOL', weather, []],
        ['TOOL', time, []],
        ['ASSISTANT', null, []],
      ])
    },
  )

  it.each(VENDORS)('%s: toolChoice REQUIRED asks the vendor for a call, and the run waits for it', async (_v, profileId) => {
    vendor(profileId).script({ tokens: [], toolCalls: [TWO_CALLS[0]!] })
    const { runId } = await untilRequested(profileId, { toolChoice: { mode: 'REQUIRED' }, parallelToolCalls: false })
    const sent = vendor(profileId).requests.at(-1)!.body
    if (profileId === 'oa-plain') expect([sent.tool_choice, sent.parallel_tool_calls]).toEqual(['required', false])
    else expect(sent.tool_choice).toEqual({ type: 'any', disable_parallel_tool_use: true })
    expect((await runOf(runId)).pendingToolCalls.map((c) => c.name)).toEqual(['get_weather'])
    await t.request(AbortRunDocument, { runId })
  })

  it('ends a waiting run ABORTED on abortRun, and the next prompt of its session sends no dangling call', async () => {
    openai.script({ tokens: ['Let me look. '], toolCalls: [TWO_CALLS[0]!] })
    const { sessionId, runId, events } = await untilRequested('oa-plain')
    const aborted = (await t.request(AbortRunDocument, { runId })).data!.abortRun
    expect(aborted).toMatchObject({ aborted: true, run: { status: 'ABORTED' } })
    await events.done()
    const next = await enqueue(t, { sessionId, input: 'and now?', profileId: 'oa-plain' })
    await waitForEntry(t, sessionId, next.queueId, ['COMPLETED'])
    const sent = openai.requests.at(-1)!.body
    expect(sent.messages.some((m: { tool_calls?: unknown; role: string }) => m.tool_calls || m.role === 'tool')).toBe(false)
  })

  it("keeps an interrupted waiting run's turn, but replays it without the call that never got its result", async () => {
    anthropic.script({ tokens: ['Checking. '], toolCalls: [TWO_CALLS[0]!] })
    const { sessionId, runId, events } = await untilRequested('an-plain')
    const next = await enqueue(t, { sessionId, input: 'never mind', profileId: 'an-plain', whenBusy: 'INTERRUPT' })
    await events.done()
    await waitForEntry(t, sessionId, next.queueId, ['COMPLETED'])
    expect((await runOf(runId)).terminalReason).toBe('SUPERSEDED')
    const history = (await t.request(SessionToolHistoryDocument, { id: sessionId })).data!.session!.messages
    expect(history[1]).toMatchObject({ role: 'ASSISTANT', content: 'Checking. ', toolCalls: [{ name: 'get_weather' }] })
    const sent = anthropic.requests.at(-1)!.body
    expect(sent.messages).toEqual([
      { role: 'user', content: 'weather and time in Paris?' },
      { role: 'assistant', content: 'Checking. ' },
      { role: 'user', content: 'never mind' },
    ])
  })

  it('fails a run whose results do not come within its toolTimeoutMs with TOOL_TIMEOUT', async () => {
    openai.script({ tokens: [], toolCalls: [TWO_CALLS[0]!] })
    const { runId, events } = await untilRequested('oa-plain', { toolTimeoutMs: 1000 })
    await events.done()
    expect(await runOf(runId)).toMatchObject({ status: 'FAILED', terminalReason: 'TOOL_TIMEOUT', errorCode: 'TOOL_TIMEOUT' })
    expect(await submit({ runId, results: [{ callId: 'x', output: 'late' }] })).toMatchObject({ reason: 'NOT_WAITING' })
  })

  it('replays a history with tools on the other vendor, every call paired with its result', async () => {
    openai.script({ tokens: [], toolCalls: [{ ...TWO_CALLS[0]!, id: 'call.with:odd/chars' }] })
    const { sessionId, runId, events } = await untilRequested('oa-plain')
    const [call] = (await runOf(runId)).pendingToolCalls
    expect(call!.callId).toMatch(/^[A-Za-z0-9_-]+$/)
    await submit({ runId, results: [{ callId: call!.callId, output: 'rain' }] })
    await events.done()
    const next = await enqueue(t, { sessionId, input: 'thanks', profileId: 'an-plain' })
    await waitForEntry(t, sessionId, next.queueId, ['COMPLETED'])
    const sent = anthropic.requests.at(-1)!.body
    expect(sent.messages).toEqual([
      { role: 'user', content: 'weather and time in Paris?' },
      { role: 'assistant', content: [{ type: 'tool_use', id: call!.callId, name: 'get_weather', input: { city: 'Paris' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: call!.callId, content: 'rain' }] },
      { role: 'assistant', content: 'rain' },
      { role: 'user', content: 'thanks' },
    ])
  })

  it("replays Anthropic's signed thinking before the calls it led to, as its API requires", async () => {
    anthropic.script({ thinking: ['I need ', 'the weather.'], tokens: [], toolCalls: [TWO_CALLS[0]!] })
    const { runId, events } = await untilRequested('an-plain')
    const [call] = (await runOf(runId)).pendingToolCalls
    await submit({ runId, results: [{ callId: call!.callId, output: 'hail' }] })
    await events.done()
    const sent = anthropic.requests.at(-1)!.body
    expect(sent.messages[1]).toEqual({
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'I need the weather.', signature: expect.stringMatching(/\S/) },
        { type: 'tool_use', id: call!.callId, name: 'get_weather', input: { city: 'Paris' } },
      ],
    })
  })

  it('fails over to a candidate that answers with tool calls, and the rounds after stay on it', async () => {
    openai.script({ status: 500 })
    anthropic.script({ tokens: [], toolCalls: [TWO_CALLS[0]!] })
    const { runId, events } = await untilRequested('oa-then-an')
    const [call] = (await runOf(runId)).pendingToolCalls
    const before = openai.requests.length
    await submit({ runId, results: [{ callId: call!.callId, output: 'mist' }] })
    await events.done()
    expect(await runOf(runId)).toMatchObject({ status: 'COMPLETED', output: 'mist' })
    expect(openai.requests.length).toBe(before)
    expect(anthropic.requests.at(-1)!.body.messages.at(-1).content[0]).toMatchObject({ type: 'tool_result', content: 'mist' })
  })

  it('takes a steer that comes while the run waits to the model with the results', async () => {
    openai.script({ tokens: [], toolCalls: [TWO_CALLS[0]!] })
    const { sessionId, entry, runId, events } = await untilRequested('oa-plain')
    const steered = await t.request(SteerPromptDocument, {
      input: { sessionId, queueId: entry.queueId, steerId: 'celsius', text: 'in celsius please' },
    })
    expect(steered.data!.steerPrompt.__typename).toBe('SteerPromptPayload')
    const [call] = (await runOf(runId)).pendingToolCalls
    await submit({ runId, results: [{ callId: call!.callId, output: 'warm' }] })
    await events.done()
    expect(openai.requests.at(-1)!.body.messages.slice(-2)).toEqual([
      { role: 'tool', tool_call_id: TWO_CALLS[0]!.id, content: 'warm' },
      { role: 'user', content: 'in celsius please' },
    ])
  })

  it("holds no backend capacity while it waits: another run takes the backend's only place", async () => {
    openai.script({ tokens: [], toolCalls: [TWO_CALLS[0]!] })
    const { runId } = await untilRequested('oa-single')
    const other = await createSession(t, `tools-${sessions++}`)
    const entry = await enqueue(t, { sessionId: other, input: 'meanwhile', profileId: 'oa-single' })
    expect(await waitForEntry(t, other, entry.queueId, ['COMPLETED', 'FAILED'])).toMatchObject({ status: 'COMPLETED' })
    await t.request(AbortRunDocument, { runId })
  })

  it('takes the parallel candidate that answers with tool calls first, and goes on with it alone', async () => {
    openai.script({ tokens: [], toolCalls: [TWO_CALLS[0]!] })
    anthropic.script({ tokens: ['slow ', 'words'], delayMs: 2_000 })
    const sessionId = await createSession(t, `tools-${sessions++}`)
    const entry = await enqueue(t, { sessionId, promptId: 'race', input: 'weather?', tools: [WEATHER] })
    const runId = (await waitForEntry(t, sessionId, entry.queueId, ['RUNNING'])).runId!
    const events = t.subscribe(RunToolEventsDocument, { runId })
    await events.until((r) => r.some((e) => e.data?.runEvents.__typename === 'ToolCallsRequestedEvent'))
    const [call] = (await runOf(runId)).pendingToolCalls
    const before = anthropic.requests.length
    await submit({ runId, results: [{ callId: call!.callId, output: 'dry' }] })
    await events.done()
    expect(await runOf(runId)).toMatchObject({ status: 'COMPLETED', output: 'dry' })
    expect(anthropic.requests.length).toBe(before)
    expect(openai.requests.at(-1)!.body.messages.at(-1)).toEqual({ role: 'tool', tool_call_id: TWO_CALLS[0]!.id, content: 'dry' })
  })

  it('keeps a steered segment before the calls once, in order, in what the model sees next', async () => {
    openai.script({ tokens: ['Looking ', 'it ', 'up ', 'now ', 'for ', 'you '], delayMs: 300 }, { tokens: [], toolCalls: [TWO_CALLS[0]!] })
    const sessionId = await createSession(t, `tools-${sessions++}`)
    const entry = await enqueue(t, { sessionId, input: 'weather?', profileId: 'oa-plain', tools: [WEATHER] })
    const runId = (await waitForEntry(t, sessionId, entry.queueId, ['RUNNING'])).runId!
    const events = t.subscribe(RunToolEventsDocument, { runId })
    await t.request(SteerPromptDocument, { input: { sessionId, queueId: entry.queueId, steerId: 'paris', text: 'in Paris' } })
    await events.until((r) => r.some((e) => e.data?.runEvents.__typename === 'ToolCallsRequestedEvent'))
    const [call] = (await runOf(runId)).pendingToolCalls
    await submit({ runId, results: [{ callId: call!.callId, output: 'fine' }] })
    await events.done()
    const roles = openai.requests.at(-1)!.body.messages.map((m: { role: string; content: unknown }) => [m.role, m.content])
    expect(roles).toEqual([
      ['user', 'weather?'],
      ['assistant', expect.stringMatching(/^Looking /)],
      ['user', 'in Paris'],
      ['assistant', null],
      ['tool', 'fine'],
    ])
  })

  it('answers runPrompt when the run starts waiting for tool results', async () => {
    const sessionId = await createSession(t, `tools-${sessions++}`)
    const { data } = await t.request(RunPromptDocument, {
      input: {
        sessionId,
        input: 'use get_weather please',
        tools: [WEATHER],
        profileId: 'fake-echo',
        overrides: { extra: { toolArguments: { city: 'Oslo' } } },
      },
      timeoutMs: 10_000,
    })
    expect(data!.runPrompt).toMatchObject({ __typename: 'RunPromptPayload', run: { status: 'REQUIRES_ACTION' } })
  })

  it('refuses a prompt whose tool schema is not a JSON Schema, naming the tool, and saves nothing', async () => {
    const { data } = await t.request(UpsertPromptDocument, {
      input: { id: 'bad-tools', messages: [{ role: 'USER', content: 'x' }], tools: [{ name: 'broken', inputSchema: { type: 12 } }] },
    })
    expect(data!.upsertPrompt).toMatchObject({ __typename: 'InvalidRequestError' })
    expect(JSON.stringify(data!.upsertPrompt)).toContain('tools[0].inputSchema')
  })
})
