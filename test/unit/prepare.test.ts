import { describe, expect, it } from 'vitest'
import type { Backend, CatalogReader, Profile, Prompt } from '../../src/domain/catalog.js'
import { Secret } from '../../src/domain/credentials.js'
import type { PromptDefinition } from '../../src/domain/definitions.js'
import { parseRunRequest } from '../../src/domain/run-request.js'
import { templateVariables } from '../../src/domain/template.js'
import { PromptPreparer } from '../../src/runner/prepare.js'

function prompt(id: string, definition: Partial<PromptDefinition> = {}): Prompt {
  const full: PromptDefinition = {
    messages: [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: '{{input}}' },
    ],
    defaultProfileId: 'p-fake',
    output: { kind: 'TEXT', schema: null },
    maxRepairs: 0,
    ...definition,
  }
  return {
    id,
    source: 'API',
    version: 1,
    definitionHash: `hash-${id}`,
    description: null,
    definition: full,
    variables: templateVariables(full.messages.map((m) => m.content)),
    updatedAt: new Date(0),
  }
}

const backends: Backend[] = [
  { id: 'fake', kind: 'FAKE', settings: { maxTokens: 50, temperature: 0.5 } },
  { id: 'openai', kind: 'OPENAI', credentialEnv: 'OPENAI_API_KEY', baseUrl: 'http://127.0.0.1:1/v1' },
]
const profiles: Profile[] = [
  { id: 'p-fake', backendId: 'fake', model: 'echo', settings: { temperature: 0.9 }, source: 'API', updatedAt: null },
  { id: 'p-openai', backendId: 'openai', model: 'gpt', source: 'API', updatedAt: null },
  { id: 'p-direct', backendId: 'openai', model: 'gpt', apiKey: new Secret('sk-direct-secret'), source: 'API', updatedAt: null },
  { id: 'p-orphan', backendId: 'gone', model: 'x', source: 'API', updatedAt: null },
]
const prompts: Prompt[] = [
  prompt('chat'),
  prompt('no-default', { defaultProfileId: null }),
  prompt('dangling', { defaultProfileId: 'deleted-profile' }),
  prompt('broken-schema', { output: { kind: 'JSON_SCHEMA', schema: { type: 'no-such-type' } } }),
]

const catalog: CatalogReader = {
  getPrompt: async (_t, id) => prompts.find((p) => p.id === id) ?? null,
  getPromptVersion: async () => null,
  getPromptLabel: async () => null,
  listPromptLabels: async () => [],
  getProfile: async (_t, id) => profiles.find((p) => p.id === id) ?? null,
  getBackend: (id) => backends.find((b) => b.id === id) ?? null,
}
const sessions = { find: async (_t: string, id: string) => (id === 's1' ? { defaultProfileId: 'p-openai' } : null) }
const history = [
  { role: 'user', content: 'earlier question', parts: [], toolCalls: [], toolCallId: null },
  { role: 'assistant', content: 'earlier answer', parts: [], toolCalls: [], toolCallId: null },
]
const env: Record<string, string> = { OPENAI_API_KEY: 'sk-env-secret' }
// MY_KEY is allowed server-wide, as PROMPTLINE_CREDENTIAL_ENV_ALLOWLIST would allow it
const noFiles = { find: async () => null }
const preparer = new PromptPreparer(catalog, sessions, (name) => env[name], noFiles, ['MY_KEY'])
type PrepareRequest = Record<string, unknown> & { sessionId?: string }
// validated once, as the service does at its boundary, then resolved and rendered
const prepare = ({ sessionId, ...request }: PrepareRequest) =>
  preparer.prepare('t', sessionId ?? null, parseRunRequest(request, ''), sessionId ? history : [])

async function codeOf(request: PrepareRequest): Promise<string> {
  try {
    await prepare(request)
  } catch (err) {
    return `${(err as { code: string }).code}: ${(err as Error).message}`
  }
  return 'no error'
}

