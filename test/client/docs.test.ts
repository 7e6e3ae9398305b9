import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PROJECT_ROOT } from '../../src/config.js'
import { docBlocks, RUNNABLE } from '../helpers/doc-blocks.js'
import { DocRunner, DocServer, freePort } from '../helpers/doc-runner.js'

// Every block of README.md and docs/*.md a reader would run, run as written against a server
// started the README's way: GraphQL operations, JS/TS programs, shell lines (curl, npm start with
// its variables). The README first, then the docs by name (experiments.md uses datasets.md's
// dataset). A block that cannot run here says why in the doc, and is listed.
const PAGES = [
  'README.md',
  ...readdirSync(path.join(PROJECT_ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`),
]
const blocksOf = (page: string) => docBlocks(readFileSync(path.join(PROJECT_ROOT, page), 'utf8'), page)

describe('the docs, run as written', () => {
  let dir: string
  let server: DocServer
  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'promptline-docs-'))
    server = new DocServer(await freePort(), `file:${path.join(dir, 'promptline.db')}`)
    await server.start()
  })
  afterAll(async () => {
    await server?.stop()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it.each(PAGES.filter((page) => blocksOf(page).some((b) => RUNNABLE.has(b.lang))))(
    '%s',
    async (page) => {
      await new DocRunner(server).runPage(blocksOf(page))
    },
    180_000,
  )

  it('lists the blocks it did not run, each with why', () => {
    const skipped = PAGES.flatMap(blocksOf).filter((b) => b.skip && RUNNABLE.has(b.lang))
    for (const block of skipped) console.info(`not run: ${block.where} (${block.skip})`)
    expect(skipped.every((b) => b.skip !== 'skipped')).toBe(true)
  })

  it('fails on a broken snippet, naming where it is and what is wrong', async () => {
    const page = [
      '```graphql',
      'query { preparePrompt(input: { promptId: "chat", variables: { input: "hi" } }) { messages { role content } } }',
      '```',
      '```graphql',
      'query { preparePrompt(input: { promptId: "chat" }) { noSuchField } }',
      '```',
    ].join('\n')
    await expect(new DocRunner(server).runPage(docBlocks(page, 'broken.md'))).rejects.toThrow(
      /^broken\.md:4: Cannot query field "noSuchField" on type "PreparedPrompt"/,
    )
    const refused = ['```graphql', 'mutation { createSession(input: { id: "not valid!" }) { __typename } }', '```'].join('\n')
    await expect(new DocRunner(server).runPage(docBlocks(refused, 'refused.md'))).rejects.toThrow(
      /^refused\.md:1: createSession answers CreateSessionResult: select \.\.\. on Error \{ code message \}/,
    )
    const wrongAnswer = [
      '```graphql',
      'query { preparePrompt(input: { promptId: "chat", variables: { input: "hi" } }) { profileId } }',
      '```',
      '<!-- doc-test: expect {"preparePrompt": {"profileId": "not-what-it-answers"}} -->',
    ].join('\n')
    await expect(new DocRunner(server).runPage(docBlocks(wrongAnswer, 'answer.md'))).rejects.toThrow(/^answer\.md:1: expected/)
    const throwing = ['```js', "throw new Error('as written, this fails')", '```'].join('\n')
    await expect(new DocRunner(server).runPage(docBlocks(throwing, 'throwing.md'))).rejects.toThrow(/as written, this fails/)
  })
})
