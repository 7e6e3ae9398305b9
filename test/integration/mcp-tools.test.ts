import OpenAI from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FakeVendorServer } from '../fixtures/fake-vendor.js'
import { McpToolServer } from '../fixtures/mcp-tool-server.js'
import {
  ApproveToolCallsDocument,
  type ApproveToolCallsInput,
  EnqueuePromptDocument,
  type EnqueuePromptInput,
  RunServerToolEventsDocument,
  RunServerToolsDocument,
  SubmitToolResultsDocument,
} from '../generated/graphql.js'
import { vendorCatalog } from '../helpers/catalog-dir.js'
import { providers } from '../helpers/databases.js'
import { createSession, enqueue, waitForEntry } from '../helpers/flow.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

const VENDORS = [
  ['OpenAI', 'oa-plain'],
  ['Anthropic', 'an-plain'],
] as const

const CALLS = [
  { name: 'lookup_city', arguments: '{"city": "Oslo"}', id: 'call_lookup_1' },
  { name: 'flaky_forecast', arguments: '{"city": "Oslo"}', id: 'call_forecast_1' },
]
const STRUCTURED = JSON.stringify({ city: 'Oslo', population: 709_000, country: 'NO' })

/** The tool names a vendor request offered, in either vendor's shape. */
const offered = (body: Record<string, unknown>): string[] =>
  ((body.tools ?? []) as { name?: string; function?: { name: string } }[]).map((t) => t.function?.name ?? t.name ?? '')

