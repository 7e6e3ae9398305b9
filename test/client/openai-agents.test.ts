import { Agent, OpenAIProvider, Runner, setTracingDisabled, tool } from '@openai/agents'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { ADMIN_KEY, startWithAdminKey } from '../helpers/key-checks.js'
import type { TestServer } from '../helpers/server.js'
import { TOOL_LOOP_CATALOG as CATALOG } from '../helpers/tool-loop-catalog.js'

const weather = tool({
  name: 'weather',
  description: 'The weather in a city',
  parameters: z.object({ city: z.string() }),
  execute: async ({ city }) => `Sunny in ${city}`,
})

// The OpenAI Agents SDK's runner, on its Responses model (its default) and on its Chat
// Completions model. Its traces would go to OpenAI's platform: this machine has no network.
describe.each([
  ['Responses', true],
  ['Chat Completions', false],
])('the OpenAI Agents SDK on its %s model', (_name, useResponses) => {
  let t: TestServer
  let runner: Runner
  beforeAll(async () => {
    setTracingDisabled(true)
    t = await startWithAdminKey('sqlite', CATALOG)
    runner = new Runner({ modelProvider: new OpenAIProvider({ baseURL: `${t.http.url}/v1`, apiKey: ADMIN_KEY, useResponses }) })
  })
  afterAll(async () => {
    await t?.stop({ dropDatabase: true })
  })

  it('runs an agent with a function tool to the answer the tool gave', async () => {
    const agent = new Agent({ name: 'forecaster', instructions: 'Answer with the tool.', model: 'fake-echo', tools: [weather] })
    const result = await runner.run(agent, 'What does weather say for Paris?')
    expect(result.finalOutput).toBe('Sunny in Paris')
    const calls = result.newItems.filter((i) => i.type === 'tool_call_output_item')
    expect(calls.map((i) => i.output)).toEqual(['Sunny in Paris'])
  })

  it('streams the same loop, the final answer in its text deltas', async () => {
    const agent = new Agent({ name: 'forecaster', instructions: 'Answer with the tool.', model: 'fake-echo', tools: [weather] })
    const stream = await runner.run(agent, 'Ask weather about Paris.', { stream: true })
    const text = []
    for await (const chunk of stream.toTextStream()) text.push(chunk)
    await stream.completed
    expect(text.join('')).toBe('Sunny in Paris')
    expect(stream.finalOutput).toBe('Sunny in Paris')
  })
})
