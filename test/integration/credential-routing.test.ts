import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FakeVendorServer } from '../fixtures/fake-vendor.js'
import { EnqueuePromptDocument, ProfilesDocument, UpsertProfileDocument } from '../generated/graphql.js'
import { catalogDir } from '../helpers/catalog-dir.js'
import { providers } from '../helpers/databases.js'
import { createSession } from '../helpers/flow.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

const OA_KEY = 'sk-routing-secret-0123456789'
const SERVER_SECRET = 'unrelated-server-secret-value'
const TEAM_KEY = 'sk-team-key-allowed-98765'

// A client must never be able to make the server send a key it holds, or any variable it can
// read, to a host of the client's choosing.
describe.each(providers)('credential routing (%s)', (provider) => {
  let vendor: FakeVendorServer
  let listener: FakeVendorServer
  let t: TestServer
  beforeAll(async () => {
    vendor = await FakeVendorServer.start('openai')
    listener = await FakeVendorServer.start('openai')
    const catalog = catalogDir({
      'catalog.yaml': `
backends:
  - { id: fake, kind: FAKE }
  - { id: oa, kind: OPENAI, baseUrl: "${vendor.baseUrl}", credentialEnv: OA_KEY, endpoints: ["${listener.baseUrl}"] }
profiles:
  - { id: fake-echo, backendId: fake, model: echo }
  - { id: oa-plain, backendId: oa, model: gpt-test }
`,
    })
    t = await startTestServer({
      provider,
      app: { catalogDir: catalog, credentialEnvAllowlist: ['TEAM_KEY'] },
      secrets: { OA_KEY, SERVER_SECRET, TEAM_KEY },
    })
  })
  afterAll(async () => {
    await t?.stop({ dropDatabase: true })
    await vendor?.close()
    await listener?.close()
  })

  const upsert = (input: Record<string, unknown>) =>
    t.request(UpsertProfileDocument, { input: { id: 'mine', backendId: 'oa', model: 'gpt-test', ...input } as never })
  const profileIds = async () => (await t.request(ProfilesDocument)).data!.profiles.map((p) => p.id)

  it('refuses a profile endpoint the backend does not list, and saves nothing', async () => {
    const { data } = await upsert({ endpoint: 'http://127.0.0.1:9/collect' })
    expect(data!.upsertProfile).toMatchObject({ __typename: 'InvalidRequestError', field: 'input.endpoint' })
    expect(await profileIds()).not.toContain('mine')
  })

  it('refuses a profile that names a server variable the operator did not allow', async () => {
    const { data } = await upsert({ credentialEnv: 'SERVER_SECRET' })
    expect(data!.upsertProfile).toMatchObject({ __typename: 'InvalidRequestError', field: 'input.credentialEnv' })
    expect(await profileIds()).not.toContain('mine')
  })

  it('refuses a request that names a server variable the operator did not allow', async () => {
    const s = await createSession(t, 'request-env')
    const { data } = await t.request(EnqueuePromptDocument, {
      input: { sessionId: s, input: 'x', profileId: 'oa-plain', credentialEnv: 'SERVER_SECRET' },
    })
    expect(data!.enqueuePrompt).toMatchObject({ __typename: 'InvalidRequestError', field: 'credentialEnv' })
  })

  it("sends nothing with the backend's key to an allowed endpoint of another host", async () => {
    const saved = await upsert({ id: 'elsewhere', endpoint: listener.baseUrl })
    expect(saved.data!.upsertProfile.__typename).toBe('UpsertProfilePayload')
    const s = await createSession(t, 'elsewhere')
    const { data } = await t.request(EnqueuePromptDocument, { input: { sessionId: s, input: 'x', profileId: 'elsewhere' } })
    expect(data!.enqueuePrompt).toMatchObject({ __typename: 'CredentialsError', code: 'CREDENTIALS' })
    expect(listener.requests).toEqual([])
  })

  it('takes a key from a variable the operator allowed server-wide', async () => {
    const saved = await upsert({ id: 'team', credentialEnv: 'TEAM_KEY' })
    expect(saved.data!.upsertProfile.__typename).toBe('UpsertProfilePayload')
    const s = await createSession(t, 'team')
    const { data } = await t.request(EnqueuePromptDocument, { input: { sessionId: s, input: 'hello', profileId: 'team' } })
    expect(data!.enqueuePrompt.__typename).toBe('EnqueuePromptPayload')
    await expect.poll(() => vendor.requests.at(-1)?.apiKey).toBe(TEAM_KEY)
    expect(listener.requests.map((r) => r.apiKey)).not.toContain(OA_KEY)
  })
})
