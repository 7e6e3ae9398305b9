import { createOpenAI } from '@ai-sdk/openai'
import { generateText, stepCountIs, streamText, tool } from 'ai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { OpenAiRunDocument, OpenAiSessionMessagesDocument } from '../generated/graphql.js'
import { ADMIN_KEY, gql, startWithAdminKey } from '../helpers/key-checks.js'
import type { TestServer } from '../helpers/server.js'
import { TOOL_LOOP_CATALOG as CATALOG } from '../helpers/tool-loop-catalog.js'

const weather = tool({
  description: 'The weather in a city',
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => `Sunny in ${city}`,
})

// The Vercel AI SDK's default provider, `openai(model)`, speaks the Responses API statelessly:
// each step resends the whole history, its function calls and their outputs included.
describe('the AI SDK default OpenAI provider', () => {
  let t: TestServer
  let openai: ReturnType<typeof createOpenAI>
  beforeAll(async () => {
    t = await startWithAdminKey('sqlite', CATALOG)
    openai = createOpenAI({ baseURL: `${t.http.url}/v1`, apiKey: ADMIN_KEY })
  })
  afterAll(async () => {
    await t?.stop({ dropDatabase: true })
  })

  it('runs a generateText tool loop to the answer its tool gave, as one durable run', async () => {
    const result = await generateText({
      model: openai('fake-echo'),
      tools: { weather },
      stopWhen: stepCountIs(3),
      prompt: 'What is the weather in Paris? Ask weather.',
    })
    expect(result.text).toBe('Sunny in Paris')
    expect(result.steps.map((s) => s.finishReason)).toEqual(['tool-calls', 'stop'])
    const runId = result.response.headers?.['x-promptline-run-id']
    const run = (await gql(t.http.url, ADMIN_KEY, OpenAiRunDocument, { id: runId! })).data!.run!
    expect(run).toMatchObject({ status: 'COMPLETED', origin: 'OPENAI_RESPONSES', output: 'Sunny in Paris' })
    expect(run.toolRounds).toMatchObject([{ calls: [{ name: 'weather' }], results: [{ output: 'Sunny in Paris' }] }])
  })

  it('runs a streamText tool loop, its text streamed step by step', async () => {
    const result = streamText({
      model: openai('fake-echo'),
      tools: { weather },
      stopWhen: stepCountIs(3),
      prompt: 'Which weather is it in Paris? Call weather.',
    })
    const deltas: string[] = []
    for await (const delta of result.textStream) deltas.push(delta)
    expect(deltas.join('')).toBe('Sunny in Paris')
    expect((await result.steps).map((s) => s.finishReason)).toEqual(['tool-calls', 'stop'])
    expect((await result.steps)[0]!.toolResults.map((r) => r.output)).toEqual(['Sunny in Paris'])
  })

  it('carries an earlier answer it refers to by item id into the next turn', async () => {
    const first = await generateText({ model: openai('fake-echo'), prompt: 'remember the word heron' })
    const second = await generateText({
      model: openai('fake-echo'),
      messages: [{ role: 'user', content: 'remember the word heron' }, ...first.response.messages, { role: 'user', content: 'and now?' }],
    })
    expect(first.text).toBe('remember the word heron')
    expect(second.text).toBe('and now?')
    const run = (await gql(t.http.url, ADMIN_KEY, OpenAiRunDocument, { id: second.response.headers!['x-promptline-run-id']! })).data!.run!
    const session = (await gql(t.http.url, ADMIN_KEY, OpenAiSessionMessagesDocument, { id: run.sessionId! })).data!.session!
    expect(session.messages.map((m) => [m.role, m.content])).toEqual([
      ['USER', 'remember the word heron'],
      ['ASSISTANT', 'remember the word heron'],
      ['USER', 'and now?'],
      ['ASSISTANT', 'and now?'],
    ])
  })
})
