import { print } from 'graphql'
import { afterAll, describe, expect, it } from 'vitest'
import { createLogger } from '../../src/domain/logger.js'
import { createApp } from '../../src/server/app.js'
import { PromptDocument, PromptsDocument } from '../generated/graphql.js'
import { BACKENDS_YAML, catalogDir } from '../helpers/catalog-dir.js'
import { createTestDatabase, providers, type TestDatabase } from '../helpers/databases.js'

const profiles = `profiles:\n  - id: fake-echo\n    backendId: fake\n    model: echo\n`
const prompt = (content: string, extra = '') =>
  `prompts:\n  - id: greet\n    messages:\n      - role: user\n        content: "${content}"\n${extra}`

describe.each(providers)('catalog files across restarts (%s)', (provider) => {
  let database: TestDatabase
  afterAll(() => database?.drop())

  /** Starts the app on the same database with a catalog and reads `greet` and the prompt ids. */
  async function boot(prompts: string) {
    const app = await createApp(
      { databaseUrl: database.url, catalogDir: catalogDir({ 'b.yaml': BACKENDS_YAML, 'p.yaml': profiles, 'q.yaml': prompts }) },
      () => undefined,
      createLogger('silent'),
    )
    try {
      const ask = async (document: typeof PromptDocument | typeof PromptsDocument, variables: object) =>
        (
          await (
            await app.yoga.fetch('http://t/graphql', {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({ query: print(document), variables }),
            })
          ).json()
        ).data
      const greet = (await ask(PromptDocument, { id: 'greet' })).prompt
      const ids = (await ask(PromptsDocument, {})).prompts.edges.map((e: { node: { id: string } }) => e.node.id)
      return { greet, ids }
    } finally {
      await app.close()
    }
  }

  it('keeps the version for an unchanged file, bumps it for a changed one, and drops removed prompts', async () => {
    database = await createTestDatabase(provider)
    const first = await boot(prompt('Hello {{name}}'))
    expect(first.greet).toMatchObject({ version: 1, source: 'CATALOG' })

    const relaidOut = await boot(
      `# same prompt, other layout\nprompts:\n- {id: greet, messages: [{content: "Hello {{name}}", role: USER}]}\n`,
    )
    expect(relaidOut.greet).toMatchObject({ version: 1, definitionHash: first.greet.definitionHash })

    const changed = await boot(prompt('Hi {{name}}'))
    expect(changed.greet.version).toBe(2)
    expect(changed.greet.definitionHash).not.toBe(first.greet.definitionHash)

    const removed = await boot('prompts: []\n')
    expect(removed.ids).toEqual([])
    expect(removed.greet).toBeNull()

    const back = await boot(prompt('Hello {{name}}'))
    expect(back.greet.version).toBe(3)
  })
})
