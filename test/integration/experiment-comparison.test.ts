import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FakeVendorServer } from '../fixtures/fake-vendor.js'
import {
  AddDatasetItemsDocument,
  CompareExperimentsDocument,
  CreateDatasetDocument,
  ExperimentProgressDocument,
  StartExperimentDocument,
  type StartExperimentInput,
  UpsertPromptDocument,
} from '../generated/graphql.js'
import { vendorCatalog } from '../helpers/catalog-dir.js'
import { providers } from '../helpers/databases.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

const exact = [{ name: 'exact', kind: 'EXACT' as const }]

describe.each(providers)('comparing experiments (%s)', (provider) => {
  let t: TestServer
  let openai: FakeVendorServer
  let anthropic: FakeVendorServer
  beforeAll(async () => {
    openai = await FakeVendorServer.start('openai')
    anthropic = await FakeVendorServer.start('anthropic')
    t = await startTestServer({
      provider,
      app: { catalogDir: vendorCatalog(openai, anthropic) },
      secrets: { OA_KEY: 'sk-oa', AN_KEY: 'sk-an' },
    })
  })
  afterAll(async () => {
    await t?.stop({ dropDatabase: true })
    await openai?.close()
    await anthropic?.close()
  })

  /** Starts an experiment and waits for its end, as its progress subscription tells. */
  async function run(input: StartExperimentInput): Promise<string> {
    const started = (await t.request(StartExperimentDocument, { input })).data!.startExperiment
    if (started.__typename !== 'ExperimentPayload') throw new Error(JSON.stringify(started))
    const progress = t.subscribe(ExperimentProgressDocument, { id: started.experiment.id })
    await progress.done(30_000)
    expect(progress.results.at(-1)!.data!.experimentProgress.status).toBe('COMPLETED')
    return started.experiment.id
  }

  it('counts the items a new prompt version improved and regressed', async () => {
    // version 1 answers the item's `word`, version 2 its `alt`; the fake echoes the message
    const prompt = (content: string) => ({ id: 'pick', messages: [{ role: 'USER' as const, content }], defaultProfileId: 'fake-echo' })
    await t.request(UpsertPromptDocument, { input: prompt('{{word}}') })
    await t.request(UpsertPromptDocument, { input: prompt('{{alt}}') })
    const items = [
      { variables: { word: 'same', alt: 'same' }, expected: 'same' },
      { variables: { word: 'right', alt: 'wrong' }, expected: 'right' },
      { variables: { word: 'wrong', alt: 'fixed' }, expected: 'fixed' },
      { variables: { word: 'good', alt: 'bad' }, expected: 'good' },
    ]
    await t.request(CreateDatasetDocument, { input: { id: 'picks' } })
    await t.request(AddDatasetItemsDocument, { input: { datasetId: 'picks', items } })
    const base = await run({ name: 'v1', datasetId: 'picks', promptRef: { id: 'pick', version: 1 }, scorers: exact })
    const candidate = await run({ name: 'v2', datasetId: 'picks', promptRef: { id: 'pick', version: 2 }, scorers: exact })

    const compared = (await t.request(CompareExperimentsDocument, { baseId: base, candidateId: candidate })).data!.compareExperiments
    expect(compared).toMatchObject({ improvements: 1, regressions: 2, unchanged: 1, deltas: { passRate: -0.25, meanScore: -0.25 } })
    expect(compared.items.map((i) => [i.base.outputs, i.change])).toEqual([
      [['same'], 'UNCHANGED'],
      [['right'], 'REGRESSED'],
      [['wrong'], 'IMPROVED'],
      [['good'], 'REGRESSED'],
    ])
  })

  it("reports a flaky item's spread over its repetitions and does not count it as changed", async () => {
    await t.request(UpsertPromptDocument, {
      input: { id: 'flaky', messages: [{ role: 'USER', content: 'yes?' }], defaultProfileId: 'oa-plain' },
    })
    await t.request(CreateDatasetDocument, { input: { id: 'flaky-items' } })
    await t.request(AddDatasetItemsDocument, { input: { datasetId: 'flaky-items', items: [{ variables: {}, expected: 'yes' }] } })
    // the vendor answers the same item differently each time
    const answers = (...words: string[]) => words.map((word) => ({ tokens: [word] }))
    openai.script(...answers('yes', 'no', 'yes'))
    const flaky = { datasetId: 'flaky-items', promptRef: { id: 'flaky', version: 1 }, scorers: exact, repetitions: 3, concurrency: 1 }
    const base = await run({ name: 'base', ...flaky })
    openai.script(...answers('no', 'yes', 'no'))
    const candidate = await run({ name: 'candidate', ...flaky })

    const compared = (await t.request(CompareExperimentsDocument, { baseId: base, candidateId: candidate })).data!.compareExperiments
    const [item] = compared.items
    expect(item!.base).toMatchObject({ outputs: ['yes', 'no', 'yes'], meanScore: 2 / 3 })
    expect(item!.candidate).toMatchObject({ outputs: ['no', 'yes', 'no'], meanScore: 1 / 3 })
    expect(item!.base.spread).toBeCloseTo(Math.sqrt(2) / 3)
    expect(item!.change).toBe('UNCHANGED')
    expect(compared).toMatchObject({ improvements: 0, regressions: 0, unchanged: 1 })
  })

  it('names which id it refuses or cannot find', async () => {
    const malformed = await t.request(CompareExperimentsDocument, { baseId: 'bad id!', candidateId: 'x' })
    expect(malformed.errors?.[0]).toMatchObject({ extensions: { code: 'INVALID_REQUEST' }, message: expect.stringMatching(/^baseId: /) })
    const missing = await t.request(CompareExperimentsDocument, { baseId: 'x', candidateId: 'nope' })
    expect(missing.errors?.[0]?.message).toMatch(/^(baseId: experiment 'x'|candidateId: experiment 'nope') not found$/)
  })
})