describe('prompt preparation', () => {
  it('renders the messages with the effective settings of the default profile', async () => {
    const prepared = await prepare({ promptId: 'chat', variables: { input: 'hi' } })
    expect(prepared.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'hi' },
    ])
    expect(prepared.profile.id).toBe('p-fake')
    expect(prepared.settings).toMatchObject({ maxTokens: 50, temperature: 0.9 })
    expect(prepared.renderedHash).toMatch(/^[0-9a-f]{64}$/)
  })

  it('changes the rendered hash with the variables and keeps it for equal input', async () => {
    const a = await prepare({ promptId: 'chat', variables: { input: 'a' } })
    const a2 = await prepare({ promptId: 'chat', variables: { input: 'a' } })
    const b = await prepare({ promptId: 'chat', variables: { input: 'b' } })
    expect(a.renderedHash).toBe(a2.renderedHash)
    expect(a.renderedHash).not.toBe(b.renderedHash)
  })

  it('applies request overrides on top, an explicit 0 included', async () => {
    const prepared = await prepare({ promptId: 'chat', variables: { input: 'x' }, overrides: { temperature: 0, maxTokens: 7 } })
    expect(prepared.settings).toMatchObject({ temperature: 0, maxTokens: 7 })
  })

  it('inserts the session history after the system messages', async () => {
    const prepared = await prepare({ promptId: 'chat', variables: { input: 'now' }, sessionId: 's1' })
    expect(prepared.messages.map((m) => m.content)).toEqual(['Be brief.', 'earlier question', 'earlier answer', 'now'])
  })

  it("uses the request profile, else the prompt's default, else the session's", async () => {
    env.OPENAI_API_KEY = 'sk-env-secret'
    expect((await prepare({ promptId: 'chat', profileId: 'p-openai', variables: { input: 'x' } })).profile.id).toBe('p-openai')
    expect((await prepare({ promptId: 'no-default', variables: { input: 'x' }, sessionId: 's1' })).profile.id).toBe('p-openai')
  })

  it('resolves the credential in order and never lets the value into JSON', async () => {
    const viaEnv = await prepare({ promptId: 'chat', profileId: 'p-openai', variables: { input: 'x' } })
    expect(viaEnv.credential.toJSON()).toEqual({ source: 'BACKEND_ENV', name: 'OPENAI_API_KEY', available: true })
    const direct = await prepare({ promptId: 'chat', profileId: 'p-direct', variables: { input: 'x' } })
    expect(direct.credential.source).toBe('DIRECT')
    expect(JSON.stringify(direct)).not.toMatch(/sk-direct-secret|sk-env-secret/)
  })

  describe('raises each error category', () => {
    it.each([
      ['a bad prompt id', { promptId: 'bad id!' }, /^INVALID_REQUEST: promptId:/],
      ['variables that are not an object', { promptId: 'chat', variables: ['x'] }, /^INVALID_REQUEST: variables:/],
      [
        'a negative maxTokens',
        { promptId: 'chat', variables: { input: 'x' }, overrides: { maxTokens: -1 } },
        /^INVALID_REQUEST: overrides\.maxTokens:/,
      ],
      [
        'an unknown setting',
        { promptId: 'chat', variables: { input: 'x' }, overrides: { temprature: 1 } },
        /^INVALID_REQUEST: overrides: Unrecognized key/,
      ],
      [
        'a bad credential env name',
        { promptId: 'chat', variables: { input: 'x' }, credentialEnv: 'no-dashes' },
        /^INVALID_REQUEST: credentialEnv:/,
      ],
      ['an unknown prompt', { promptId: 'nope' }, /^NOT_FOUND: prompt 'nope' not found/],
      ['an unknown requested profile', { promptId: 'chat', profileId: 'nope' }, /^NOT_FOUND: profile 'nope'/],
      ['an unknown session', { promptId: 'chat', sessionId: 'nope' }, /^NOT_FOUND: session 'nope'/],
      ['no profile anywhere', { promptId: 'no-default', variables: { input: 'x' } }, /^PROFILE_REQUIRED:/],
      [
        'a dangling default profile',
        { promptId: 'dangling', variables: { input: 'x' } },
        /^PROFILE_LOAD: default profile 'deleted-profile'/,
      ],
      [
        'an unknown backend',
        { promptId: 'chat', profileId: 'p-orphan', variables: { input: 'x' } },
        /^PROFILE_LOAD: .*unknown backend 'gone'/,
      ],
      ['an output schema that does not compile', { promptId: 'broken-schema', variables: { input: 'x' } }, /^PROMPT_LOAD:/],
      ['a missing variable', { promptId: 'chat', variables: {} }, /^RENDER: missing variable 'input'/],
    ])('%s', async (_name, request, expected) => {
      expect(await codeOf(request as Omit<PrepareRequest, 'tenantId'>)).toMatch(expected)
    })

    it('CREDENTIALS, naming the variable to set', async () => {
      delete env.OPENAI_API_KEY
      expect(await codeOf({ promptId: 'chat', profileId: 'p-openai', variables: { input: 'x' } })).toBe(
        "CREDENTIALS: no credentials for profile 'p-openai': set OPENAI_API_KEY (profile 'p-openai')",
      )
      expect(await codeOf({ promptId: 'chat', profileId: 'p-openai', variables: { input: 'x' }, credentialEnv: 'MY_KEY' })).toMatch(
        /set MY_KEY/,
      )
    })
  })
})
