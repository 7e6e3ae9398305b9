import { print } from 'graphql'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sha256Hex } from '../../src/domain/hash.js'
import {
  AbortRunDocument,
  CreateSessionDocument,
  EnqueuePromptDocument,
  ProfilesDocument,
  RunDocument,
  RunsDocument,
  SessionDocument,
  SessionEventsDocument,
  SessionsDocument,
  UpsertPromptDocument,
} from '../generated/graphql.js'
import { providers } from '../helpers/databases.js'
import { slow, waitForEntry, words } from '../helpers/flow.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

const ACME_ADMIN = 'acme-admin-key-0123456789'
const ACME_READ = 'acme-read-key-0123456789'
const ACME_WRITE = 'acme-write-key-0123456789'
const GLOBEX_ADMIN = 'globex-admin-key-0123456789'

// Keys, tenants and roles: a tenant never sees or touches another's data; a role limits what it may do.
describe.each(providers)('API keys and tenants (%s)', (provider) => {
  let t: TestServer
  beforeAll(async () => {
    t = await startTestServer({
      provider,
      apiKey: ACME_ADMIN,
      app: {
        apiKeys: [
          { sha256: sha256Hex(ACME_ADMIN), tenantId: 'acme', role: 'admin' },
          { sha256: sha256Hex(ACME_READ), tenantId: 'acme', role: 'read' },
          { sha256: sha256Hex(ACME_WRITE), tenantId: 'acme', role: 'write' },
          { sha256: sha256Hex(GLOBEX_ADMIN), tenantId: 'globex', role: 'admin' },
        ],
      },
    })
  })
  afterAll(() => t?.stop({ dropDatabase: true }))

  const http = (authorization?: string) =>
    t.app.yoga.fetch('http://promptline.test/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(authorization && { authorization }) },
      body: JSON.stringify({ query: print(ProfilesDocument) }),
    })

  it("takes an upload only from a key that may write, and keeps the file in that key's tenant", async () => {
    const upload = (authorization?: string) => {
      const form = new FormData()
      form.append('file', new Blob([new Uint8Array([0x89, 0x50, 0x4e, 0x47])], { type: 'image/png' }), 'a.png')
      return t.app.yoga.fetch('http://promptline.test/files', {
        method: 'POST',
        headers: authorization ? { authorization } : {},
        body: form,
      })
    }
    const anonymous = await upload()
    expect(anonymous.status).toBe(401)
    expect((await anonymous.json()).error.code).toBe('UNAUTHENTICATED')
    const read = await upload(`Bearer ${ACME_READ}`)
    expect(read.status).toBe(403)
    expect((await read.json()).error.code).toBe('FORBIDDEN')
    const written = await upload(`Bearer ${ACME_WRITE}`)
    expect(written.status).toBe(201)
    const { fileId } = await written.json()
    expect(await t.app.store.files.find('acme', fileId, new Date())).toMatchObject({ id: fileId, mediaType: 'image/png', bytes: 4 })
    expect(await t.app.store.files.find('globex', fileId, new Date())).toBeNull()
  })

  it('answers HTTP without a valid key with 401 UNAUTHENTICATED, and with one as its tenant', async () => {
    for (const authorization of [undefined, 'Bearer not-a-key-at-all-0000', `Basic ${ACME_ADMIN}`]) {
      const response = await http(authorization)
      expect(response.status).toBe(401)
      const body = await response.json()
      expect(body.errors[0].extensions.code).toBe('UNAUTHENTICATED')
      expect(body.data ?? null).toBeNull()
    }
    const ok = await http(`Bearer ${ACME_READ}`)
    expect(ok.status).toBe(200)
    expect((await ok.json()).data.profiles.length).toBeGreaterThan(0)
  })

  it('closes a graphql-ws socket without a valid key with 4401', async () => {
    for (const key of [undefined, 'wrong-key-0123456789']) {
      const client = key === undefined ? t.clientWith('') : t.clientWith(key)
      const outcome = await t.request(ProfilesDocument, undefined, client).then(
        () => 'answered',
        (error: { code?: number }) => error.code,
      )
      expect(outcome).toBe(4401)
    }
  })

  it('lets a read key query but not mutate, and writes nothing', async () => {
    const reader = t.clientWith(ACME_READ)
    expect((await t.request(SessionsDocument, {}, reader)).data!.sessions.edges).toBeDefined()
    const refused = await t.request(CreateSessionDocument, { input: { id: 'by-reader' } }, reader)
    expect(refused.errors![0]!.extensions!.code).toBe('FORBIDDEN')
    expect((await t.request(SessionDocument, { id: 'by-reader' })).data!.session).toBeNull()
  })

  it('lets a write key run prompts but not change the catalog', async () => {
    const writer = t.clientWith(ACME_WRITE)
    const created = await t.request(CreateSessionDocument, { input: { id: 'by-writer', defaultProfileId: 'fake-echo' } }, writer)
    expect(created.data!.createSession.__typename).toBe('CreateSessionPayload')
    const prompt = { id: 'by-writer', messages: [{ role: 'USER' as const, content: 'x' }] }
    const refused = await t.request(UpsertPromptDocument, { input: prompt }, writer)
    expect(refused.errors![0]!.extensions!.code).toBe('FORBIDDEN')
    expect((await t.request(UpsertPromptDocument, { input: prompt })).data!.upsertPrompt.__typename).toBe('UpsertPromptPayload')
  })

  it("keeps one tenant's sessions, runs, events and prompts from another, answering as if they did not exist", async () => {
    const globex = t.clientWith(GLOBEX_ADMIN)
    await t.request(CreateSessionDocument, { input: { id: 'secret-plans', defaultProfileId: 'fake-echo' } }, globex)
    const enqueued = await t.request(
      EnqueuePromptDocument,
      { input: { sessionId: 'secret-plans', input: `the plan ${words(40)}`, overrides: slow(50) } },
      globex,
    )
    const entry = enqueued.data!.enqueuePrompt.__typename === 'EnqueuePromptPayload' ? enqueued.data!.enqueuePrompt.entry : null
    await t.request(UpsertPromptDocument, { input: { id: 'globex-only', messages: [{ role: 'USER', content: 'x' }] } }, globex)
    const running = await waitForEntry({ ...t, request: (d, v) => t.request(d, v, globex) }, 'secret-plans', entry!.queueId, ['RUNNING'])
    const runId = running.runId!

    // acme, through its own key, sees none of it
    expect((await t.request(SessionDocument, { id: 'secret-plans' })).data!.session).toBeNull()
    expect((await t.request(SessionsDocument, { first: 200 })).data!.sessions.edges.map((e) => e.node.id)).not.toContain('secret-plans')
    expect((await t.request(RunDocument, { id: runId })).data!.run).toBeNull()
    expect((await t.request(RunsDocument, { first: 200 })).data!.runs.edges.map((e) => e.node.id)).not.toContain(runId)
    const abort = await t.request(AbortRunDocument, { runId })
    expect(abort.data!.abortRun).toMatchObject({ __typename: 'NotFoundError', code: 'NOT_FOUND' })
    const intrude = await t.request(EnqueuePromptDocument, { input: { sessionId: 'secret-plans', input: 'mine now' } })
    expect(intrude.data!.enqueuePrompt).toMatchObject({ __typename: 'NotFoundError', code: 'NOT_FOUND' })
    const replay = t.subscribe(SessionEventsDocument, { sessionId: 'secret-plans', afterSequence: 0 })
    await replay.until(() => replay.error !== null || replay.completed)
    expect(JSON.stringify(replay.error ?? replay.results)).toContain('NOT_FOUND')
    expect(JSON.stringify(replay.results)).not.toContain('the plan')
    const prompts = await t.request(UpsertPromptDocument, { input: { id: 'globex-only', messages: [{ role: 'USER', content: 'y' }] } })
    expect(prompts.data!.upsertPrompt).toMatchObject({ prompt: { version: 1 } })

    // and globex's run went on untouched
    const done = await waitForEntry({ ...t, request: (d, v) => t.request(d, v, globex) }, 'secret-plans', entry!.queueId, ['COMPLETED'])
    expect(done.status).toBe('COMPLETED')
  })
})
