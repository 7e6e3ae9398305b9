import type { ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import OpenAI from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sha256Hex } from '../../src/domain/hash.js'
import { OpenAiRunDocument } from '../generated/graphql.js'
import { catalogDir } from '../helpers/catalog-dir.js'
import { createTestDatabase, providers, type TestDatabase } from '../helpers/databases.js'
import { ADMIN_KEY, gql, startWithAdminKey, TENANT } from '../helpers/key-checks.js'
import { killHard, startServerProcess } from '../helpers/process.js'
import type { TestServer } from '../helpers/server.js'

const CATALOG = `
backends:
  - { id: fake, kind: FAKE, prices: { echo: { inputPerMillion: 1, outputPerMillion: 2 } } }
profiles:
  - { id: fake-echo, backendId: fake, model: echo }
  - { id: fake-slow, backendId: fake, model: echo, settings: { extra: { tokenDelayMs: 150 } } }
`

type Event = OpenAI.Responses.ResponseStreamEvent

/** Reads a stream's events; `until` stops early (the rest stays unread). */
async function readEvents(stream: AsyncIterable<Event>, until: (event: Event) => boolean = () => false): Promise<Event[]> {
  const events: Event[] = []
  for await (const event of stream) {
    events.push(event)
    if (until(event)) break
  }
  return events
}

const textOf = (events: Event[]) => events.flatMap((e) => (e.type === 'response.output_text.delta' ? [e.delta] : [])).join('')

