import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  RunPromptRefDocument,
  RunsUsageDocument,
  type RunsUsageQuery,
  SetPromptLabelDocument,
  UpsertPromptDocument,
  type UsageDimension,
  UsageReportDocument,
} from '../generated/graphql.js'
import { catalogDir } from '../helpers/catalog-dir.js'
import { providers } from '../helpers/databases.js'
import { createSession } from '../helpers/flow.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

type RunUsage = RunsUsageQuery['runs']['edges'][number]['node']

/** What the runs of each group add up to, keyed as `keyOf` says: the report must answer the same. */
function expectedGroups(runs: RunUsage[], keysOf: (run: RunUsage) => string[]) {
  const groups = new Map<string, { runs: number; inputTokens: number; outputTokens: number; cost: number }>()
  for (const run of runs) {
    for (const key of keysOf(run)) {
      const group = groups.get(key) ?? { runs: 0, inputTokens: 0, outputTokens: 0, cost: 0 }
      group.runs++
      group.inputTokens += run.usage?.inputTokens ?? 0
      group.outputTokens += run.usage?.outputTokens ?? 0
      group.cost = (group.cost ?? 0) + run.cost!
      groups.set(key, group)
    }
  }
  // the database sums costs in its own order: equal to 9 decimals
  return Object.fromEntries([...groups].map(([key, group]) => [key, { ...group, cost: expect.closeTo(group.cost, 9) }]))
}

describe.each(providers)('usage reports (%s)', (provider) => {
  let t: TestServer
  const from = new Date(Date.now() - 3_600_000).toISOString()
  const to = new Date(Date.now() + 3_600_000).toISOString()
  beforeAll(async () => {
    // the fake model priced, so the report's costs are sums of real numbers
    const catalog = catalogDir({
      'catalog.yaml': `
backends:
  - { id: fake, kind: FAKE, prices: { echo: { inputPerMillion: 1000, outputPerMillion: 3000 } } }
profiles:
  - { id: fake-echo, backendId: fake, model: echo }
`,
    })
    t = await startTestServer({ provider, app: { catalogDir: catalog } })
    for (const text of ['short', 'a longer version']) {
      await t.request(UpsertPromptDocument, {
        input: { id: 'reported', messages: [{ role: 'USER', content: `${text} {{input}}` }], defaultProfileId: 'fake-echo' },
      })
    }
    await t.request(SetPromptLabelDocument, { input: { promptId: 'reported', label: 'production', version: 1 } })
    await t.request(SetPromptLabelDocument, { input: { promptId: 'reported', label: 'canary', version: 2 } })
    const sessionId = await createSession(t, 'reported')
    const runs: [string | null, string[], string][] = [
      [null, ['checkout'], 'one'],
      [null, ['checkout', 'web'], 'two words'],
      [null, [], 'three more words'],
      ['canary', ['web'], 'four'],
      ['canary', ['web'], 'five and six'],
    ]
    for (const [label, tags, input] of runs) {
      const promptRef = { id: 'reported', ...(label && { label }) }
      const { data } = await t.request(RunPromptRefDocument, { input: { sessionId, promptRef, input, tags } })
      expect(data?.runPrompt).toMatchObject({ run: { status: 'COMPLETED' } })
    }
  })
  afterAll(() => t?.stop({ dropDatabase: true }))

  const report = async (groupBy: UsageDimension[]) => (await t.request(UsageReportDocument, { from, to, groupBy })).data!.usageReport
  const runs = async () => (await t.request(RunsUsageDocument, { promptId: 'reported' })).data!.runs.edges.map((e) => e.node)
  const summed = (groups: Awaited<ReturnType<typeof report>>['groups'], keyOf: (key: (typeof groups)[number]['key']) => string) =>
    Object.fromEntries(
      groups.map((g) => [
        keyOf(g.key),
        { runs: g.runs, inputTokens: g.usage.inputTokens, outputTokens: g.usage.outputTokens, cost: g.cost },
      ]),
    )

  it('groups by label exactly as the runs add up', async () => {
    const answer = await report(['LABEL'])
    expect(answer.truncated).toBe(false)
    expect(summed(answer.groups, (k) => String(k.promptLabel))).toEqual(expectedGroups(await runs(), (r) => [String(r.promptLabel)]))
    expect(answer.groups.map((g) => [g.key.promptLabel, g.runs])).toEqual([
      ['canary', 2],
      ['production', 3],
    ])
  })

  it('groups by tag, a run counting once per tag and an untagged run in none', async () => {
    const answer = await report(['TAG'])
    expect(summed(answer.groups, (k) => String(k.tag))).toEqual(expectedGroups(await runs(), (r) => r.tags))
    expect(answer.groups.map((g) => [g.key.tag, g.runs])).toEqual([
      ['checkout', 2],
      ['web', 3],
    ])
  })

  it('groups by prompt, version and UTC day, with the cache tokens apart', async () => {
    const answer = await report(['PROMPT', 'VERSION', 'DAY'])
    const day = new Date().toISOString().slice(0, 10)
    expect(answer.groups.map((g) => g.key)).toEqual([
      { promptId: 'reported', promptVersion: 1, promptLabel: null, tag: null, day },
      { promptId: 'reported', promptVersion: 2, promptLabel: null, tag: null, day },
    ])
    expect(summed(answer.groups, (k) => String(k.promptVersion))).toEqual(expectedGroups(await runs(), (r) => [String(r.promptVersion)]))
    expect(answer.groups.every((g) => g.usage.cacheReadTokens === 0 && g.usage.cacheWriteTokens === 0)).toBe(true)
  })

  it('answers one group of everything without dimensions, and nothing outside the window', async () => {
    expect((await report([])).groups.map((g) => g.runs)).toEqual([5])
    const before = await t.request(UsageReportDocument, { from: '2020-01-01T00:00:00Z', to: '2020-02-01T00:00:00Z', groupBy: ['LABEL'] })
    expect(before.data!.usageReport.groups).toEqual([])
  })

  it('refuses a window that ends before it starts with INVALID_REQUEST', async () => {
    const { data, errors } = await t.request(UsageReportDocument, { from: to, to: from, groupBy: ['DAY'] })
    expect(data).toBeNull()
    expect(errors?.[0]).toMatchObject({ extensions: { code: 'INVALID_REQUEST' }, message: 'to: must be after from' })
  })
})
