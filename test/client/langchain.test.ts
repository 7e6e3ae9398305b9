import { type BaseMessage, HumanMessage } from '@langchain/core/messages'
import { tool } from '@langchain/core/tools'
import { ChatOpenAI } from '@langchain/openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { ADMIN_KEY, startWithAdminKey } from '../helpers/key-checks.js'
import type { TestServer } from '../helpers/server.js'
import { TOOL_LOOP_CATALOG as CATALOG } from '../helpers/tool-loop-catalog.js'

const weather = tool(async ({ city }) => `Sunny in ${city}`, {
  name: 'weather',
  description: 'The weather in a city',
  schema: z.object({ city: z.string() }),
})

// LangChain's ChatOpenAI on the Responses API, tools bound, in the loop its docs show: call the
// model, run the tool calls it made, give it their messages, call it again.
describe.each([
  ['the Responses API', true],
  ['Chat Completions', false],
])('LangChain ChatOpenAI on %s', (_name, useResponsesApi) => {
  let t: TestServer
  let model: ChatOpenAI
  beforeAll(async () => {
    t = await startWithAdminKey('sqlite', CATALOG)
    model = new ChatOpenAI({ model: 'fake-echo', apiKey: ADMIN_KEY, configuration: { baseURL: `${t.http.url}/v1` }, useResponsesApi })
  })
  afterAll(async () => {
    await t?.stop({ dropDatabase: true })
  })

  it('finishes a tool loop with bound tools on the answer the tool gave', async () => {
    const bound = model.bindTools([weather])
    const messages: BaseMessage[] = [new HumanMessage('What does weather say for Paris?')]
    const first = await bound.invoke(messages)
    expect(first.tool_calls?.map((c) => [c.name, c.args])).toEqual([['weather', { city: 'Paris' }]])
    messages.push(first)
    for (const call of first.tool_calls ?? []) messages.push(await weather.invoke(call))
    const answer = await bound.invoke(messages)
    expect(answer.tool_calls ?? []).toEqual([])
    expect(answer.text).toBe('Sunny in Paris')
  })

  it('streams the answer after the tool loop', async () => {
    const bound = model.bindTools([weather])
    const messages: BaseMessage[] = [new HumanMessage('Ask weather about Paris.')]
    const first = await bound.invoke(messages)
    messages.push(first)
    for (const call of first.tool_calls ?? []) messages.push(await weather.invoke(call))
    let text = ''
    for await (const chunk of await bound.stream(messages)) text += chunk.text
    expect(text).toBe('Sunny in Paris')
  })
})
