import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  DeletePromptDocument,
  InspectPromptDocument,
  PreparePromptDocument,
  type PromptMessageInput,
  RunPromptRefDocument,
  RunsOfPromptDocument,
  SetPromptLabelDocument,
  UpsertPromptDocument,
} from '../generated/graphql.js'
import { providers } from '../helpers/databases.js'
import { createSession, enqueue, slow, waitForEntry, words } from '../helpers/flow.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

// Composition: a template includes another prompt's text; includes resolve at admission, are
// pinned with the entry and recorded on the run; cycles and dangling includes are refused.
describe.each(providers)('prompts that include prompts (%s)', (provider) => {
  let t: TestServer
  beforeAll(async () => {
    t = await startTestServer({ provider })
  })
  afterAll(() => t?.stop({ dropDatabase: true }))

  /** Saves a prompt; answers its version, or the error code and message when it is refused. */
  async function save(id: string, ...messages: (string | PromptMessageInput)[]) {
    const input = {
      id,
      defaultProfileId: 'fake-echo',
      messages: messages.map((m) => (typeof m === 'string' ? { role: 'USER' as const, content: m } : m)),
    }
    const { data, errors } = await t.request(UpsertPromptDocument, { input })
    if (data?.upsertPrompt.__typename === 'UpsertPromptPayload') return data.upsertPrompt.prompt.version
    return errors?.[0] ? { code: errors[0].extensions?.code, message: errors[0].message } : data?.upsertPrompt
  }
  const prepare = async (promptId: string, variables: Record<string, unknown>) => {
    const { data, errors } = await t.request(PreparePromptDocument, { input: { promptId, variables } })
    return data?.preparePrompt ?? { code: errors?.[0]?.extensions?.code, message: errors?.[0]?.message }
  }

  it("renders an include with the parent's variables, keeps the parent's own definitionHash, and hashes the expansion", async () => {
    await save('tone', { role: 'SYSTEM', content: 'Be {{mood}}.' })
    await save('greeter', { role: 'SYSTEM', content: '{{> tone}} Keep it short.' }, '{{input}}')
    const first = await prepare('greeter', { mood: 'kind', input: 'hi' })
    expect(first).toMatchObject({
      messages: [
        { role: 'SYSTEM', content: 'Be kind. Keep it short.' },
        { role: 'USER', content: 'hi' },
      ],
      includes: [{ key: 'tone', promptId: 'tone', version: 1 }],
    })
    const own = (await t.request(InspectPromptDocument, { id: 'greeter' })).data!.inspectPrompt
    expect('definitionHash' in first && first.definitionHash).toBe(own.definitionHash)

    await save('tone', { role: 'SYSTEM', content: 'Be {{mood}} and brief.' })
    const second = await prepare('greeter', { mood: 'kind', input: 'hi' })
    expect(second).toMatchObject({ definitionHash: own.definitionHash, includes: [{ version: 2 }] })
    expect('renderedHash' in second && second.renderedHash).not.toBe('renderedHash' in first && first.renderedHash)
  })

  it('binds an included prompt’s own variables from the parent’s, and takes a version or a label', async () => {
    await save('signoff', 'Regards, {{name}}')
    await save('signoff', 'Best, {{name}}')
    await t.request(SetPromptLabelDocument, { input: { promptId: 'signoff', label: 'formal', version: 1 } })
    await save(
      'letter',
      '{{body}}\n{{> signoff name=author.name}}\n{{> signoff@formal name=author.name}}\n{{> signoff#2 name=author.name}}',
    )
    const prepared = await prepare('letter', { body: 'Thanks.', author: { name: 'Ada' } })
    expect(prepared).toMatchObject({ messages: [{ content: 'Thanks.\nBest, Ada\nRegards, Ada\nBest, Ada' }] })
    expect('includes' in prepared && prepared.includes.map((i) => [i.key, i.version])).toEqual([
      ['signoff', 2],
      ['signoff@formal', 1],
      ['signoff#2', 2],
    ])
    expect(await prepare('letter', { body: 'Thanks.' })).toEqual({ code: 'RENDER', message: "missing variable 'author.name'" })
  })

  it('runs a queued entry with the includes it was admitted with, and records them on the run', async () => {
    await save('part', 'old part')
    await save('whole', '{{> part}} / {{input}}')
    const session = await createSession(t, 'composed')
    const blocker = await enqueue(t, { sessionId: session, input: words(40), overrides: slow(20) })
    await waitForEntry(t, session, blocker.queueId, ['RUNNING'])
    const queued = await enqueue(t, { sessionId: session, promptId: 'whole', input: 'q' })
    await save('part', 'new part')
    const ran = await waitForEntry(t, session, queued.queueId, ['COMPLETED'], 20_000)
    const { data } = await t.request(RunPromptRefDocument, { input: { sessionId: session, promptId: 'whole', input: 'q' } })
    expect(data?.runPrompt).toMatchObject({ run: { output: 'new part / q', includes: [{ key: 'part', promptId: 'part', version: 2 }] } })
    const runs = (await t.request(RunsOfPromptDocument, { promptId: 'whole' })).data!.runs.edges.map((e) => e.node)
    expect(runs.find((r) => r.id === ran.runId)).toMatchObject({ output: 'old part / q', includes: [{ key: 'part', version: 1 }] })
  })

  it('refuses at upsert an include that leads back to the prompt, naming the path, and one nested deeper than five', async () => {
    await save('loop-b', 'b')
    await save('loop-a', '{{> loop-b}}')
    expect(await save('loop-b', '{{> loop-a}}')).toMatchObject({
      __typename: 'InvalidRequestError',
      field: 'input.messages',
      message: 'input.messages: includes form a cycle: loop-b → loop-a → loop-b',
    })
    await save('level-6', 'deepest')
    for (let level = 5; level >= 1; level--) expect(typeof (await save(`level-${level}`, `{{> level-${level + 1}}}`))).toBe('number')
    expect(await save('level-0', '{{> level-1}}')).toMatchObject({
      __typename: 'InvalidRequestError',
      message: 'input.messages: includes nest deeper than 5: level-0 → level-1 → level-2 → level-3 → level-4 → level-5 → level-6',
    })
    expect(await save('dangling', '{{> no-such-prompt}}')).toMatchObject({ __typename: 'NotFoundError' })
  })

  it('refuses at resolution a cycle that a label move made after the prompts were saved', async () => {
    await save('ring-a', 'plain a')
    await save('ring-b', 'plain b')
    await save('ring-b', 'b then {{> ring-a}}')
    await t.request(SetPromptLabelDocument, { input: { promptId: 'ring-b', label: 'production', version: 1 } })
    // ring-b runs its plain version 1 now, so ring-a may include it
    expect(await save('ring-a', 'a then {{> ring-b}}')).toBe(2)
    await t.request(SetPromptLabelDocument, { input: { promptId: 'ring-b', label: 'production', version: 2, expectedVersion: 1 } })
    expect(await prepare('ring-a', {})).toEqual({
      code: 'INVALID_REQUEST',
      message: 'promptId: includes form a cycle: ring-a → ring-b → ring-a',
    })
  })

  it('refuses to delete a prompt another includes, naming the includers', async () => {
    await save('footer', 'footer text')
    await save('page-1', 'one {{> footer}}')
    await save('page-2', 'two {{> footer#1}}')
    const { data } = await t.request(DeletePromptDocument, { id: 'footer' })
    expect(data?.deletePrompt).toEqual({
      __typename: 'InvalidRequestError',
      code: 'INVALID_REQUEST',
      message: "id: prompt 'footer' is included by 'page-1', 'page-2'; remove those includes first",
    })
    expect(await prepare('page-1', {})).toMatchObject({ messages: [{ content: 'one footer text' }] })
  })
})
