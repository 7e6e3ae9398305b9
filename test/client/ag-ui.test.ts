import { HttpAgent } from '@ag-ui/client'
import type { BaseEvent } from '@ag-ui/core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { McpToolServer } from '../fixtures/mcp-tool-server.js'
import { OpenAiRunDocument } from '../generated/graphql.js'
import { providers } from '../helpers/databases.js'
import { ADMIN_KEY, gql, startWithAdminKey } from '../helpers/key-checks.js'
import type { TestServer } from '../helpers/server.js'

/** The fake backend; `fake-cities` offers an MCP server's tools, `lookup_city` made at once and `flaky_forecast` once approved. */
const catalogWith = (mcpUrl: string) => `
backends:
  - { id: fake, kind: FAKE }
  - { id: unkeyed, kind: OPENAI, baseUrl: "http://127.0.0.1:9/v1", credentialEnv: UNSET_AG_UI_KEY }
profiles:
  - { id: fake-echo, backendId: fake, model: echo }
  - { id: openai-unkeyed, backendId: unkeyed, model: gpt-test }
  - { id: fake-slow, backendId: fake, model: echo, settings: { extra: { tokenDelayMs: 100 } } }
  - id: fake-cities
    backendId: fake
    model: echo
    settings: { extra: { toolArguments: { city: Oslo } } }
    mcpServers:
      - { label: cities, url: "${mcpUrl}", allowedTools: [lookup_city, flaky_forecast], requireApproval: { never: [lookup_city] } }
prompts:
  - { id: greet, messages: [{ role: user, content: "Hello {{name}}" }] }
`

type Seen = BaseEvent & {
  delta?: string
  metadata?: { promptlineEventId?: string; promptlineRunId?: string }
  outcome?: { type: string; pendingToolCallIds?: string[]; interrupts?: { id: string; toolCallId: string; reason: string }[] }
  toolCallId?: string
  content?: string
}

