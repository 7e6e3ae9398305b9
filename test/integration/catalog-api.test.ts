import { print } from 'graphql'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  BackendsDocument,
  DeleteProfileDocument,
  DeletePromptDocument,
  InspectProfileDocument,
  InspectPromptDocument,
  PreparePromptDocument,
  ProfilesDocument,
  PromptDocument,
  PromptsDocument,
  UpsertProfileDocument,
  UpsertPromptDocument,
} from '../generated/graphql.js'
import { createTestApp, type TestApp } from '../helpers/app.js'
import { providers } from '../helpers/databases.js'

describe.each(providers)('catalog and preparation over GraphQL (%s)', (provider) => {
  let t: TestApp
  beforeAll(async () => {
    t = await createTestApp({ provider })
  })
  afterAll(() => t?.close())

  const promptCount = async () => (await t.execute(PromptsDocument, { first: 200 })).data!.prompts.edges.length

  it('prepares the shipped chat prompt with fake-echo: two messages, both hashes, effective settings', async () => {
    const { data, errors } = await t.execute(PreparePromptDocument, { input: { promptId: 'chat', variables: { input: 'hi' } } })
    expect(errors).toBeUndefined()
    const prepared = data!.preparePrompt
    expect(prepared.messages).toEqual([
      { role: 'SYSTEM', content: 'You are a helpful assistant.' },
      { role: 'USER', content: 'hi' },
    ])
    expect(prepared.definitionHash).toMatch(/^[0-9a-f]{64}$/)
    expect(prepared.renderedHash).toMatch(/^[0-9a-f]{64}$/)
    expect(prepared).toMatchObject({ promptId: 'chat', promptVersion: 1, profileId: 'fake-echo', backendId: 'fake', model: 'echo' })
    expect(prepared.settings).toEqual({
      temperature: null,
      maxTokens: 1024,
      topP: null,
      seed: null,
      stop: null,
      reasoningEffort: null,
      extra: {},
      promptCache: { mode: 'OFF', ttl: 'FIVE_MINUTES', key: 'SESSION' },
      firstTokenTimeoutMs: null,
      streamIdleTimeoutMs: null,
    })
    expect(prepared.credential).toEqual({ source: 'NONE', name: null, available: true })
  })

  it.each([
    ['an unknown prompt', { promptId: 'nope', variables: {} }, 'NOT_FOUND'],
    ['a bad id', { promptId: 'not/an id', variables: {} }, 'INVALID_REQUEST'],
    ['variables that are not an object', { promptId: 'chat', variables: 'hi' }, 'INVALID_REQUEST'],
    ['a negative maxTokens', { promptId: 'chat', variables: { input: 'x' }, overrides: { maxTokens: -5 } }, 'INVALID_REQUEST'],
    ['a missing variable', { promptId: 'chat', variables: {} }, 'RENDER'],
    ['a profile without its key', { promptId: 'chat', profileId: 'openai-default', variables: { input: 'x' } }, 'CREDENTIALS'],
  ])('answers %s with a typed error code', async (_name, input, code) => {
    const { data, errors } = await t.execute(PreparePromptDocument, { input })
    expect(data).toBeNull()
    expect(errors?.[0]?.extensions?.code).toBe(code)
  })

  it('answers a wrongly typed variable with INVALID_REQUEST', async () => {
    const { errors } = await t.execute(PreparePromptDocument, {
      input: { promptId: 'chat', overrides: { maxTokens: 'many' as unknown as number } },
    })
    expect(errors?.[0]?.extensions?.code).toBe('INVALID_REQUEST')
  })

  it('answers a document that does not validate with INVALID_REQUEST', async () => {
    const response = await t.app.yoga.fetch('http://promptline.test/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ prompts { nope } }' }),
    })
    const body = await response.json()
    expect(body.errors[0].extensions.code).toBe('INVALID_REQUEST')
    expect(body.errors[0].message).toContain('nope')
  })

  it('pages prompts forward with cursors', async () => {
    const first = await t.execute(PromptsDocument, { first: 1 })
    expect(first.data!.prompts.edges.map((e) => e.node.id)).toEqual(['chat'])
    expect(first.data!.prompts.pageInfo.hasNextPage).toBe(true)
    const second = await t.execute(PromptsDocument, { first: 1, after: first.data!.prompts.pageInfo.endCursor })
    expect(second.data!.prompts.edges.map((e) => e.node.id)).toEqual(['extract-json'])
    expect(second.data!.prompts.pageInfo.hasNextPage).toBe(false)
  })

  it('inspects a prompt: canonical definition, hash and variables', async () => {
    const { data } = await t.execute(InspectPromptDocument, { id: 'extract-json' })
    expect(data!.inspectPrompt).toMatchObject({ id: 'extract-json', version: 1, variables: ['text'] })
    expect((data!.inspectPrompt.definition as { output: { kind: string } }).output.kind).toBe('JSON_SCHEMA')
    const missing = await t.execute(InspectPromptDocument, { id: 'nope' })
    expect(missing.errors?.[0]?.extensions?.code).toBe('NOT_FOUND')
  })

  it('creates a prompt, bumps its version only when the definition changes, and deletes it', async () => {
    const input = {
      id: 'greet',
      description: 'v1',
      messages: [{ role: 'USER' as const, content: 'Hello {{name}}' }],
      defaultProfileId: 'fake-echo',
    }
    const created = await t.execute(UpsertPromptDocument, { input })
    expect(created.data!.upsertPrompt).toMatchObject({
      __typename: 'UpsertPromptPayload',
      prompt: { id: 'greet', version: 1, source: 'API' },
    })

    const described = await t.execute(UpsertPromptDocument, { input: { ...input, description: 'same definition' } })
    expect(described.data!.upsertPrompt).toMatchObject({ prompt: { version: 1, description: 'same definition' } })

    const changed = await t.execute(UpsertPromptDocument, { input: { ...input, messages: [{ role: 'USER', content: 'Hi {{name}}' }] } })
    expect(changed.data!.upsertPrompt).toMatchObject({ prompt: { version: 2 } })

    const read = await t.execute(PromptDocument, { id: 'greet' })
    expect(read.data!.prompt).toMatchObject({ version: 2, variables: ['name'], messages: [{ role: 'USER', content: 'Hi {{name}}' }] })

    const deleted = await t.execute(DeletePromptDocument, { id: 'greet' })
    expect(deleted.data!.deletePrompt).toEqual({ __typename: 'DeletePromptPayload', deletedId: 'greet' })
    expect((await t.execute(PromptDocument, { id: 'greet' })).data!.prompt).toBeNull()

    // re-created: the numbering continues, an (id, version) pair is never reused
    const again = await t.execute(UpsertPromptDocument, { input })
    expect(again.data!.upsertPrompt).toMatchObject({ prompt: { version: 3 } })
    await t.execute(DeletePromptDocument, { id: 'greet' })
  })

  // the variables' JSON is written as text: a value 10 000 deep is past what JSON.stringify can walk
  const deepSchema = `${'{"not":'.repeat(10_000)}{}${'}'.repeat(10_000)}`
  const wideSchema = JSON.stringify({
    type: 'object',
    properties: Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`p${i}`, {}])),
  })
  it.each([
    ['10 000 deep', deepSchema],
    ['100 000 wide', wideSchema],
  ])('refuses an output schema %s with InvalidRequestError naming the field, and saves nothing', async (_shape, schema) => {
    const input = `{"id":"bounded","messages":[{"role":"USER","content":"x"}],"output":{"kind":"JSON_SCHEMA","schema":${schema}}}`
    const response = await t.app.yoga.fetch('http://promptline.test/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: `{"query":${JSON.stringify(print(UpsertPromptDocument))},"variables":{"input":${input}}}`,
    })
    const answer = await response.json()
    expect(answer.errors).toBeUndefined()
    expect(answer.data.upsertPrompt).toMatchObject({ __typename: 'InvalidRequestError', field: 'input.output.schema' })
    expect((await t.execute(PromptDocument, { id: 'bounded' })).data!.prompt).toBeNull()
  })

  it('shadows a catalog prompt with a tenant one and reveals it again on delete', async () => {
    const shadow = await t.execute(UpsertPromptDocument, {
      input: { id: 'chat', messages: [{ role: 'USER', content: 'Echo: {{input}}' }], defaultProfileId: 'fake-echo' },
    })
    expect(shadow.data!.upsertPrompt).toMatchObject({ prompt: { id: 'chat', version: 2, source: 'API' } })
    const prepared = await t.execute(PreparePromptDocument, { input: { promptId: 'chat', variables: { input: 'x' } } })
    expect(prepared.data!.preparePrompt.messages).toEqual([{ role: 'USER', content: 'Echo: x' }])

    await t.execute(DeletePromptDocument, { id: 'chat' })
    expect((await t.execute(PromptDocument, { id: 'chat' })).data!.prompt).toMatchObject({ version: 1, source: 'CATALOG' })
    const again = await t.execute(DeletePromptDocument, { id: 'chat' })
    expect(again.data!.deletePrompt).toMatchObject({ __typename: 'InvalidRequestError', code: 'INVALID_REQUEST' })
  })

  it.each([
    ['a bad id', { id: 'bad id', messages: [{ role: 'USER', content: 'x' }] }, 'InvalidRequestError'],
    ['no messages', { id: 'empty', messages: [] }, 'InvalidRequestError'],
    ['a broken template', { id: 'broken', messages: [{ role: 'USER', content: '{{ a b }}' }] }, 'InvalidRequestError'],
    [
      'a schema on a TEXT contract',
      { id: 'text-schema', messages: [{ role: 'USER', content: 'x' }], output: { kind: 'TEXT', schema: { type: 'object' } } },
      'InvalidRequestError',
    ],
    [
      'an invalid JSON Schema',
      { id: 'bad-schema', messages: [{ role: 'USER', content: 'x' }], output: { kind: 'JSON_SCHEMA', schema: { type: 12 } } },
      'InvalidRequestError',
    ],
    ['too many repairs', { id: 'repairs', messages: [{ role: 'USER', content: 'x' }], maxRepairs: 99 }, 'InvalidRequestError'],
    [
      'an unknown default profile',
      { id: 'orphan', messages: [{ role: 'USER', content: 'x' }], defaultProfileId: 'ghost' },
      'NotFoundError',
    ],
  ] as const)('refuses a prompt with %s and writes nothing', async (_name, input, typename) => {
    const before = await promptCount()
    const { data } = await t.execute(UpsertPromptDocument, { input: input as never })
    expect(data!.upsertPrompt.__typename).toBe(typename)
    expect(await promptCount()).toBe(before)
  })

  it('lists backends and profiles, and creates, inspects and deletes a profile', async () => {
    const backends = (await t.execute(BackendsDocument)).data!.backends
    // the vendors, then the OpenAI-compatible servers the shipped catalog names
    expect(backends.map((b) => `${b.id}:${b.kind}`)).toEqual([
      'fake:FAKE',
      'openai:OPENAI',
      'anthropic:ANTHROPIC',
      'gemini:GEMINI',
      ...['ollama', 'vllm', 'lm-studio', 'groq', 'openrouter', 'deepseek', 'mistral', 'together'].map((id) => `${id}:OPENAI`),
    ])

    const created = await t.execute(UpsertProfileDocument, {
      input: { id: 'cold', backendId: 'fake', model: 'echo', settings: { temperature: 0, extra: { seed: 7 } }, candidates: ['fake-echo'] },
    })
    expect(created.data!.upsertProfile).toMatchObject({
      __typename: 'UpsertProfilePayload',
      profile: { id: 'cold', source: 'API', candidates: ['fake-echo'] },
    })

    const profiles = (await t.execute(ProfilesDocument)).data!.profiles
    expect(profiles.map((p) => p.id)).toEqual(['anthropic-default', 'cold', 'fake-echo', 'openai-default'])

    const inspected = (await t.execute(InspectProfileDocument, { id: 'cold' })).data!.inspectProfile
    expect(inspected.settings).toMatchObject({ temperature: 0, maxTokens: 1024, extra: { seed: 7 } })
    expect(inspected.credential).toEqual({ source: 'NONE', name: null, available: true })

    const openai = (await t.execute(InspectProfileDocument, { id: 'openai-default' })).data!.inspectProfile
    expect(openai.credential).toEqual({ source: 'BACKEND_ENV', name: 'OPENAI_API_KEY', available: false })
    expect(openai.settings).toMatchObject({ temperature: 0.7 })

    const prepared = await t.execute(PreparePromptDocument, {
      input: { promptId: 'chat', profileId: 'cold', variables: { input: 'x' }, overrides: { temperature: 1 } },
    })
    expect(prepared.data!.preparePrompt.settings).toMatchObject({ temperature: 1, extra: { seed: 7 } })

    expect((await t.execute(DeleteProfileDocument, { id: 'cold' })).data!.deleteProfile).toEqual({
      __typename: 'DeleteProfilePayload',
      deletedId: 'cold',
    })
    expect((await t.execute(DeleteProfileDocument, { id: 'fake-echo' })).data!.deleteProfile).toMatchObject({
      __typename: 'InvalidRequestError',
    })
  })

  it.each([
    ['an unknown backend', { id: 'x', backendId: 'nowhere', model: 'm' }, 'NotFoundError'],
    ['an unknown candidate', { id: 'x', backendId: 'fake', model: 'm', candidates: ['ghost'] }, 'NotFoundError'],
    ['itself as candidate', { id: 'x', backendId: 'fake', model: 'm', candidates: ['x'] }, 'InvalidRequestError'],
    ['a negative maxTokens', { id: 'x', backendId: 'fake', model: 'm', settings: { maxTokens: -1 } }, 'InvalidRequestError'],
    ['an empty model', { id: 'x', backendId: 'fake', model: ' ' }, 'InvalidRequestError'],
    ['a non-http endpoint', { id: 'x', backendId: 'fake', model: 'm', endpoint: 'ftp://host' }, 'InvalidRequestError'],
    ['a bad credential variable name', { id: 'x', backendId: 'fake', model: 'm', credentialEnv: 'MY-KEY' }, 'InvalidRequestError'],
  ] as const)('refuses a profile with %s and writes nothing', async (_name, input, typename) => {
    const { data } = await t.execute(UpsertProfileDocument, { input: input as never })
    expect(data!.upsertProfile.__typename).toBe(typename)
    expect((await t.execute(ProfilesDocument)).data!.profiles.map((p) => p.id)).not.toContain('x')
  })

  it('answers /healthz with 200 while the database answers', async () => {
    const response = await t.app.yoga.fetch('http://promptline.test/healthz')
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ status: 'ok' })
  })
})
