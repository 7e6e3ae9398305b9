import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sha256Hex } from '../../src/domain/hash.js'
import {
  CatalogEventsDocument,
  type CatalogEventsSubscription,
  PreparePromptDocument,
  PromptDiffDocument,
  PromptHistoryDocument,
  PromptLabelsDocument,
  RunPromptRefDocument,
  RunsOfPromptDocument,
  SetPromptLabelDocument,
  type SetPromptLabelInput,
  UpsertPromptDocument,
} from '../generated/graphql.js'
import { providers } from '../helpers/databases.js'
import { createSession, enqueue, slow, waitForEntry, words } from '../helpers/flow.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

const ADMIN = 'labels-admin-key-0123456789'
const WRITER = 'labels-write-key-0123456789'
const ADMIN_ID = sha256Hex(ADMIN).slice(0, 16)

// Versions and labels: every version is kept and readable, labels move by compare-and-set, and a
// run records which version and label it ran; what was admitted runs as it was admitted.
describe.each(providers)('prompt versions and labels (%s)', (provider) => {
  let t: TestServer
  beforeAll(async () => {
    t = await startTestServer({
      provider,
      apiKey: ADMIN,
      app: {
        apiKeys: [
          { sha256: sha256Hex(ADMIN), tenantId: 'acme', role: 'admin' },
          { sha256: sha256Hex(WRITER), tenantId: 'acme', role: 'write' },
        ],
        protectedLabels: ['stable'],
        // the split test opens 1 000 sessions as fast as it can
        requestLimits: { mutationsPerSecond: 10_000 },
      },
    })
  })
  afterAll(() => t?.stop({ dropDatabase: true }))

  /** Saves `id` with one user message `text {{input}}`; answers the version. */
  async function save(id: string, text: string) {
    const { data } = await t.request(UpsertPromptDocument, {
      input: { id, messages: [{ role: 'USER', content: `${text} {{input}}` }], defaultProfileId: 'fake-echo' },
    })
    if (data?.upsertPrompt.__typename !== 'UpsertPromptPayload') throw new Error(JSON.stringify(data))
    return data.upsertPrompt.prompt.version
  }
  const setLabel = async (input: SetPromptLabelInput, client = t.client) =>
    (await t.request(SetPromptLabelDocument, { input }, client)).data?.setPromptLabel
  /** The prompt as preparePrompt resolves it for a session now. */
  const prepared = async (promptId: string, sessionId: string) =>
    (await t.request(PreparePromptDocument, { input: { sessionId, promptId, variables: { input: 'x' } } })).data!.preparePrompt
  const run = async (input: Parameters<typeof enqueue>[1]) => {
    const { data } = await t.request(RunPromptRefDocument, { input })
    if (data?.runPrompt.__typename !== 'RunPromptPayload') throw new Error(JSON.stringify(data))
    return data.runPrompt
  }

  it('keeps every version with its definition, hash and author, newest first, in pages', async () => {
    for (const text of ['first', 'second', 'third']) await save('history', text)
    const page = await t.request(PromptHistoryDocument, { id: 'history', first: 2, number: 1 })
    const prompt = page.data!.prompt!
    expect(prompt.version).toBe(3)
    expect(prompt.versions.edges.map((e) => [e.node.version, e.node.messages[0]!.content])).toEqual([
      [3, 'third {{input}}'],
      [2, 'second {{input}}'],
    ])
    expect(prompt.versions.edges.every((e) => e.node.authorKeyId === ADMIN_ID && e.node.source === 'API')).toBe(true)
    expect(prompt.versionAt).toMatchObject({ version: 1, messages: [{ content: 'first {{input}}' }] })
    expect(prompt.versionAt!.definitionHash).not.toBe(prompt.versions.edges[0]!.node.definitionHash)
    const rest = await t.request(PromptHistoryDocument, { id: 'history', first: 2, after: prompt.versions.pageInfo.endCursor, number: 9 })
    expect(rest.data!.prompt!.versions.edges.map((e) => e.node.version)).toEqual([1])
    expect(rest.data!.prompt!.versions.pageInfo.hasNextPage).toBe(false)
    expect(rest.data!.prompt!.versionAt).toBeNull()
  })

  it('answers the diff of any two versions, and NOT_FOUND for a version that does not exist', async () => {
    await save('diffed', 'Say hi')
    await save('diffed', 'Say hello')
    const { data } = await t.request(PromptDiffDocument, { id: 'diffed', from: 1, to: 2 })
    expect(data!.promptDiff).toEqual({
      identical: false,
      from: { version: 1 },
      to: { version: 2 },
      messages: [
        {
          change: 'CHANGED',
          fromIndex: 0,
          toIndex: 0,
          segments: [
            { op: 'EQUAL', text: 'Say ' },
            { op: 'DELETE', text: 'hi' },
            { op: 'INSERT', text: 'hello' },
            { op: 'EQUAL', text: ' {{input}}' },
          ],
        },
      ],
      fields: [],
    })
    expect((await t.request(PromptDiffDocument, { id: 'diffed', from: 2, to: 2 })).data!.promptDiff.identical).toBe(true)
    const missing = await t.request(PromptDiffDocument, { id: 'diffed', from: 1, to: 3 })
    expect(missing.errors?.[0]).toMatchObject({ extensions: { code: 'NOT_FOUND' }, message: "prompt version 'diffed#3' not found" })
  })

  it('moves a label by compare-and-set: a stale expectedVersion is a LabelConflictError and changes nothing', async () => {
    await save('cas', 'one')
    await save('cas', 'two')
    expect(await setLabel({ promptId: 'cas', label: 'beta', version: 1 })).toMatchObject({ label: { name: 'beta', version: 1 } })
    // two editors read version 1; the first moves it, the second is refused
    expect(await setLabel({ promptId: 'cas', label: 'beta', version: 2, expectedVersion: 1 })).toMatchObject({ label: { version: 2 } })
    expect(await setLabel({ promptId: 'cas', label: 'beta', version: 1, expectedVersion: 1 })).toEqual({
      __typename: 'LabelConflictError',
      currentVersion: 2,
      code: 'LABEL_CONFLICT',
      message: "label 'beta' of prompt 'cas' names version 2; nothing changed",
    })
    // creating one that exists is a conflict too
    expect(await setLabel({ promptId: 'cas', label: 'beta', version: 1 })).toMatchObject({
      __typename: 'LabelConflictError',
      currentVersion: 2,
    })
    const { data } = await t.request(PromptLabelsDocument, { id: 'cas' })
    expect(data!.prompt!.labels).toMatchObject([{ name: 'beta', version: 2, split: null }])
    expect(data!.prompt!.labelHistory).toEqual([
      { label: 'beta', move: 2, version: 2, previousVersion: 1, keyId: ADMIN_ID },
      { label: 'beta', move: 1, version: 1, previousVersion: null, keyId: ADMIN_ID },
    ])
  })

  it('lets exactly one of eight editors racing from the same expectedVersion move the label', async () => {
    for (const text of ['r1', 'r2', 'r3']) await save('race', text)
    await setLabel({ promptId: 'race', label: 'live', version: 1 })
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => setLabel({ promptId: 'race', label: 'live', version: 2 + (i % 2), expectedVersion: 1 })),
    )
    const moved = answers.filter((a) => a?.__typename === 'SetPromptLabelPayload')
    expect(moved).toHaveLength(1)
    expect(answers.filter((a) => a?.__typename === 'LabelConflictError')).toHaveLength(7)
    const { data } = await t.request(PromptLabelsDocument, { id: 'race', label: 'live' })
    expect(data!.prompt!.labelHistory.map((m) => m.move)).toEqual([2, 1])
    expect(data!.prompt!.labels[0]!.version).toBe(moved[0]!.__typename === 'SetPromptLabelPayload' ? moved[0]!.label.version : 0)
  })

  it("refuses to set 'latest', a version that does not exist, and a split that does not add up", async () => {
    await save('refusals', 'only')
    const latest = await setLabel({ promptId: 'refusals', label: 'latest', version: 1 })
    expect(latest).toMatchObject({ __typename: 'InvalidRequestError', code: 'INVALID_REQUEST' })
    expect(latest).toHaveProperty('message', expect.stringContaining("'latest' always names the newest version"))
    expect(await setLabel({ promptId: 'refusals', label: 'x', version: 7 })).toMatchObject({ __typename: 'NotFoundError' })
    const split = await setLabel({
      promptId: 'refusals',
      label: 'x',
      split: [
        { version: 1, weight: 50 },
        { version: 1, weight: 40 },
      ],
    })
    expect(split).toMatchObject({ __typename: 'InvalidRequestError' })
    expect((await t.request(PromptLabelsDocument, { id: 'refusals' })).data!.prompt!.labels).toEqual([])
  })

  it("refuses 'production' and the operator's protected labels to a write key, and lets it move others", async () => {
    await save('guarded', 'v1')
    const writer = t.clientWith(WRITER)
    for (const label of ['production', 'stable']) {
      const { data, errors } = await t.request(SetPromptLabelDocument, { input: { promptId: 'guarded', label, version: 1 } }, writer)
      expect(data).toBeNull()
      expect(errors?.[0]?.extensions?.code).toBe('FORBIDDEN')
    }
    expect(await setLabel({ promptId: 'guarded', label: 'canary', version: 1 }, writer)).toMatchObject({ label: { name: 'canary' } })
    expect(await setLabel({ promptId: 'guarded', label: 'production', version: 1 })).toMatchObject({ label: { name: 'production' } })
    expect((await t.request(PromptLabelsDocument, { id: 'guarded' })).data!.prompt!.labels.map((l) => l.name)).toEqual([
      'canary',
      'production',
    ])
  })

  it('runs production when it is set, else latest, and a named version or label, recording which', async () => {
    await save('refs', 'alpha')
    await save('refs', 'bravo')
    const session = await createSession(t, 'refs-session')
    const ask = (promptRef?: { version?: number; label?: string }) =>
      run({
        sessionId: session,
        ...(promptRef ? { promptRef: { id: 'refs', ...promptRef } } : { promptId: 'refs' }),
        input: 'x',
        tags: ['refs'],
      })

    expect((await ask()).run).toMatchObject({ output: 'bravo x', promptVersion: 2, promptLabel: 'latest', keyId: ADMIN_ID, tags: ['refs'] })
    await setLabel({ promptId: 'refs', label: 'production', version: 1 })
    expect((await ask()).run).toMatchObject({ output: 'alpha x', promptVersion: 1, promptLabel: 'production' })
    expect((await ask({ version: 2 })).run).toMatchObject({ output: 'bravo x', promptVersion: 2, promptLabel: null })
    expect((await ask({ label: 'latest' })).run).toMatchObject({ promptVersion: 2, promptLabel: 'latest' })
    const missing = await t.request(RunPromptRefDocument, {
      input: { sessionId: session, promptRef: { id: 'refs', label: 'nope' }, input: 'x' },
    })
    expect(missing.data?.runPrompt).toMatchObject({
      __typename: 'NotFoundError',
      message: "label 'nope' of prompt 'refs' not found; its labels: production",
    })

    const byLabel = await t.request(RunsOfPromptDocument, { promptId: 'refs', promptLabel: 'production' })
    expect(byLabel.data!.runs.edges.map((e) => e.node.promptVersion)).toEqual([1])
    const byVersion = await t.request(RunsOfPromptDocument, { promptId: 'refs', promptVersion: 2 })
    expect(byVersion.data!.runs.edges.map((e) => e.node.promptLabel)).toEqual(['latest', null, 'latest'])
    expect((await t.request(RunsOfPromptDocument, { tag: 'refs' })).data!.runs.edges).toHaveLength(4)
  })

  it('runs a queued entry with the version it was admitted with after its label moved; new admissions get the new one', async () => {
    await save('moving', 'old')
    await save('moving', 'new')
    await setLabel({ promptId: 'moving', label: 'production', version: 1 })
    const session = await createSession(t, 'moving-session')
    const blocker = await enqueue(t, { sessionId: session, input: words(40), overrides: slow(20) })
    await waitForEntry(t, session, blocker.queueId, ['RUNNING'])
    const before = await enqueue(t, { sessionId: session, promptId: 'moving', input: 'q' })
    expect(before).toMatchObject({ status: 'QUEUED', promptVersion: 1, promptLabel: 'production' })

    await setLabel({ promptId: 'moving', label: 'production', version: 2, expectedVersion: 1 })
    const after = await enqueue(t, { sessionId: session, promptId: 'moving', input: 'q' })
    expect(after).toMatchObject({ promptVersion: 2, promptLabel: 'production' })

    const ran = await Promise.all([before, after].map((e) => waitForEntry(t, session, e.queueId, ['COMPLETED'], 20_000)))
    const runs = (await t.request(RunsOfPromptDocument, { promptId: 'moving' })).data!.runs.edges.map((e) => e.node)
    const byId = new Map(runs.map((r) => [r.id, r]))
    expect(ran.map((e) => byId.get(e.runId!)?.promptVersion)).toEqual([1, 2])
  })

  it("runs a split label's version for each session, and records the session's bucket within that version's share", async () => {
    await save('split', 'control')
    await save('split', 'variant')
    await setLabel({
      promptId: 'split',
      label: 'production',
      split: [
        { version: 1, weight: 50 },
        { version: 2, weight: 50 },
      ],
    })
    const seen = new Set<number>()
    for (let i = 0; i < 12; i++) {
      const session = await createSession(t, `split-${i}`)
      const first = await prepared('split', session)
      expect(first.promptLabel).toBe('production')
      const { run: ran } = await run({ sessionId: session, promptId: 'split', input: 'x' })
      expect(ran).toMatchObject({ promptVersion: first.promptVersion, promptLabel: 'production' })
      expect(ran!.splitBucket).toBeGreaterThanOrEqual(first.promptVersion === 1 ? 0 : 50)
      expect(ran!.splitBucket).toBeLessThan(first.promptVersion === 1 ? 50 : 100)
      seen.add(first.promptVersion!)
    }
    expect([...seen].sort()).toEqual([1, 2])
  })

  it('sends 90 % ± 3 of 1 000 sessions to the 90 share of a split, each session always to the same version', async () => {
    await save('ninety', 'main')
    await save('ninety', 'trial')
    await setLabel({
      promptId: 'ninety',
      label: 'production',
      split: [
        { version: 1, weight: 90 },
        { version: 2, weight: 10 },
      ],
    })
    const ids = Array.from({ length: 1000 }, (_, i) => `ninety-${i}`)
    const versionOf = async (sessionId: string) => (await prepared('ninety', sessionId)).promptVersion
    const versions: (number | null | undefined)[] = []
    for (let at = 0; at < ids.length; at += 100) {
      const batch = ids.slice(at, at + 100)
      await Promise.all(batch.map((id) => createSession(t, id)))
      versions.push(...(await Promise.all(batch.map(versionOf))))
    }
    const onMain = versions.filter((v) => v === 1).length
    expect(onMain).toBeGreaterThanOrEqual(870)
    expect(onMain).toBeLessThanOrEqual(930)
    expect(versions.filter((v) => v === 2)).toHaveLength(1000 - onMain)
    // asked again, every session answers the version it answered first
    const again = await Promise.all(ids.slice(0, 200).map(versionOf))
    expect(again).toEqual(versions.slice(0, 200))
  })

  it('publishes new versions and label moves to catalogEvents subscribers', async () => {
    const events = t.subscribe(CatalogEventsDocument, {})
    // nothing says when a subscription is live but its first event: save versions until one arrives
    let version = 0
    for (let i = 0; events.results.length === 0; i++) {
      version = await save('watched', `draft ${i}`)
      await events.until((r) => r.length > 0, 250).catch(() => {})
    }
    expect(events.results[0]!.data!.catalogEvents).toEqual({ __typename: 'PromptVersionCreatedEvent', promptId: 'watched', version })
    await setLabel({ promptId: 'watched', label: 'production', version })
    await events.until((r) => r.some((e) => e.data?.catalogEvents.__typename === 'PromptLabelMovedEvent'))
    events.unsubscribe()
    const seen = events.results.map((r) => r.data!.catalogEvents as CatalogEventsSubscription['catalogEvents'])
    expect(seen.at(-1)).toEqual({ __typename: 'PromptLabelMovedEvent', move: { label: 'production', version, previousVersion: null } })
  })
})