// OpenAI's Responses at /v1, driven by the official openai SDK, onto ordinary runs.
describe.each(providers)('Responses through the openai SDK (%s)', (provider) => {
  let t: TestServer
  let client: OpenAI
  const graphqlRun = async (id: string) => (await gql(t.http.url, ADMIN_KEY, OpenAiRunDocument, { id })).data!.run!
  beforeAll(async () => {
    t = await startWithAdminKey(provider, CATALOG)
    client = new OpenAI({ baseURL: `${t.http.url}/v1`, apiKey: ADMIN_KEY, maxRetries: 0 })
  })
  afterAll(async () => {
    await t?.stop({ dropDatabase: true })
  })

  it('answers a response as a run, with the usage and cost the GraphQL API shows', async () => {
    const { data: response, response: http } = await client.responses
      .create({ model: 'fake-echo', instructions: 'Be brief.', input: 'say it back' })
      .withResponse()
    expect(response).toMatchObject({ object: 'response', status: 'completed', output_text: 'say it back' })
    const run = await graphqlRun(http.headers.get('x-promptline-run-id')!)
    expect(run).toMatchObject({ origin: 'OPENAI_RESPONSES', status: 'COMPLETED', output: 'say it back' })
    expect(run.cost).toBeGreaterThan(0)
    expect(response.usage).toMatchObject({
      input_tokens: run.usage!.inputTokens,
      output_tokens: run.usage!.outputTokens,
      total_tokens: run.usage!.inputTokens + run.usage!.outputTokens,
      cost: run.cost,
    })
  })

  it("streams its events numbered from 0, which the SDK's helper assembles into the same response", async () => {
    const stream = client.responses.stream({ model: 'fake-echo', input: 'one two three' })
    const events = await readEvents(stream)
    const final = await stream.finalResponse()
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i))
    // deltas come as the tokens were batched: their number varies, not their place
    const kinds = events.map((e) => e.type).filter((type, i, all) => type !== 'response.output_text.delta' || all[i - 1] !== type)
    expect(kinds).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ])
    expect(final.output_text).toBe('one two three')
    expect(textOf(events)).toBe('one two three')
  })

  it('answers a background response at once, and streams it again from any event on, losing none', async () => {
    const queued = await client.responses.create({ model: 'fake-slow', input: 'a b c d e f', background: true })
    expect(queued.status).toBe('queued')
    const first = await readEvents(
      await client.responses.retrieve(queued.id, { stream: true }),
      (e) => e.type === 'response.output_text.delta',
    )
    const rest = await readEvents(
      await client.responses.retrieve(queued.id, { stream: true, starting_after: first.at(-1)!.sequence_number }),
    )
    const all = [...first, ...rest]
    expect(all.map((e) => e.sequence_number)).toEqual(all.map((_, i) => i))
    expect(textOf(all)).toBe('a b c d e f')
    expect(all.at(-1)!.type).toBe('response.completed')
    expect(await client.responses.retrieve(queued.id)).toMatchObject({ status: 'completed', output_text: 'a b c d e f' })
  })

  it('stops the run of a foreground stream whose client goes away, and not that of a background one', async () => {
    const leave = async (background: boolean) => {
      const controller = new AbortController()
      const stream = await client.responses.create(
        { model: 'fake-slow', input: 'a b c d e f g h i j', stream: true, background },
        { signal: controller.signal },
      )
      let id = ''
      for await (const event of stream) {
        if (event.type === 'response.created') id = event.response.id
        if (event.type === 'response.output_text.delta') break
      }
      controller.abort()
      return (await readEvents(await client.responses.retrieve(id, { stream: true }))).at(-1)!
    }
    expect(await leave(false)).toMatchObject({ type: 'response.failed', response: { status: 'cancelled' } })
    expect(await leave(true)).toMatchObject({ type: 'response.completed', response: { status: 'completed' } })
  })

  it('cancels a background response: its run ends ABORTED', async () => {
    const queued = await client.responses.create({ model: 'fake-slow', input: 'a b c d e f g h i j', background: true })
    // once it is generating, so that there is a run to abort
    await readEvents(await client.responses.retrieve(queued.id, { stream: true }), (e) => e.type === 'response.output_text.delta')
    const cancelled = await client.responses.cancel(queued.id)
    expect(cancelled.status).toBe('cancelled')
    const { response: http } = await client.responses.retrieve(queued.id).withResponse()
    expect((await graphqlRun(http.headers.get('x-promptline-run-id')!)).status).toBe('ABORTED')
    expect((await client.responses.retrieve(queued.id)).status).toBe('cancelled')
  })

  it('continues the session of previous_response_id, and a function_call_output resumes the same run', async () => {
    const tools = [{ type: 'function' as const, name: 'lookup', parameters: { type: 'object', properties: {} }, strict: false }]
    const { data: asked, response: http } = await client.responses
      .create({ model: 'fake-echo', input: 'please lookup a word', tools })
      .withResponse()
    const call = asked.output.find((item) => item.type === 'function_call')
    expect(call).toMatchObject({ type: 'function_call', name: 'lookup' })
    if (call?.type !== 'function_call') throw new Error('no call')
    const answered = await client.responses.create({
      model: 'fake-echo',
      previous_response_id: asked.id,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: 'a unit of language' }],
      tools,
    })
    // the fake echoes the last message it was sent: the result
    expect(answered).toMatchObject({ status: 'completed', output_text: 'a unit of language' })
    const run = await graphqlRun(http.headers.get('x-promptline-run-id')!)
    expect(run.status).toBe('COMPLETED')
    expect(run.toolRounds).toEqual([
      {
        calls: [{ callId: call.call_id, name: 'lookup', argumentsText: call.arguments }],
        results: [{ callId: call.call_id, output: 'a unit of language' }],
      },
    ])
    const inputs = await client.responses.inputItems.list(answered.id, { order: 'asc' })
    expect(inputs.data).toMatchObject([{ type: 'function_call_output', call_id: call.call_id, output: 'a unit of language' }])

    const next = await client.responses.create({ model: 'fake-echo', previous_response_id: answered.id, input: 'and now?' })
    const nextRun = await graphqlRun((await client.responses.retrieve(next.id).withResponse()).response.headers.get('x-promptline-run-id')!)
    expect(nextRun.sessionId).toBe(run.sessionId)
  })

  it('holds an answer to a json_schema text.format to its schema, whole in the stream', async () => {
    const schema = { type: 'object', properties: { a: { type: 'number' } }, required: ['a'], additionalProperties: false }
    const format = { type: 'json_schema' as const, name: 'pair', schema, strict: true }
    const stream = client.responses.stream({ model: 'fake-echo', input: '{"a":3}', text: { format } })
    const events = await readEvents(stream)
    expect(events.filter((e) => e.type === 'response.output_text.delta').map((e) => (e as { delta: string }).delta)).toEqual(['{"a":3}'])
    expect((await stream.finalResponse()).output_text).toBe('{"a":3}')
    const invalid = await client.responses.create({ model: 'fake-echo', input: 'not json', text: { format } })
    expect(invalid).toMatchObject({ status: 'failed', error: { code: 'validation' } })
  })

  it('answers a stateless call that sets store: false and include', async () => {
    const response = await client.responses.create({
      model: 'fake-echo',
      input: 'stateless',
      store: false,
      include: ['reasoning.encrypted_content'],
    })
    expect(response).toMatchObject({ status: 'completed', output_text: 'stateless' })
  })

  it('refuses what it cannot honour with 400 and the parameter, and an unknown response with 404', async () => {
    const refused = (body: Record<string, unknown>) =>
      client.responses.create({ model: 'fake-echo', input: 'x', ...body } as never).then(
        () => null,
        (error: unknown) => error,
      )
    expect(await refused({ tools: [{ type: 'web_search' }] })).toMatchObject({
      status: 400,
      code: 'unsupported_parameter',
      param: 'tools.0',
    })
    expect(await refused({ previous_response_id: 'resp_x', conversation: 'c' })).toMatchObject({ status: 400, param: 'conversation' })
    expect(await client.responses.retrieve('resp_nothing-here').catch((error: unknown) => error)).toBeInstanceOf(OpenAI.NotFoundError)
  })
})

