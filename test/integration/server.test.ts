import { readFileSync } from 'node:fs'
import { Agent, get } from 'node:http'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLogger } from '../../src/domain/logger.js'
import { type App, createApp } from '../../src/server/app.js'
import { type HttpServer, startHttpServer } from '../../src/server/http.js'
import { InspectProfileDocument, PreparePromptDocument, ProfilesDocument } from '../generated/graphql.js'
import { DEFAULT_CATALOG } from '../helpers/app.js'
import { catalogDir } from '../helpers/catalog-dir.js'
import { createTestDatabase, type TestDatabase } from '../helpers/databases.js'
import { collect, wsClient } from '../helpers/ws-client.js'

const DIRECT_KEY = 'sk-direct-0123456789abcdef'
const ENV_KEY = 'sk-env-fedcba9876543210'

describe('the listening server', () => {
  let database: TestDatabase
  let app: App
  let http: HttpServer
  const logLines: string[] = []

  beforeAll(async () => {
    // the shipped catalog plus a profile with a direct key written in its file
    const dir = catalogDir({
      'backends.yaml': readFileSync(path.join(DEFAULT_CATALOG, 'backends.yaml'), 'utf8'),
      'profiles.yaml': `${readFileSync(path.join(DEFAULT_CATALOG, 'profiles.yaml'), 'utf8')}
  - id: keyed
    backendId: openai
    model: gpt-4o-mini
    apiKey: ${DIRECT_KEY}
    settings: { extra: { api_key: ${DIRECT_KEY} } }
`,
      'prompts.yaml': readFileSync(path.join(DEFAULT_CATALOG, 'prompts.yaml'), 'utf8'),
    })
    database = await createTestDatabase('sqlite')
    const env: Record<string, string> = { OPENAI_API_KEY: ENV_KEY }
    app = await createApp(
      { databaseUrl: database.url, catalogDir: dir },
      (name) => env[name],
      createLogger('debug', (line) => logLines.push(line)),
    )
    http = await startHttpServer(app, '127.0.0.1', 0)
  })
  afterAll(async () => {
    await http?.stop()
    await app?.close()
    await database?.drop()
  })

  it("keeps an idle connection open past Node's 5 s default: a request 7 s later goes on the same socket", async () => {
    // one pooled connection, as the openai SDK and fetch keep them
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    const health = () =>
      new Promise<{ status: number; reused: boolean }>((resolve, reject) => {
        const request = get(`${http.url}/healthz`, { agent }, (response) => {
          response.resume()
          response.on('end', () => resolve({ status: response.statusCode!, reused: request.reusedSocket }))
        })
        request.on('error', reject)
      })
    try {
      expect(await health()).toEqual({ status: 200, reused: false })
      // the connection idles past the point where Node's default (5 s, and its 1 s of slack) closes it
      await new Promise((resolve) => setTimeout(resolve, 7000))
      expect(await health()).toEqual({ status: 200, reused: true })
    } finally {
      agent.destroy()
    }
  }, 20_000)

  it('answers GraphQL over graphql-ws on the same /graphql path', async () => {
    const client = wsClient(http.url)
    try {
      const [result] = await collect(client, PreparePromptDocument, { input: { promptId: 'chat', variables: { input: 'over ws' } } })
      expect(result!.data!.preparePrompt.messages.at(-1)).toEqual({ role: 'USER', content: 'over ws' })
      const [failed] = await collect(client, PreparePromptDocument, { input: { promptId: 'nope' } })
      expect(failed!.errors?.[0]?.extensions?.code).toBe('NOT_FOUND')
    } finally {
      await client.dispose()
    }
  })

  it('serves a self-contained GraphiQL to a browser and /healthz to a probe', async () => {
    const page = await fetch(`${http.url}/graphql`, { headers: { accept: 'text/html' } })
    expect(page.status).toBe(200)
    const html = await page.text()
    expect(html).toContain('renderYogaGraphiQL')
    // every script, style, worker and icon is inline: nothing the page loads names another host
    const loaded =
      /(?:\b(?:src|href)\s*=\s*["'`]?|\burl\(\s*["']?|\b(?:import|importScripts|fetch)\(\s*["'`])((?:https?:|wss?:)?\/\/[^/"'`)\s>]+)/g
    expect([...html.matchAll(loaded)].map((m) => m[1])).toEqual([])
    const health = await fetch(`${http.url}/healthz`)
    expect(health.status).toBe(200)
  })

  it("answers every request with its x-request-id: the caller's, or a new one", async () => {
    const ask = (headers: Record<string, string>) =>
      fetch(`${http.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ query: '{ backends { id } }' }),
      })
    expect((await ask({ 'x-request-id': 'trace-42' })).headers.get('x-request-id')).toBe('trace-42')
    expect((await ask({ 'x-request-id': 'not a token\n' })).headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
    expect((await ask({})).headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
  })

  it('logs an unexpected error once, at error, with its request id; a client mistake is no error line', async () => {
    const list = app.store.runs.list
    app.store.runs.list = async () => {
      throw new Error('the disk caught fire')
    }
    try {
      const response = await fetch(`${http.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-request-id': 'fire-1' },
        body: JSON.stringify({ query: '{ runs { edges { node { id } } } }' }),
      })
      expect((await response.json()).errors[0]).toMatchObject({ message: 'Unexpected error.', extensions: { code: 'INTERNAL' } })
    } finally {
      app.store.runs.list = list
    }
    await fetch(`${http.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ preparePrompt(input: { promptId: "chat" }) { renderedHash } }' }),
    })
    const errors = logLines.map((line) => JSON.parse(line)).filter((entry) => entry.level === 'error')
    expect(errors).toEqual([
      expect.objectContaining({ message: 'unexpected error', requestId: 'fire-1', tenantId: 'local', error: 'the disk caught fire' }),
    ])
  })

  it('never shows a key in a response or a log line', async () => {
    const bodies: string[] = []
    const post = async (query: string, variables: unknown) => {
      const response = await fetch(`${http.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query, variables }),
      })
      bodies.push(await response.text())
    }
    const { print } = await import('graphql')
    await post(print(ProfilesDocument), {})
    await post(print(InspectProfileDocument), { id: 'keyed' })
    await post(print(InspectProfileDocument), { id: 'openai-default' })
    await post(print(PreparePromptDocument), { input: { promptId: 'chat', profileId: 'keyed', variables: { input: 'x' } } })
    await post(print(PreparePromptDocument), { input: { promptId: 'chat', profileId: 'openai-default', variables: { input: 'x' } } })
    const everything = [...bodies, ...logLines].join('\n')
    expect(bodies.join('\n')).toContain('"source":"DIRECT"')
    expect(bodies.join('\n')).toContain('"api_key":"***"')
    expect(everything).not.toContain(DIRECT_KEY)
    expect(everything).not.toContain(ENV_KEY)
  })

  it('stops cleanly with a client still connected', async () => {
    const client = wsClient(http.url)
    await collect(client, ProfilesDocument)
    const stopping = http.stop()
    await expect(stopping).resolves.toBeUndefined()
    await client.dispose()
  })
})