describe.each(providers)('MCP tools promptline calls itself (%s)', (provider) => {
  let openai: FakeVendorServer
  let anthropic: FakeVendorServer
  let mcp: McpToolServer
  let t: TestServer
  beforeAll(async () => {
    openai = await FakeVendorServer.start('openai')
    anthropic = await FakeVendorServer.start('anthropic')
    mcp = await McpToolServer.start()
    t = await startTestServer({
      provider,
      app: {
        catalogDir: vendorCatalog(openai, anthropic, {
          profiles: [
            `{ id: oa-cities, backendId: oa, model: gpt-test, mcpServers: [{ label: cities, url: "${mcp.url}", requireApproval: never }] }`,
          ],
        }),
        toolServers: { origins: [mcp.origin], headerEnvs: ['CITY_MCP_TOKEN'] },
      },
      secrets: { OA_KEY: 'sk-oa-key-1', AN_KEY: 'sk-an-key-2', CITY_MCP_TOKEN: 'Bearer city-t0k3n' },
    })
  })
  afterAll(async () => {
    await t?.stop({ dropDatabase: true })
    await openai?.close()
    await anthropic?.close()
    await mcp?.close()
  })
  const vendor = (profileId: string) => (profileId === 'oa-plain' ? openai : anthropic)
  const server = (requireApproval: 'ALWAYS' | 'NEVER') => ({
    label: 'cities',
    url: mcp.url,
    allowedTools: ['lookup_city', 'flaky_forecast'],
    requireApproval: { mode: requireApproval },
    headers: [{ name: 'Authorization', valueEnv: 'CITY_MCP_TOKEN' }],
  })

  let sessions = 0
  /** Enqueues a question with the MCP server in a fresh session; the run's events, subscribed before it starts calling. */
  async function started(profileId: string, requireApproval: 'ALWAYS' | 'NEVER') {
    const sessionId = await createSession(t, `mcp-tools-${provider}-${sessions++}`)
    const input = { sessionId, input: 'tell me about Oslo', profileId, mcpServers: [server(requireApproval)] }
    const entry = await enqueue(t, input)
    const runId = (await waitForEntry(t, sessionId, entry.queueId, ['STARTING', 'RUNNING', 'COMPLETED', 'FAILED'])).runId!
    return { runId, events: t.subscribe(RunServerToolEventsDocument, { runId }) }
  }
  const runOf = async (id: string) => (await t.request(RunServerToolsDocument, { id })).data!.run!
  const approve = async (input: ApproveToolCallsInput) => (await t.request(ApproveToolCallsDocument, { input })).data!.approveToolCalls

  it.each(VENDORS)(
    '%s: both calls are made on the server with its header, the model gets the structured content and the failure, and toolRounds records each call',
    async (_v, profileId) => {
      const before = mcp.calls.length
      vendor(profileId).script({ tokens: [], toolCalls: CALLS }, { tokens: ['Oslo ', 'has ', '709000 ', 'people.'] })
      const { runId, events } = await started(profileId, 'NEVER')
      await events.until((r) => r.some((e) => e.data?.runEvents.__typename === 'RunFinishedEvent'))
      const run = await runOf(runId)
      expect(run).toMatchObject({ status: 'COMPLETED', output: 'Oslo has 709000 people.' })

      const [first, second] = vendor(profileId).requests.slice(-2)
      expect(offered(first!.body).sort()).toEqual(['flaky_forecast', 'lookup_city'])
      const next = JSON.stringify(second!.body)
      expect(next).toContain(JSON.stringify(`Oslo facts\n${STRUCTURED}`).slice(1, -1))
      expect(next).toContain('forecast service is down')
      // the model is told which call failed: Anthropic's is_error, OpenAI's text
      if (profileId === 'an-plain') expect(next).toContain('"is_error":true')
      else expect(next).toContain('The tool call failed: forecast service is down')

      const received = mcp.calls.slice(before)
      expect(received.map((c) => [c.name, c.arguments, c.authorization])).toEqual(
        expect.arrayContaining([
          ['lookup_city', { city: 'Oslo' }, 'Bearer city-t0k3n'],
          ['flaky_forecast', { city: 'Oslo' }, 'Bearer city-t0k3n'],
        ]),
      )
      expect(received).toHaveLength(2)

      const [round] = run.toolRounds
      expect(round!.calls.map((c) => [c.name, c.server, c.approvalRequired])).toEqual([
        ['lookup_city', 'cities', false],
        ['flaky_forecast', 'cities', false],
      ])
      const results = Object.fromEntries(round!.results.map((r) => [r.callId, r]))
      const [lookup, forecast] = round!.calls.map((c) => results[c.callId]!)
      expect(lookup).toMatchObject({ server: 'cities', isError: false, output: `Oslo facts\n${STRUCTURED}` })
      expect(forecast).toMatchObject({ server: 'cities', isError: true, output: 'forecast service is down' })
      for (const result of [lookup, forecast]) expect(result!.durationMs).toBeGreaterThanOrEqual(0)
      const told = events.results.flatMap((e) => (e.data?.runEvents.__typename === 'ToolCallResultEvent' ? [e.data.runEvents] : []))
      expect(told.map((e) => [e.server, e.isError]).sort()).toEqual([
        ['cities', false],
        ['cities', true],
      ])
    },
  )

  it.each(VENDORS)(
    '%s: with approvals, the run waits; a declined call is never made and the model is told why; the approved one is made once',
    async (_v, profileId) => {
      const before = mcp.calls.length
      vendor(profileId).script({ tokens: [], toolCalls: CALLS }, { tokens: ['Only ', 'facts.'] })
      const { runId, events } = await started(profileId, 'ALWAYS')
      await events.until((r) => r.some((e) => e.data?.runEvents.__typename === 'ToolCallsRequestedEvent'))
      const waiting = await runOf(runId)
      expect(waiting.status).toBe('REQUIRES_ACTION')
      expect(waiting.pendingToolCalls.map((c) => [c.name, c.server, c.approvalRequired])).toEqual([
        ['lookup_city', 'cities', true],
        ['flaky_forecast', 'cities', true],
      ])
      const [lookup, forecast] = waiting.pendingToolCalls
      const submitted = (
        await t.request(SubmitToolResultsDocument, { input: { runId, results: [{ callId: lookup!.callId, output: 'made up' }] } })
      ).data!.submitToolResults
      expect(submitted).toMatchObject({ __typename: 'ToolResultRejectedError', reason: 'SERVER_CALL' })

      const declined = await approve({ runId, decisions: [{ callId: forecast!.callId, approve: false, reason: 'not today' }] })
      expect(declined.__typename).toBe('ApproveToolCallsPayload')
      expect(mcp.calls.length).toBe(before)
      await approve({ runId, decisions: [{ callId: lookup!.callId, approve: true }], idempotencyKey: 'approve-lookup' })
      // the same request again takes nothing and answers as the first did
      const repeat = await approve({ runId, decisions: [{ callId: lookup!.callId, approve: true }], idempotencyKey: 'approve-lookup' })
      expect(repeat.__typename).toBe('ApproveToolCallsPayload')
      await events.until((r) => r.some((e) => e.data?.runEvents.__typename === 'RunFinishedEvent'))

      const run = await runOf(runId)
      expect(run.status).toBe('COMPLETED')
      expect(mcp.calls.slice(before).map((c) => c.name)).toEqual(['lookup_city'])
      expect(JSON.stringify(vendor(profileId).requests.at(-1)!.body)).toContain('the call was declined: not today; it was not made')
      const decisions = run.toolRounds[0]!.calls.map((c) => [c.name, c.decision?.approve, c.decision?.reason ?? null])
      expect(decisions).toEqual([
        ['lookup_city', true, null],
        ['flaky_forecast', false, 'not today'],
      ])
    },
  )

  it('refuses a server whose origin is not allowed, with a typed error, and queues nothing', async () => {
    const sessionId = await createSession(t, `mcp-refused-${provider}`)
    const input: EnqueuePromptInput = {
      sessionId,
      input: 'hi',
      profileId: 'oa-plain',
      mcpServers: [{ ...server('NEVER'), url: 'http://127.0.0.1:1/mcp' }],
    }
    const answer = (await t.request(EnqueuePromptDocument, { input })).data!.enqueuePrompt
    expect(answer).toMatchObject({ __typename: 'InvalidRequestError' })
    expect(JSON.stringify(answer)).toContain('PROMPTLINE_MCP_ORIGINS')
  })

  it("keeps an MCP round from a /v1 chat client: the official openai SDK sees no tool call, only the answer after the server's result", async () => {
    const before = mcp.calls.length
    openai.script({ tokens: [], toolCalls: [CALLS[0]!] }, { tokens: ['Oslo ', 'it ', 'is.'] })
    const client = new OpenAI({ baseURL: `${t.http.url}/v1`, apiKey: 'unused', maxRetries: 0 })
    const stream = await client.chat.completions.create({
      model: 'oa-cities',
      messages: [{ role: 'user', content: 'Oslo?' }],
      stream: true,
    })
    const chunks = []
    for await (const chunk of stream) chunks.push(chunk)
    expect(chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? [])).toEqual([])
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('Oslo it is.')
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe('stop')
    expect(mcp.calls.slice(before).map((c) => c.name)).toEqual(['lookup_city'])
  })
})
