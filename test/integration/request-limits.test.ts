import { Agent, request as httpRequest } from 'node:http'
import { getIntrospectionQuery, parse } from 'graphql'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { sha256Hex } from '../../src/domain/hash.js'
import { CreateSessionDocument, SessionEventsDocument, SessionsDocument } from '../generated/graphql.js'
import { BACKENDS_YAML, catalogDir } from '../helpers/catalog-dir.js'
import { createSession, enqueue } from '../helpers/flow.js'
import { startTestServer, type TestServer } from '../helpers/server.js'
import { collect, wsClient } from '../helpers/ws-client.js'

// One request must not be able to hold the server: each limit answers with its code, at once.
describe('request limits', () => {
  let t: TestServer
  let closed: TestServer
  let wsLimited: TestServer
  beforeAll(async () => {
    wsLimited = await startTestServer({ provider: 'sqlite', app: { requestLimits: { publicSchema: false, maxDepth: 5, maxCost: 1000 } } })
    t = await startTestServer({ provider: 'sqlite' })
    closed = await startTestServer({ provider: 'sqlite', app: { requestLimits: { publicSchema: false, maxDepth: 5, maxCost: 100 } } })
  })
  afterAll(async () => {
    await t?.stop({ dropDatabase: true })
    await closed?.stop({ dropDatabase: true })
    await wsLimited?.stop({ dropDatabase: true })
  })

  const post = (server: TestServer, body: string, headers: Record<string, string> = {}) =>
    fetch(`${server.http.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body })
  const query = async (server: TestServer, source: string) => (await post(server, JSON.stringify({ query: source }))).json()
  const codeOf = (body: { errors?: { extensions?: { code?: string } }[] }) => body.errors?.[0]?.extensions?.code

  it.each([
    [
      '1 000 aliases of runs(first: 200)',
      `{ ${Array.from({ length: 1000 }, (_, i) => `a${i}: runs(first: 200) { edges { node { id settings } } }`).join(' ')} }`,
    ],
    ['inline fragments nested 10 000 deep', `{ ${'... on Query { '.repeat(10_000)}backends { id }${' }'.repeat(10_000)} }`],
    ['a list literal nested 10 000 deep', `{ prompt(id: ${'['.repeat(10_000)}"x"${']'.repeat(10_000)}) { id } }`],
  ])('refuses %s with QUERY_TOO_COMPLEX, not INTERNAL', async (_name, source) => {
    const started = performance.now()
    const body = await query(t, source)
    expect(codeOf(body)).toBe('QUERY_TOO_COMPLEX')
    expect(body.errors[0].message).not.toMatch(/Unexpected error/)
    expect(performance.now() - started).toBeLessThan(5_000)
    expect((await fetch(`${t.http.url}/healthz`)).status).toBe(200)
  })

  it.each([
    [
      'selections nested past the depth limit',
      '{ sessions { edges { node { queue { run { alternatives { profileId } } } } } } }',
      /depth/i,
    ],
    [
      'a document over the cost limit',
      `{ ${Array.from({ length: 8 }, (_, i) => `s${i}: sessions { edges { node { id title } } }`).join(' ')} }`,
      /cost/i,
    ],
  ])('refuses %s (limits lowered by configuration)', async (_name, source, message) => {
    const body = await query(closed, source)
    expect(codeOf(body)).toBe('QUERY_TOO_COMPLEX')
    expect(body.errors[0].message).toMatch(message)
    expect(codeOf(await query(closed, '{ sessions { edges { node { id } } } }'))).toBeUndefined()
  })

  it('limits each key to its rate of mutations with RATE_LIMITED, leaving other keys and reads alone', async () => {
    const keys = ['rate-key-a-0123456789', 'rate-key-b-0123456789']
    const limited = await startTestServer({
      provider: 'sqlite',
      apiKey: keys[0],
      app: {
        requestLimits: { mutationsPerSecond: 5 },
        apiKeys: keys.map((key) => ({ sha256: sha256Hex(key), tenantId: 'acme', role: 'write' as const })),
      },
    })
    try {
      const create = (id: string, client = limited.client) =>
        limited
          .request(CreateSessionDocument, { input: { id } }, client)
          .then((r) => r.errors?.[0]?.extensions ?? r.data!.createSession.__typename)
      const burst = await Promise.all(Array.from({ length: 10 }, (_, i) => create(`burst-${i}`)))
      expect(burst.filter((r) => r === 'CreateSessionPayload')).toHaveLength(5)
      const refused = burst.filter((r) => typeof r === 'object')
      expect(refused).toEqual(Array(5).fill({ code: 'RATE_LIMITED', limit: 'mutationsPerSecond', retryAfterMs: expect.any(Number) }))
      for (const { retryAfterMs } of refused as { retryAfterMs: number }[]) expect(retryAfterMs).toBeGreaterThan(0)
      for (const { retryAfterMs } of refused as { retryAfterMs: number }[]) expect(retryAfterMs).toBeLessThanOrEqual(1_000)
      expect(await create('other-key', limited.clientWith(keys[1]!))).toBe('CreateSessionPayload')
      expect((await limited.request(SessionsDocument, { first: 50 })).data!.sessions.edges).toHaveLength(6)
    } finally {
      await limited.stop({ dropDatabase: true })
    }
  })

  it('counts every mutation an operation sends, across fields and fragments, and refuses the whole operation past the rate', async () => {
    const limited = await startTestServer({ provider: 'sqlite', app: { requestLimits: { mutationsPerSecond: 5 } } })
    try {
      const send = async (source: string) => {
        const result = await limited.request(parse(source) as never, {})
        return result.errors?.[0]?.extensions?.code ?? 'OK'
      }
      const create = (alias: string, id: string) => `${alias}: createSession(input: { id: "${id}" }) { __typename }`
      // three mutations, one of them through an inline fragment: within the rate
      expect(await send(`mutation { ${create('a', 'c-1')} ${create('b', 'c-2')} ... on Mutation { ${create('c', 'c-3')} } }`)).toBe('OK')
      // three more (another field among them) make six: none of them runs
      expect(await send(`mutation { d: deleteSession(id: "c-1") { __typename } ${create('e', 'c-4')} ${create('f', 'c-5')} }`)).toBe(
        'RATE_LIMITED',
      )
      // a read is never counted
      expect(await send('{ backends { id } }')).toBe('OK')
      const ids = (await limited.request(SessionsDocument, { first: 50 })).data!.sessions.edges.map((e) => e.node.id)
      expect(ids.sort()).toEqual(['c-1', 'c-2', 'c-3'])
    } finally {
      await limited.stop({ dropDatabase: true })
    }
  })

  it('answers OpenAI API requests past its slots 503 with Retry-After at once, and frees a slot when a stream ends', async () => {
    const catalog = catalogDir({
      'catalog.yaml': `${BACKENDS_YAML}profiles:\n  - { id: slow, backendId: fake, model: echo, settings: { extra: { tokenDelayMs: 50 } } }\n`,
    })
    const capped = await startTestServer({ provider: 'sqlite', app: { catalogDir: catalog, requestLimits: { apiRequestsInFlight: 1 } } })
    const complete = (stream: boolean) =>
      fetch(`${capped.http.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'slow', messages: [{ role: 'user', content: 'one two three four' }], stream }),
      })
    try {
      const streaming = await complete(true)
      expect(streaming.status).toBe(200)
      const refused = await complete(false)
      expect(refused.status).toBe(503)
      expect(refused.headers.get('retry-after')).toBe('1')
      const { error } = (await refused.json()) as { error: { type: string; message: string } }
      expect(error.type).toBe('server_error')
      expect(error.message).toContain('PROMPTLINE_MAX_API_IN_FLIGHT')
      // a refusal keeps its connection open: the client's next request goes on the same socket
      const agent = new Agent({ keepAlive: true, maxSockets: 1 })
      const onOneSocket = () =>
        new Promise<{ status: number; reused: boolean }>((resolve, reject) => {
          const sent = httpRequest(`${capped.http.url}/v1/models`, { method: 'POST', agent }, (answer) => {
            answer.resume().on('end', () => resolve({ status: answer.statusCode!, reused: sent.reusedSocket }))
          })
          sent.on('error', reject).end(JSON.stringify({ model: 'slow', messages: [] }))
        })
      expect(await onOneSocket()).toEqual({ status: 503, reused: false })
      expect(await onOneSocket()).toEqual({ status: 503, reused: true })
      agent.destroy()
      expect(await streaming.text()).toContain('data: [DONE]')
      // the slot came back once the stream's answer was sent whole
      const after = await complete(false)
      expect(after.status).toBe(200)
    } finally {
      await capped.stop({ dropDatabase: true })
    }
  })

  it('caps the subscriptions one key holds open, and frees a place when one ends', async () => {
    const capped = await startTestServer({ provider: 'sqlite', app: { requestLimits: { subscriptionsPerKey: 2 } } })
    try {
      const s = await createSession(capped, 'watched')
      await enqueue(capped, { sessionId: s, input: 'replayed' })
      // a subscription from the start replays the stream: its first event says it is open
      const subscribe = async () => {
        const subscription = capped.subscribe(SessionEventsDocument, { sessionId: s, afterSequence: 0 })
        await subscription.until(() => subscription.results.length > 0 || subscription.error !== null || subscription.completed)
        return subscription
      }
      const open = [await subscribe(), await subscribe()]
      expect(open.map((o) => o.results[0]!.errors)).toEqual([undefined, undefined])
      const third = await subscribe()
      expect(third.results[0]?.errors?.[0]?.extensions?.code).toBe('RATE_LIMITED')
      open[0]!.unsubscribe()
      // the place is free once the server has handled the unsubscribe: until then a new one is refused
      let fourth = await subscribe()
      for (let attempt = 0; fourth.results[0]?.errors && attempt < 100; attempt++) fourth = await subscribe()
      expect(fourth.results[0]!.errors).toBeUndefined()
    } finally {
      await capped.stop({ dropDatabase: true })
    }
  })

  it('answers the introspection query GraphiQL and codegen send', async () => {
    const body = await query(t, getIntrospectionQuery())
    expect(body.errors).toBeUndefined()
    expect(body.data.__schema.queryType.name).toBe('Query')
  })

  it('refuses a body over the limit with 413 before reading it', async () => {
    const response = await post(t, JSON.stringify({ query: '{ backends { id } }', variables: { pad: 'x'.repeat(3 * 1024 * 1024) } }))
    expect(response.status).toBe(413)
    expect(codeOf(await response.json())).toBe('QUERY_TOO_COMPLEX')
  })

  const chunked = (text: string) =>
    fetch(`${t.http.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: new ReadableStream({
        start(controller) {
          // in pieces, with no declared length: sent chunked
          for (let at = 0; at < text.length; at += 64 * 1024) controller.enqueue(new TextEncoder().encode(text.slice(at, at + 64 * 1024)))
          controller.close()
        },
      }),
      duplex: 'half',
    } as RequestInit)

  it('answers a chunked body (no declared length) under the limit', async () => {
    const response = await chunked(JSON.stringify({ query: '{ backends { id } }', variables: { pad: 'x'.repeat(1024 * 1024) } }))
    expect(response.status).toBe(200)
    expect((await response.json()).data.backends.length).toBeGreaterThan(0)
  })

  it('refuses a chunked body with 413 once it crosses the limit', async () => {
    const response = await chunked(JSON.stringify({ query: '{ backends { id } }', variables: { pad: 'x'.repeat(3 * 1024 * 1024) } }))
    expect(response.status).toBe(413)
    expect(codeOf(await response.json())).toBe('QUERY_TOO_COMPLEX')
  })

  it('answers a subscription that does not parse, or is empty, with an error message and keeps the socket open', async () => {
    const client = wsClient(t.http.url)
    const closes: number[] = []
    client.on('closed', (event) => closes.push((event as { code: number }).code))
    try {
      for (const source of ['subscription { sessionEvents(sessionId: "s"', '']) {
        const errors = await new Promise<readonly { message: string; extensions?: { code?: string } }[]>((resolve, reject) =>
          client.subscribe(
            { query: source },
            { next: () => {}, error: (e) => resolve(e as never), complete: () => reject(new Error('completed')) },
          ),
        )
        expect(errors[0]!.extensions?.code).toBe('INVALID_REQUEST')
        expect(errors[0]!.message).toMatch(/Syntax Error/)
      }
      // the same socket still serves
      const [result] = await collect(client, parse('{ backends { id } }') as never)
      expect((result!.data as { backends: unknown[] }).backends.length).toBeGreaterThan(0)
      expect(closes).toEqual([])
    } finally {
      await client.dispose()
    }
  })

  // on a server whose depth and cost limits are lowered, and whose schema is not public
  it.each([
    [
      'past the token limit',
      `subscription { ${Array.from({ length: 1000 }, (_, i) => `a${i}: sessionEvents(sessionId: "s") { sequence }`).join(' ')} }`,
      'QUERY_TOO_COMPLEX',
    ],
    [
      'nested past the depth limit',
      'subscription { sessionEvents(sessionId: "s") { ... on TokenDeltaEvent { run { session { queue { run { id } } } } } } }',
      'QUERY_TOO_COMPLEX',
    ],
    [
      'over the cost limit',
      `query { ${Array.from({ length: 100 }, (_, i) => `s${i}: sessions { edges { node { id title } } }`).join(' ')} }`,
      'QUERY_TOO_COMPLEX',
    ],
    ['that introspects the schema', '{ __schema { types { name } } }', 'INVALID_REQUEST'],
    ['naming a field that does not exist', 'subscription { sessionEvents(sessionId: "s") { nothingHere } }', 'INVALID_REQUEST'],
  ])(
    'answers an operation %s with an error for its id over graphql-ws; the socket and its other subscriptions go on',
    async (_name, source, code) => {
      const client = wsClient(wsLimited.http.url)
      const closes: number[] = []
      client.on('closed', (event) => closes.push((event as { code: number }).code))
      try {
        const sessionId = await createSession(wsLimited, `ws-refused-${_name.replaceAll(' ', '-')}`)
        const live = client.iterate({
          query: 'subscription ($id: ID!) { sessionEvents(sessionId: $id) { sequence } }',
          variables: { id: sessionId },
        })
        const errors = await new Promise<readonly { extensions?: { code?: string } }[]>((resolve, reject) =>
          client.subscribe(
            { query: source },
            {
              next: () => reject(new Error('answered')),
              error: (e) => resolve(e as never),
              complete: () => reject(new Error('completed')),
            },
          ),
        )
        expect(errors[0]!.extensions?.code).toBe(code)
        // the subscription opened before it still delivers on the same socket
        await enqueue(wsLimited, { sessionId, input: 'still here', profileId: 'fake-echo' })
        expect((await live.next()).done).toBe(false)
        await live.return?.()
        expect(closes).toEqual([])
      } finally {
        await client.dispose()
      }
    },
  )

  it('closes a WebSocket that sends a message over the limit', async () => {
    const socket = new WebSocket(`${t.http.url.replace('http', 'ws')}/graphql`, 'graphql-transport-ws')
    await new Promise((resolve) => socket.once('open', resolve))
    const code = new Promise<number>((resolve) => socket.once('close', resolve))
    socket.send(JSON.stringify({ type: 'connection_init', payload: { pad: 'x'.repeat(3 * 1024 * 1024) } }))
    expect(await code).toBe(1009)
  })

  it('refuses a GET operation without a header a browser could not send unasked (CSRF)', async () => {
    const url = `${t.http.url}/graphql?query=${encodeURIComponent('{ backends { id } }')}`
    expect((await fetch(url, { headers: { accept: 'application/json' } })).status).toBe(403)
    expect((await fetch(url, { headers: { accept: 'application/json', 'x-graphql-yoga-csrf': '1' } })).status).toBe(200)
  })

  it('hides the schema when it is not public: no introspection, no GraphiQL, no field suggestions', async () => {
    expect(codeOf(await query(closed, getIntrospectionQuery()))).toBe('INVALID_REQUEST')
    const page = await fetch(`${closed.http.url}/graphql`, { headers: { accept: 'text/html' } })
    expect(await page.text()).not.toContain('GraphiQL')
    const typo = await query(closed, '{ backend { id } }')
    expect(JSON.stringify(typo)).not.toContain('Did you mean')
    expect(JSON.stringify(await query(t, '{ backend { id } }'))).toContain('Did you mean')
  })
})
