import OpenAI from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sha256Hex } from '../../src/domain/hash.js'
import { FakeVendorServer } from '../fixtures/fake-vendor.js'
import {
  CreateSessionDocument,
  EnqueueForKeyDocument,
  OpenAiRunDocument,
  OpenAiSessionMessagesDocument,
  QueueEntryDocument,
  RevokeApiKeyDocument,
  RunDocument,
  SessionsDocument,
  SetPromptLabelDocument,
  UpsertPromptDocument,
} from '../generated/graphql.js'
import { vendorCatalog } from '../helpers/catalog-dir.js'
import { providers } from '../helpers/databases.js'
import { ADMIN_KEY, completedRun, createKey, gql } from '../helpers/key-checks.js'
import { scrape } from '../helpers/prometheus.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

// OpenAI's Chat Completions at /v1, driven by the official openai SDK, onto ordinary runs of
// the fake backend and of the fake OpenAI and Anthropic vendors.
describe.each(providers)('Chat Completions through the openai SDK (%s)', (provider) => {
  let t: TestServer
  let openai: FakeVendorServer
  let anthropic: FakeVendorServer
  let client: OpenAI
  beforeAll(async () => {
    openai = await FakeVendorServer.start('openai')
    anthropic = await FakeVendorServer.start('anthropic')
    t = await startTestServer({
      provider,
      apiKey: ADMIN_KEY,
      secrets: { OA_KEY: 'sk-test-openai', AN_KEY: 'sk-test-anthropic' },
      app: {
        catalogDir: vendorCatalog(openai, anthropic, {
          backends: [
            '{ id: oa-p, kind: OPENAI, baseUrl: "' +
              openai.baseUrl +
              '", credentialEnv: OA_KEY, prices: { gpt-test: { inputPerMillion: 1, outputPerMillion: 2 } } }',
            `{ id: oa-unkeyed, kind: OPENAI, baseUrl: "${openai.baseUrl}", credentialEnv: UNSET_KEY }`,
          ],
          profiles: [
            '{ id: fake-slow, backendId: fake, model: echo, settings: { extra: { tokenDelayMs: 100 } } }',
            '{ id: oa-priced, backendId: oa-p, model: gpt-test }',
            '{ id: oa-unkeyed, backendId: oa-unkeyed, model: gpt-test }',
          ],
        }),
        apiKeys: [{ sha256: sha256Hex(ADMIN_KEY), tenantId: 'acme', role: 'admin' }],
      },
    })
    client = new OpenAI({ baseURL: `${t.http.url}/v1`, apiKey: ADMIN_KEY, maxRetries: 0 })
  })
  afterAll(async () => {
    await t?.stop({ dropDatabase: true })
    await openai?.close()
    await anthropic?.close()
  })

  it('lists the profiles as models', async () => {
    const ids = []
    for await (const model of client.models.list()) ids.push(model.id)
    expect(ids).toEqual(expect.arrayContaining(['fake-echo', 'oa-plain', 'an-plain']))
  })

  it.each(['fake-echo', 'oa-plain', 'an-plain'])(
    'answers a completion on %s as a run, with the usage and cost the GraphQL API shows',
    async (model) => {
      const { data: completion, response } = await client.chat.completions
        .create({
          model,
          messages: [
            { role: 'system', content: 'Be brief.' },
            { role: 'user', content: 'say it back' },
          ],
        })
        .withResponse()
      const runId = response.headers.get('x-promptline-run-id')!
      expect(completion.id).toBe(`chatcmpl-${runId}`)
      expect(completion.choices[0]).toMatchObject({
        index: 0,
        message: { role: 'assistant', content: 'say it back' },
        finish_reason: 'stop',
      })
      const run = (await gql(t.http.url, ADMIN_KEY, OpenAiRunDocument, { id: runId })).data!.run!
      expect(completion.usage).toMatchObject({
        prompt_tokens: run.usage!.inputTokens,
        completion_tokens: run.usage!.outputTokens,
        total_tokens: run.usage!.inputTokens + run.usage!.outputTokens,
        cost: run.cost,
      })
    },
  )

  it("says the server's own time on each answer: the total less the vendor's, by stage, and in /metrics", async () => {
    const before = await scrape(t.http.url)
    // paced tokens: the vendor's 120 ms must not count as the server's
    openai.script({ tokens: ['a ', 'b ', 'c'], delayMs: 40 })
    const sentAt = performance.now()
    const { response } = await client.chat.completions
      .create({ model: 'oa-plain', messages: [{ role: 'user', content: 'x' }] })
      .withResponse()
    const totalMs = performance.now() - sentAt
    const timing = Object.fromEntries(
      response.headers
        .get('server-timing')!
        .split(', ')
        .map((stage) => stage.split(';dur=') as [string, string])
        .map(([name, ms]) => [name, Number(ms)]),
    )
    expect(Object.keys(timing)).toEqual(['auth', 'admission', 'first-token', 'record', 'vendor'])
    expect(timing.vendor).toBeGreaterThanOrEqual(120)
    const overheadMs = Number(response.headers.get('x-promptline-overhead-ms'))
    expect(overheadMs).toBeGreaterThan(0)
    expect(overheadMs).toBeLessThanOrEqual(totalMs - timing.vendor!)
    const streamed = await client.chat.completions
      .create({ model: 'fake-echo', messages: [{ role: 'user', content: 'x' }], stream: true })
      .withResponse()
    for await (const _ of streamed.data);
    // a stream's headers go before its tokens: its figures are those up to them
    expect(streamed.response.headers.get('server-timing')).toMatch(/^auth;dur=[\d.]+, admission;dur=[\d.]+$/)
    const refused = await fetch(`${t.http.url}/v1/models`, { headers: { authorization: 'Bearer wrong' } })
    expect(refused.status).toBe(401)
    expect(Number(refused.headers.get('x-promptline-overhead-ms'))).toBeGreaterThan(0)
    const after = await scrape(t.http.url)
    const count = (read: typeof before, name: string, labels = {}) => read(`${name}_count`, labels)
    expect(count(after, 'promptline_openai_overhead_seconds') - count(before, 'promptline_openai_overhead_seconds')).toBe(3)
    const stage = 'promptline_openai_stage_seconds'
    expect(count(after, stage, { stage: 'record' }) - count(before, stage, { stage: 'record' })).toBe(1)
    expect(count(after, stage, { stage: 'admission' }) - count(before, stage, { stage: 'admission' })).toBe(2)
  })

  it('records which surface admitted each run', async () => {
    await gql(t.http.url, ADMIN_KEY, CreateSessionDocument, { input: { id: 'from-graphql', defaultProfileId: 'fake-echo' } })
    const admitted = await gql(t.http.url, ADMIN_KEY, EnqueueForKeyDocument, { input: { sessionId: 'from-graphql', input: 'hi' } })
    if (admitted.data?.enqueuePrompt.__typename !== 'EnqueuePromptPayload') throw new Error(JSON.stringify(admitted))
    await completedRun(t.http.url, { sessionId: 'from-graphql', queueId: admitted.data.enqueuePrompt.entry.queueId })
    const entry = (
      await gql(t.http.url, ADMIN_KEY, QueueEntryDocument, {
        sessionId: 'from-graphql',
        queueId: admitted.data.enqueuePrompt.entry.queueId,
      })
    ).data!.queueEntry!
    expect(entry.run!.origin).toBe('GRAPHQL')
  })

  it('streams chunks: the role first, the text, the finish, and the usage last when asked', async () => {
    const stream = await client.chat.completions.create({
      model: 'oa-plain',
      messages: [{ role: 'user', content: 'one two three four' }],
      stream: true,
      stream_options: { include_usage: true },
    })
    const chunks = []
    for await (const chunk of stream) chunks.push(chunk)
    expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant')
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('one two three four')
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe('stop')
    expect(chunks.at(-1)!.choices).toEqual([])
    expect(chunks.at(-1)!.usage!.completion_tokens).toBeGreaterThan(0)
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1)
  })

  it("assembles the same message with the SDK's stream helper", async () => {
    const messages = [
      { role: 'user' as const, content: 'first turn' },
      { role: 'assistant' as const, content: 'an answer' },
      { role: 'user' as const, content: 'the second turn' },
    ]
    const final = await client.chat.completions.stream({ model: 'fake-echo', messages }).finalChatCompletion()
    expect(final.choices[0]!.message.content).toBe('the second turn')
    const plain = await client.chat.completions.create({ model: 'fake-echo', messages })
    expect(plain.choices[0]!.message.content).toBe(final.choices[0]!.message.content)
  })

  it('stops the run of a stream whose client goes away', async () => {
    const controller = new AbortController()
    const { data: stream, response } = await client.chat.completions
      .create(
        { model: 'fake-slow', messages: [{ role: 'user', content: 'a b c d e f g h i j' }], stream: true, temperature: 0.5 },
        { signal: controller.signal },
      )
      .withResponse()
    const runId = response.headers.get('x-promptline-run-id')!
    for await (const _chunk of stream) break
    controller.abort()
    // ten tokens 100 ms apart: stopped, it ends ABORTED well before its last one
    let run: { status: string; output?: string | null; finishedAt?: string | null } | undefined
    for (let tries = 0; tries < 200 && !run?.finishedAt; tries++) {
      run = (await gql(t.http.url, ADMIN_KEY, RunDocument, { id: runId })).data?.run ?? undefined
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    expect(run?.status).toBe('ABORTED')
    expect(run?.output ?? '').not.toBe('a b c d e f g h i j')
  })

  it('refuses what it cannot honour with 400 and the parameter, and runs nothing', async () => {
    const refused = (body: Record<string, unknown>) =>
      client.chat.completions.create({ model: 'fake-echo', messages: [{ role: 'user', content: 'x' }], ...body } as never).then(
        () => null,
        (error: unknown) => error,
      )
    const n = await refused({ n: 2 })
    expect(n).toBeInstanceOf(OpenAI.BadRequestError)
    expect(n).toMatchObject({ status: 400, code: 'unsupported_parameter', param: 'n' })
    expect(await refused({ logprobs: true })).toMatchObject({ status: 400, code: 'unsupported_parameter', param: 'logprobs' })
    expect(await refused({ model: 'no-such-profile' })).toMatchObject({ status: 404, code: 'model_not_found' })
  })

  it('answers a profile whose vendor key is not set 400 credentials, naming the variable to set', async () => {
    const refused = await client.chat.completions
      .create({ model: 'oa-unkeyed', messages: [{ role: 'user', content: 'hi' }] })
      .catch((error: unknown) => error)
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError)
    expect(refused).toMatchObject({ status: 400, code: 'credentials' })
    expect((refused as Error).message).toContain('UNSET_KEY')
  })

  it('answers a spent budget 429 insufficient_quota, and keeps no session for it', async () => {
    const spent = await createKey(t.http.url, { budget: { costUsd: 0.000001, period: 'DAY' } })
    const asKey = new OpenAI({ baseURL: `${t.http.url}/v1`, apiKey: spent.secret, maxRetries: 0 })
    const before = (await gql(t.http.url, ADMIN_KEY, SessionsDocument, { first: 200 })).data!.sessions.edges.length
    const refused = await asKey.chat.completions
      .create({ model: 'oa-priced', messages: [{ role: 'user', content: 'hi' }], max_tokens: 100 })
      .catch((error: unknown) => error)
    expect(refused).toMatchObject({ status: 429, code: 'insufficient_quota' })
    expect((await gql(t.http.url, ADMIN_KEY, SessionsDocument, { first: 200 })).data!.sessions.edges.length).toBe(before)
  })

  it('answers a revoked key 401 and a key over its rate 429, in OpenAI’s shape', async () => {
    const limited = await createKey(t.http.url, { limits: { requestsPerMinute: 1 } })
    const asKey = new OpenAI({ baseURL: `${t.http.url}/v1`, apiKey: limited.secret, maxRetries: 0 })
    const ask = () => asKey.chat.completions.create({ model: 'fake-echo', messages: [{ role: 'user', content: 'hi' }] })
    await ask()
    const tooMany = await ask().catch((error: unknown) => error)
    expect(tooMany).toBeInstanceOf(OpenAI.RateLimitError)
    expect(Number((tooMany as InstanceType<typeof OpenAI.RateLimitError>).headers?.get('retry-after'))).toBeGreaterThan(0)
    const revoked = await createKey(t.http.url, {})
    await gql(t.http.url, ADMIN_KEY, RevokeApiKeyDocument, { input: { id: revoked.id } })
    const asRevoked = new OpenAI({ baseURL: `${t.http.url}/v1`, apiKey: revoked.secret, maxRetries: 0 })
    const refused = await asRevoked.chat.completions
      .create({ model: 'fake-echo', messages: [{ role: 'user', content: 'hi' }] })
      .catch((error: unknown) => error)
    expect(refused).toBeInstanceOf(OpenAI.AuthenticationError)
    expect(refused).toMatchObject({ status: 401, code: 'invalid_api_key', type: 'invalid_request_error' })
  })

  it('lists the prompts as prompt:<id> models beside the profiles', async () => {
    await gql(t.http.url, ADMIN_KEY, UpsertPromptDocument, {
      input: { id: 'listed', messages: [{ role: 'USER', content: '{{input}}' }], defaultProfileId: 'fake-echo' },
    })
    const ids = []
    for await (const model of client.models.list()) ids.push(model.id)
    expect(ids).toEqual(expect.arrayContaining(['fake-echo', 'prompt:listed']))
  })

  it("runs a prompt by prompt:<id>@<label> with its variables, the request's messages after the prompt's", async () => {
    for (const greeting of ['Hello', 'Howdy']) {
      await gql(t.http.url, ADMIN_KEY, UpsertPromptDocument, {
        input: {
          id: 'greet',
          messages: [
            { role: 'SYSTEM', content: 'Greet {{name}}.' },
            { role: 'USER', content: `${greeting} {{name}}` },
          ],
          defaultProfileId: 'fake-echo',
        },
      })
    }
    await gql(t.http.url, ADMIN_KEY, SetPromptLabelDocument, { input: { promptId: 'greet', label: 'stable', version: 1 } })
    const { data: completion, response } = await client.chat.completions
      .create({
        model: 'prompt:greet@stable',
        messages: [{ role: 'user', content: 'and then this' }],
        metadata: { prompt_variables: { name: 'Ada' } },
      } as never)
      .withResponse()
    expect(completion.choices[0]!.message.content).toBe('and then this')
    const run = (await gql(t.http.url, ADMIN_KEY, OpenAiRunDocument, { id: response.headers.get('x-promptline-run-id')! })).data!.run!
    expect(run).toMatchObject({ promptId: 'greet', promptVersion: 1, promptLabel: 'stable', origin: 'OPENAI_CHAT' })
    const session = (await gql(t.http.url, ADMIN_KEY, OpenAiSessionMessagesDocument, { id: run.sessionId! })).data!.session!
    expect(session.messages.map((m) => m.content)).toEqual(['Hello Ada', 'and then this', 'and then this'])
  })

  it('runs a prompt:<id> model with no messages, its variables as the JSON text a typed metadata allows', async () => {
    await gql(t.http.url, ADMIN_KEY, UpsertPromptDocument, {
      input: { id: 'hello-to', messages: [{ role: 'USER', content: 'Hello {{name}}' }], defaultProfileId: 'fake-echo' },
    })
    const completion = await client.chat.completions.create({
      model: 'prompt:hello-to',
      messages: [],
      metadata: { prompt_variables: JSON.stringify({ name: 'Grace' }) },
    })
    expect(completion.choices[0]!.message.content).toBe('Hello Grace')
    const refused = await client.chat.completions
      .create({ model: 'prompt:hello-to', messages: [], metadata: { prompt_variables: 'not json' } })
      .catch((e: unknown) => e)
    expect(refused).toMatchObject({ status: 400, param: 'metadata.prompt_variables' })
    const bare = await client.chat.completions.create({ model: 'fake-echo', messages: [] }).catch((e: unknown) => e)
    expect(bare).toMatchObject({ status: 400, param: 'messages' })
  })
  it('pauses a run at its tool calls and continues the same run with their results', async () => {
    const tools = [{ type: 'function' as const, function: { name: 'lookup', parameters: { type: 'object', properties: {} } } }]
    const asked = [{ role: 'user' as const, content: 'please lookup a word' }]
    const stream = await client.chat.completions.create({ model: 'fake-echo', messages: asked, tools, stream: true })
    const chunks = []
    for await (const chunk of stream) chunks.push(chunk)
    const fragments = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? [])
    expect(fragments[0]).toMatchObject({ index: 0, type: 'function', function: { name: 'lookup' } })
    expect(fragments.slice(1).every((f) => f.index === 0 && f.id === undefined && f.function?.name === undefined)).toBe(true)
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe('tool_calls')
    const callId = fragments[0]!.id!
    const calledWith = fragments.map((f) => f.function?.arguments ?? '').join('')

    const answered = await client.chat.completions.create({
      model: 'fake-echo',
      messages: [
        ...asked,
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: callId, type: 'function', function: { name: 'lookup', arguments: calledWith } }],
        },
        { role: 'tool', tool_call_id: callId, content: '{"meaning":"a unit of language"}' },
      ],
      tools,
    })
    expect(answered.id).toBe(chunks[0]!.id)
    // the fake echoes the last message it was sent: the result
    expect(answered.choices[0]).toMatchObject({ message: { content: '{"meaning":"a unit of language"}' }, finish_reason: 'stop' })
    const run = (await gql(t.http.url, ADMIN_KEY, OpenAiRunDocument, { id: answered.id.replace('chatcmpl-', '') })).data!.run!
    expect(run.status).toBe('COMPLETED')
    expect(run.toolRounds).toEqual([
      { calls: [{ callId, name: 'lookup', argumentsText: calledWith }], results: [{ callId, output: '{"meaning":"a unit of language"}' }] },
    ])
    expect(answered.usage).toMatchObject({
      prompt_tokens: run.usage!.inputTokens,
      completion_tokens: run.usage!.outputTokens,
      cost: run.cost,
    })
  })

  it('answers tool messages that no waiting run asked for as a new run with them as its history', async () => {
    const completion = await client.chat.completions.create({
      model: 'fake-echo',
      messages: [
        { role: 'user', content: 'what does it mean' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_gone', type: 'function', function: { name: 'lookup', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'call_gone', content: 'a result' },
      ],
    })
    expect(completion.choices[0]!.message.content).toBe('a result')
    const run = (await gql(t.http.url, ADMIN_KEY, OpenAiRunDocument, { id: completion.id.replace('chatcmpl-', '') })).data!.run!
    expect(run.toolRounds).toEqual([])
  })

  it('holds an answer to a json_schema response_format: native on OpenAI, validated where the backend has no such mode', async () => {
    const schema = { type: 'object', properties: { a: { type: 'number' } }, required: ['a'], additionalProperties: false }
    const response_format = { type: 'json_schema' as const, json_schema: { name: 'pair', schema, strict: true } }
    const native = await client.chat.completions.create({
      model: 'oa-plain',
      messages: [{ role: 'user', content: '{"a":1}' }],
      response_format,
    })
    expect(JSON.parse(native.choices[0]!.message.content!)).toEqual({ a: 1 })
    expect(openai.requests.at(-1)!.body.response_format).toMatchObject({ type: 'json_schema', json_schema: { schema } })

    const stream = await client.chat.completions.create({
      model: 'fake-echo',
      messages: [{ role: 'user', content: '{"a":2}' }],
      response_format,
      stream: true,
    })
    const contents = []
    for await (const chunk of stream) if (chunk.choices[0]?.delta.content) contents.push(chunk.choices[0].delta.content)
    expect(contents).toEqual(['{"a":2}'])

    const invalid = await client.chat.completions
      .create({ model: 'fake-echo', messages: [{ role: 'user', content: 'not json' }], response_format })
      .catch((error: unknown) => error)
    expect(invalid).toMatchObject({ status: 500, code: 'validation' })
  })

  it('sends seed to a vendor that takes it, and refuses it for one that does not', async () => {
    await client.chat.completions.create({ model: 'oa-plain', messages: [{ role: 'user', content: 'hi' }], seed: 7 })
    expect(openai.requests.at(-1)!.body.seed).toBe(7)
    const refused = await client.chat.completions
      .create({ model: 'an-plain', messages: [{ role: 'user', content: 'hi' }], seed: 7 })
      .catch((error: unknown) => error)
    expect(refused).toMatchObject({ status: 400, message: expect.stringContaining('Anthropic takes no seed') })
  })

  it("sends a message's image parts to the vendor, and refuses them for a backend that takes none", async () => {
    const content = [
      { type: 'text' as const, text: 'what is this?' },
      { type: 'image_url' as const, image_url: { url: 'https://example.com/cat.png', detail: 'low' as const } },
    ]
    await client.chat.completions.create({ model: 'oa-plain', messages: [{ role: 'user', content }] })
    const sent = openai.requests.at(-1)!.body.messages.at(-1).content
    expect(sent).toEqual(expect.arrayContaining([{ type: 'image_url', image_url: { url: 'https://example.com/cat.png', detail: 'low' } }]))
    const refused = await client.chat.completions
      .create({ model: 'fake-echo', messages: [{ role: 'user', content }] })
      .catch((e: unknown) => e)
    expect(refused).toMatchObject({ status: 400 })
  })

  it.each(['oa-plain', 'an-plain'])('carries a vendor’s streamed tool call through a paused run on %s', async (model) => {
    const vendor = model === 'oa-plain' ? openai : anthropic
    vendor.script(
      { tokens: ['Let me look.'], toolCalls: [{ name: 'lookup', arguments: '{"word":"gravel"}' }] },
      { tokens: ['Small stones.'] },
    )
    const tools = [
      { type: 'function' as const, function: { name: 'lookup', parameters: { type: 'object', properties: { word: { type: 'string' } } } } },
    ]
    const asked = [{ role: 'user' as const, content: 'what is gravel?' }]
    const first = await client.chat.completions.stream({ model, messages: asked, tools }).finalChatCompletion()
    const call = first.choices[0]!.message.tool_calls![0]!
    expect(first.choices[0]).toMatchObject({ finish_reason: 'tool_calls', message: { content: 'Let me look.' } })
    expect(call).toMatchObject({ type: 'function', function: { name: 'lookup', arguments: '{"word":"gravel"}' } })
    const second = await client.chat.completions.create({
      model,
      messages: [...asked, first.choices[0]!.message, { role: 'tool', tool_call_id: call.id, content: 'small stones' }],
      tools,
    })
    expect(second.id).toBe(first.id)
    expect(second.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: 'Small stones.' } })
    const run = (await gql(t.http.url, ADMIN_KEY, OpenAiRunDocument, { id: first.id.replace('chatcmpl-', '') })).data!.run!
    expect(run).toMatchObject({ status: 'COMPLETED', output: 'Small stones.' })
    expect(second.usage).toMatchObject({
      prompt_tokens: run.usage!.inputTokens,
      completion_tokens: run.usage!.outputTokens,
      cost: run.cost,
    })
  })
})