// AG-UI at /ag-ui, driven by the official @ag-ui/client HttpAgent.
describe.each(providers)('AG-UI through @ag-ui/client (%s)', (provider) => {
  let t: TestServer
  let mcp: McpToolServer
  const agent = (threadId: string, headers: Record<string, string> = {}) =>
    new HttpAgent({ url: `${t.http.url}/ag-ui`, threadId, headers: { authorization: `Bearer ${ADMIN_KEY}`, ...headers } })
  /** Runs `a` and collects what it receives. */
  const run = async (a: HttpAgent, parameters: Parameters<HttpAgent['runAgent']>[0]) => {
    const events: Seen[] = []
    await a.runAgent(parameters, {
      onEvent: ({ event }) => {
        events.push(event as Seen)
      },
    })
    return events
  }
  const textOf = (events: Seen[]) => events.flatMap((e) => (e.type === 'TEXT_MESSAGE_CONTENT' ? [e.delta!] : [])).join('')
  beforeAll(async () => {
    mcp = await McpToolServer.start()
    t = await startWithAdminKey(provider, catalogWith(mcp.url), { toolServers: { origins: [mcp.origin], headerEnvs: [] } })
  })
  afterAll(async () => {
    await t?.stop({ dropDatabase: true })
    await mcp?.close()
  })

  it('runs on a thread and streams the text events in order, as an ordinary run', async () => {
    const a = agent('thread-text')
    a.addMessage({ id: 'u1', role: 'user', content: 'one two three' })
    const events = await run(a, { runId: 'run-text', forwardedProps: { profileId: 'fake-echo' } })
    const kinds = events.map((e) => e.type).filter((type, i, all) => type !== 'TEXT_MESSAGE_CONTENT' || all[i - 1] !== type)
    expect(kinds).toEqual(['RUN_STARTED', 'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END', 'RUN_FINISHED'])
    expect(textOf(events)).toBe('one two three')
    expect(a.messages.at(-1)).toMatchObject({ role: 'assistant', content: 'one two three' })
    const runId = events[0]!.metadata!.promptlineRunId!
    const recorded = (await gql(t.http.url, ADMIN_KEY, OpenAiRunDocument, { id: runId })).data!.run!
    expect(recorded).toMatchObject({ origin: 'AG_UI', status: 'COMPLETED', sessionId: 'thread-text', output: 'one two three' })
  })

  it("pauses at a client tool's call, and the next run with its result completes the same run", async () => {
    const a = agent('thread-tools')
    const tools = [{ name: 'lookup', description: 'Looks a word up.', parameters: { type: 'object', properties: {} } }]
    a.addMessage({ id: 'u1', role: 'user', content: 'please lookup gravel' })
    const first = await run(a, { runId: 'run-ask', tools, forwardedProps: { profileId: 'fake-echo' } })
    const start = first.find((e) => e.type === 'TOOL_CALL_START') as Seen & { toolCallId: string; toolCallName: string }
    expect(start.toolCallName).toBe('lookup')
    expect(first.at(-1)).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'success', pendingToolCallIds: [start.toolCallId] } })

    a.addMessage({ id: 't1', role: 'tool', toolCallId: start.toolCallId, content: 'small stones' })
    const second = await run(a, { runId: 'run-answer', tools, forwardedProps: { profileId: 'fake-echo' } })
    // the fake echoes the last message it was sent: the result
    expect(textOf(second)).toBe('small stones')
    const runId = first[0]!.metadata!.promptlineRunId!
    expect(second[0]!.metadata!.promptlineRunId).toBe(runId)
    const recorded = (await gql(t.http.url, ADMIN_KEY, OpenAiRunDocument, { id: runId })).data!.run!
    expect(recorded.status).toBe('COMPLETED')
    // the same runId again is the same AG-UI run: its stream once more, nothing run twice
    const again = await run(a, { runId: 'run-answer', tools, forwardedProps: { profileId: 'fake-echo' } })
    expect(again.map((e) => e.type)).toEqual(second.map((e) => e.type))
    expect(textOf(again)).toBe('small stones')
    expect(recorded.toolRounds).toEqual([
      {
        calls: [{ callId: start.toolCallId, name: 'lookup', argumentsText: '{}' }],
        results: [{ callId: start.toolCallId, output: 'small stones' }],
      },
    ])
  })

  it('gives a client that reconnects with Last-Event-ID every later event, none twice', async () => {
    const messages = [{ id: 'u1', role: 'user' as const, content: 'a b c d e f g h' }]
    const first = agent('thread-cut')
    for (const m of messages) first.addMessage(m)
    const abort = new AbortController()
    const head: Seen[] = []
    await first
      .runAgent(
        { runId: 'run-cut', forwardedProps: { profileId: 'fake-slow' }, abortController: abort },
        {
          onEvent: ({ event }) => {
            head.push(event as Seen)
            if (event.type === 'TEXT_MESSAGE_CONTENT') abort.abort()
          },
        },
      )
      .catch(() => {})
    const cursor = head.findLast((e) => e.type === 'TEXT_MESSAGE_CONTENT')!.metadata!.promptlineEventId!
    const again = agent('thread-cut', { 'Last-Event-ID': cursor })
    for (const m of messages) again.addMessage(m)
    const rest = await run(again, { runId: 'run-cut', forwardedProps: { profileId: 'fake-slow' } })
    // cut mid-run: some text came before the cut, the rest after it
    expect(textOf(head)).not.toBe('')
    expect(textOf(rest)).not.toBe('')
    expect(textOf(head) + textOf(rest)).toBe('a b c d e f g h')
    const ids = [...head, ...rest].flatMap((e) => (e.type === 'TEXT_MESSAGE_CONTENT' ? [e.metadata!.promptlineEventId!] : []))
    expect(new Set(ids).size).toBe(ids.length)
    expect(rest.at(-1)!.type).toBe('RUN_FINISHED')
  })

  it('gives each event its own increasing id, and a client cut after any event gets exactly the rest', async () => {
    const messages = [{ id: 'u1', role: 'user' as const, content: 'one two three' }]
    const whole = agent('thread-every-cut')
    for (const m of messages) whole.addMessage(m)
    const all = await run(whole, { runId: 'run-every-cut', forwardedProps: { profileId: 'fake-echo' } })
    const idOf = (e: Seen) => e.metadata?.promptlineEventId
    const numbered = all.filter((e) => idOf(e) !== undefined)
    const order = numbered.map((e) => idOf(e)!.split('-').map(Number) as [number, number])
    for (const [i, [sequence, index]] of order.entries())
      if (i > 0) expect(sequence > order[i - 1]![0] || (sequence === order[i - 1]![0] && index > order[i - 1]![1])).toBe(true)
    // neighbours made by one session event (a message's start and its first text) share its sequence
    expect(new Set(order.map(([sequence]) => sequence)).size).toBeLessThan(order.length)
    for (const [k, cut] of numbered.entries()) {
      const again = agent('thread-every-cut', { 'Last-Event-ID': idOf(cut)! })
      for (const m of messages) again.addMessage(m)
      const rest = await run(again, { runId: 'run-every-cut', forwardedProps: { profileId: 'fake-echo' } })
      expect(rest.filter((e) => idOf(e) !== undefined)).toEqual(numbered.slice(k + 1))
      expect(textOf(all.slice(0, all.indexOf(cut) + 1)) + textOf(rest)).toBe('one two three')
    }
  })

  it('streams the same run again for the same runId without Last-Event-ID', async () => {
    const a = agent('thread-again')
    a.addMessage({ id: 'u1', role: 'user', content: 'twice told' })
    const first = await run(a, { runId: 'run-again', forwardedProps: { profileId: 'fake-echo' } })
    const second = await run(a, { runId: 'run-again', forwardedProps: { profileId: 'fake-echo' } })
    expect(second[0]!.metadata!.promptlineRunId).toBe(first[0]!.metadata!.promptlineRunId)
    expect(second.map((e) => e.metadata?.promptlineEventId)).toEqual(first.map((e) => e.metadata?.promptlineEventId))
    expect(textOf(second)).toBe('twice told')
  })

  it.each([
    ['a prompt whose variable is missing', { promptId: 'greet', profileId: 'fake-echo' }, 'RENDER', 'name'],
    ['a profile whose vendor key is not set', { profileId: 'openai-unkeyed' }, 'CREDENTIALS', 'UNSET_AG_UI_KEY'],
  ])('answers %s 400, as JSON with its code, naming what to fix', async (_, forwardedProps, code, named) => {
    const response = await fetch(`${t.http.url}/ag-ui`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        threadId: `thread-${code}`,
        runId: `run-${code}`,
        messages: [{ id: 'u1', role: 'user', content: 'hi' }],
        tools: [],
        context: [],
        state: {},
        forwardedProps,
      }),
    })
    expect(response.status).toBe(400)
    const body = (await response.json()) as { code: string; error: string }
    expect(body.code).toBe(code)
    expect(body.error).toContain(named)
  })

  it('streams the result of an MCP call promptline made, and ends with an interrupt for a call awaiting approval, which a resume answers', async () => {
    const a = agent('thread-mcp')
    a.addMessage({ id: 'u1', role: 'user', content: 'use lookup_city' })
    const made = await run(a, { runId: 'run-mcp', forwardedProps: { profileId: 'fake-cities' } })
    const result = made.find((e) => e.type === 'TOOL_CALL_RESULT')!
    expect(result.content).toContain('{"city":"Oslo","population":709000,"country":"NO"}')
    expect(made.at(-1)).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'success' } })
    // after the result, the model's next answer in the same stream: the fake echoes the result
    expect(textOf(made)).toContain('Oslo facts')

    const before = mcp.calls.length
    a.addMessage({ id: 'u2', role: 'user', content: 'now flaky_forecast' })
    const asked = await run(a, { runId: 'run-approve', forwardedProps: { profileId: 'fake-cities' } })
    const finished = asked.at(-1)!
    expect(finished.outcome?.type).toBe('interrupt')
    const [interrupt] = finished.outcome!.interrupts!
    expect(interrupt).toMatchObject({ reason: 'tool_approval' })
    expect(mcp.calls.length).toBe(before)

    // the interrupt answered: declined, so the call is never made
    const resumed = await run(a, {
      runId: 'run-decline',
      forwardedProps: { profileId: 'fake-cities' },
      resume: [{ interruptId: interrupt!.id, status: 'resolved', payload: { approve: false, reason: 'no forecasts' } }],
    })
    expect(resumed.find((e) => e.type === 'TOOL_CALL_RESULT')?.content).toBe('the call was declined: no forecasts; it was not made')
    expect(resumed.at(-1)).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'success' } })
    expect(mcp.calls.length).toBe(before)
  })
})