const cluster = process.env.DATABASE_URL && process.env.REDIS_URL

// A background response admitted on one real server process, read on another.
describe.skipIf(!cluster)('a background response across two instances', () => {
  let database: TestDatabase
  const children: ChildProcess[] = []
  let clients: OpenAI[]
  beforeAll(async () => {
    database = await createTestDatabase('postgresql')
    const env = {
      REDIS_URL: process.env.REDIS_URL!,
      PROMPTLINE_REDIS_PREFIX: `test-${randomBytes(6).toString('hex')}:`,
      PROMPTLINE_API_KEYS: `sha256:${sha256Hex(ADMIN_KEY)}:${TENANT}:admin`,
      PROMPTLINE_CATALOG: catalogDir({ 'catalog.yaml': CATALOG }),
    }
    const started = [await startServerProcess(database.url, env), await startServerProcess(database.url, env)]
    children.push(...started.map((s) => s.child))
    clients = started.map((s) => new OpenAI({ baseURL: `${s.url}/v1`, apiKey: ADMIN_KEY, maxRetries: 0 }))
  }, 60_000)
  afterAll(async () => {
    for (const child of children) await killHard(child)
    await database?.drop()
  })

  it('streams on the second instance from where a reader of the first stopped, losing none', async () => {
    const [first, second] = clients as [OpenAI, OpenAI]
    const queued = await first.responses.create({ model: 'fake-slow', input: 'a b c d e f', background: true })
    const head = await readEvents(
      await first.responses.retrieve(queued.id, { stream: true }),
      (e) => e.type === 'response.output_text.delta',
    )
    const rest = await readEvents(
      await second.responses.retrieve(queued.id, { stream: true, starting_after: head.at(-1)!.sequence_number }),
    )
    const all = [...head, ...rest]
    expect(all.map((e) => e.sequence_number)).toEqual(all.map((_, i) => i))
    expect(textOf(all)).toBe('a b c d e f')
    expect(await second.responses.retrieve(queued.id)).toMatchObject({ status: 'completed', output_text: 'a b c d e f' })
  })
})
