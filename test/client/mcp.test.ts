import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { OpenAiRunDocument, SetPromptLabelDocument, UpsertPromptDocument } from '../generated/graphql.js'
import { providers } from '../helpers/databases.js'
import { ADMIN_KEY, gql, startWithAdminKey } from '../helpers/key-checks.js'
import type { TestServer } from '../helpers/server.js'

const CATALOG = `
backends:
  - { id: fake, kind: FAKE, prices: { echo: { inputPerMillion: 1, outputPerMillion: 2 } } }
  - { id: unkeyed, kind: OPENAI, baseUrl: "http://127.0.0.1:9/v1", credentialEnv: UNSET_MCP_KEY }
profiles:
  - { id: fake-echo, backendId: fake, model: echo }
  - { id: openai-unkeyed, backendId: unkeyed, model: gpt-test }
`

/** An MCP client of the official SDK on `/mcp`, with `key`. */
async function mcpClient(url: string, key: string): Promise<Client> {
  const client = new Client({ name: 'promptline-test', version: '1.0.0' })
  const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
  })
  await client.connect(transport)
  return client
}

// promptline as an MCP server, driven by the official MCP SDK's client.
describe.each(providers)('promptline as an MCP server (%s)', (provider) => {
  let t: TestServer
  let client: Client
  beforeAll(async () => {
    t = await startWithAdminKey(provider, CATALOG)
    for (const greeting of ['Hello', 'Howdy']) {
      await gql(t.http.url, ADMIN_KEY, UpsertPromptDocument, {
        input: {
          id: 'greet',
          description: 'Greets someone.',
          messages: [
            { role: 'SYSTEM', content: 'Be warm.' },
            { role: 'USER', content: `${greeting} {{name}}` },
          ],
          defaultProfileId: 'fake-echo',
        },
      })
    }
    await gql(t.http.url, ADMIN_KEY, SetPromptLabelDocument, { input: { promptId: 'greet', label: 'stable', version: 1 } })
    client = await mcpClient(t.http.url, ADMIN_KEY)
  })
  afterAll(async () => {
    await client?.close()
    await t?.stop({ dropDatabase: true })
  })

  it('lists the prompts with their variables as required arguments, label and version optional', async () => {
    const { prompts } = await client.listPrompts()
    const greet = prompts.find((p) => p.name === 'greet')
    expect(greet).toMatchObject({ description: 'Greets someone.' })
    expect(greet!.arguments!.map((a) => [a.name, a.required])).toEqual([
      ['name', true],
      ['label', false],
      ['version', false],
    ])
  })

  it('gets a prompt rendered at a label', async () => {
    const stable = await client.getPrompt({ name: 'greet', arguments: { name: 'Ada', label: 'stable' } })
    expect(stable.messages).toEqual([
      { role: 'user', content: { type: 'text', text: 'Be warm.' } },
      { role: 'user', content: { type: 'text', text: 'Hello Ada' } },
    ])
    const newest = await client.getPrompt({ name: 'greet', arguments: { name: 'Ada' } })
    expect(newest.messages.at(-1)!.content).toEqual({ type: 'text', text: 'Howdy Ada' })
    await expect(client.getPrompt({ name: 'no-such-prompt', arguments: {} })).rejects.toThrow(/not found/)
  })

  it('runs a prompt with run_prompt as an ordinary run, which get_run and GraphQL show', async () => {
    const { tools } = await client.listTools()
    expect(tools.map((tool) => tool.name)).toEqual(['run_prompt', 'get_run'])
    const ran = await client.callTool({ name: 'run_prompt', arguments: { promptId: 'greet', variables: { name: 'Ada' }, label: 'stable' } })
    expect(ran.isError).toBe(false)
    expect(ran.content).toEqual([{ type: 'text', text: 'Hello Ada' }])
    const { runId, costUsd, usage } = ran.structuredContent as { runId: string; costUsd: number; usage: { outputTokens: number } }
    const run = (await gql(t.http.url, ADMIN_KEY, OpenAiRunDocument, { id: runId })).data!.run!
    expect(run).toMatchObject({
      origin: 'MCP',
      status: 'COMPLETED',
      promptVersion: 1,
      promptLabel: 'stable',
      output: 'Hello Ada',
      cost: costUsd,
    })
    expect(usage.outputTokens).toBe(run.usage!.outputTokens)
    const got = await client.callTool({ name: 'get_run', arguments: { runId } })
    expect(got.structuredContent).toMatchObject({ runId, status: 'COMPLETED' })
  })

  it('answers a run it cannot start (no prompt, no vendor key) as a tool error naming what to fix, and a request without a key 401', async () => {
    const refused = await client.callTool({ name: 'run_prompt', arguments: { promptId: 'no-such-prompt' } })
    expect(refused).toMatchObject({ isError: true, structuredContent: { errorCode: 'NOT_FOUND' } })
    const unkeyed = await client.callTool({
      name: 'run_prompt',
      arguments: { promptId: 'greet', profileId: 'openai-unkeyed', variables: { name: 'Ada' } },
    })
    expect(unkeyed).toMatchObject({ isError: true, structuredContent: { errorCode: 'CREDENTIALS' } })
    expect(JSON.stringify(unkeyed.content)).toContain('UNSET_MCP_KEY')
    await expect(mcpClient(t.http.url, 'pl_not-a-key')).rejects.toThrow(/401|API key/)
  })
})
