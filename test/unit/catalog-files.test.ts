import { describe, expect, it } from 'vitest'
import { CatalogFileError, loadCatalogFiles } from '../../src/catalog/files.js'
import { promptDefinitionHash } from '../../src/domain/catalog.js'
import { DEFAULT_CATALOG } from '../helpers/app.js'
import { BACKENDS_YAML, catalogDir } from '../helpers/catalog-dir.js'

function loadError(files: Record<string, string>): string {
  try {
    loadCatalogFiles(catalogDir(files))
  } catch (err) {
    expect(err).toBeInstanceOf(CatalogFileError)
    return (err as Error).message
  }
  throw new Error('the catalog loaded')
}

const PROFILES_YAML = `
profiles:
  - id: fake-echo
    backendId: fake
    model: echo
`

describe('catalog files', () => {
  it('loads the shipped catalog', () => {
    const catalog = loadCatalogFiles(DEFAULT_CATALOG)
    expect(catalog.backends.map((b) => [b.id, b.kind, b.credentialEnv ?? null])).toEqual([
      ['fake', 'FAKE', null],
      ['openai', 'OPENAI', 'OPENAI_API_KEY'],
      ['anthropic', 'ANTHROPIC', 'ANTHROPIC_API_KEY'],
      ['gemini', 'GEMINI', 'GEMINI_API_KEY'],
      ['ollama', 'OPENAI', null],
      ['vllm', 'OPENAI', null],
      ['lm-studio', 'OPENAI', null],
      ['groq', 'OPENAI', 'GROQ_API_KEY'],
      ['openrouter', 'OPENAI', 'OPENROUTER_API_KEY'],
      ['deepseek', 'OPENAI', 'DEEPSEEK_API_KEY'],
      ['mistral', 'OPENAI', 'MISTRAL_API_KEY'],
      ['together', 'OPENAI', 'TOGETHER_API_KEY'],
    ])
    expect(catalog.backends.filter((b) => b.dialect).map((b) => b.dialect)).toEqual([
      'OLLAMA',
      'VLLM',
      'LM_STUDIO',
      'GROQ',
      'OPENROUTER',
      'DEEPSEEK',
      'MISTRAL',
      'TOGETHER',
    ])
    expect(catalog.profiles.map((p) => p.id)).toEqual(['fake-echo', 'openai-default', 'anthropic-default'])
    expect(catalog.prompts.map((p) => [p.id, p.definition.output.kind])).toEqual([
      ['chat', 'TEXT'],
      ['extract-json', 'JSON_SCHEMA'],
    ])
  })

  it('names the file and the field of a typo', () => {
    const message = loadError({ 'b.yaml': BACKENDS_YAML, 'p.yaml': PROFILES_YAML.replace('model: echo', 'modle: echo') })
    expect(message).toContain('p.yaml: profiles[0]: Unrecognized key: "modle"')
    expect(message).toContain('p.yaml: profiles[0].model:')
  })

  it('names a bad enum value, a bad id, an out-of-range setting and a dialect off an OPENAI backend', () => {
    const message = loadError({
      'b.yaml': `backends:\n  - id: x\n    kind: GROK\n  - id: "has space"\n    kind: FAKE\n    settings: { temperature: 7 }\n  - { id: y, kind: ANTHROPIC, dialect: groq }\n`,
    })
    expect(message).toMatch(/b\.yaml: backends\[2\]\.dialect: a dialect names an OpenAI-compatible server: only an OPENAI backend/)
    expect(message).toMatch(/b\.yaml: backends\[0\]\.kind: /)
    expect(message).toMatch(/b\.yaml: backends\[1\]\.id: must be 1-128 characters/)
    expect(message).toMatch(/b\.yaml: backends\[1\]\.settings\.temperature: /)
  })

  it('rejects unknown references and duplicate ids, naming both places', () => {
    const message = loadError({
      'a.yaml': BACKENDS_YAML,
      'b.yaml': `${PROFILES_YAML}  - id: fake-echo\n    backendId: nowhere\n    model: m\n    candidates: [ghost]\n`,
      'c.yaml': `prompts:\n  - id: p\n    defaultProfileId: missing\n    messages: [{ role: user, content: hi }]\n`,
    })
    expect(message).toContain("b.yaml: profiles[1].id: profile 'fake-echo' is already defined at")
    expect(message).toContain("b.yaml: profiles[1].backendId: unknown backend 'nowhere'")
    expect(message).toContain("b.yaml: profiles[1].candidates[0]: unknown profile 'ghost'")
    expect(message).toContain("c.yaml: prompts[0].defaultProfileId: unknown profile 'missing'")
  })

  it('rejects a broken template, a schema-less JSON_SCHEMA prompt and unparsable YAML', () => {
    const message = loadError({
      'a.yaml': `prompts:\n  - id: p\n    messages: [{ role: user, content: "{{ two words }}" }]\n  - id: q\n    output: { kind: JSON_SCHEMA }\n    messages: [{ role: user, content: hi }]\n`,
      'b.yaml': 'backends: [\n',
    })
    expect(message).toMatch(/a\.yaml: prompts\[0\]\.messages\[0\]\.content: .*not a variable reference/)
    expect(message).toMatch(/a\.yaml: prompts\[1\]\.output\.schema: is required with kind JSON_SCHEMA/)
    expect(message).toMatch(/b\.yaml: not valid YAML\/JSON/)
  })

  it('accepts JSON files and enum values in any case', () => {
    const catalog = loadCatalogFiles(
      catalogDir({
        'x.json': JSON.stringify({
          backends: [{ id: 'f', kind: 'fake' }],
          prompts: [{ id: 'p', messages: [{ role: 'USER', content: 'hi' }] }],
        }),
      }),
    )
    expect(catalog.backends[0]!.kind).toBe('FAKE')
    expect(catalog.prompts[0]!.definition.messages[0]!.role).toBe('user')
  })
})

describe('definitionHash', () => {
  const base = `prompts:\n  - id: p\n    defaultProfileId: fake-echo\n    messages:\n      - role: user\n        content: "Hello {{name}}"\n`
  const hashOf = (prompts: string) =>
    promptDefinitionHash(
      loadCatalogFiles(catalogDir({ 'b.yaml': BACKENDS_YAML, 'p.yaml': PROFILES_YAML, 'q.yaml': prompts })).prompts[0]!.definition,
    )

  it('ignores file layout: indentation, flow style, key order and comments', () => {
    const relaidOut = `# a comment\nprompts:\n- messages: [ { content: "Hello {{name}}", role: user } ]\n  defaultProfileId:    fake-echo\n  id: p\n`
    expect(hashOf(relaidOut)).toBe(hashOf(base))
  })

  it('changes when a template, the default profile, the contract or maxRepairs changes', () => {
    const hashes = [
      hashOf(base),
      hashOf(base.replace('Hello', 'Hi')),
      hashOf(base.replace('    defaultProfileId: fake-echo\n', '')),
      hashOf(`${base}    output: { kind: JSON }\n`),
      hashOf(`${base}    maxRepairs: 1\n`),
    ]
    expect(new Set(hashes).size).toBe(hashes.length)
  })
})
