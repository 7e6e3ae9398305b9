import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  AddDatasetItemsDocument,
  CreateDatasetDocument,
  ExperimentJudgedDocument,
  ExperimentProgressDocument,
  StartExperimentDocument,
  UpsertPromptDocument,
} from '../generated/graphql.js'
import { catalogDir } from '../helpers/catalog-dir.js'
import { providers } from '../helpers/databases.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

// the fake backend, priced at $1 a token; the judge has a profile of its own
const CATALOG = `
backends:
  - { id: fake, kind: FAKE, prices: { echo: { inputPerMillion: 1000000, outputPerMillion: 1000000 } } }
profiles:
  - { id: fake-echo, backendId: fake, model: echo }
  - { id: fake-judge, backendId: fake, model: echo }
`

describe.each(providers)('an LLM judge (%s)', (provider) => {
  let t: TestServer
  beforeAll(async () => {
    t = await startTestServer({ provider, app: { catalogDir: catalogDir({ 'catalog.yaml': CATALOG }) } })
    await t.request(UpsertPromptDocument, {
      input: { id: 'echo-word', messages: [{ role: 'USER', content: '{{word}}' }], defaultProfileId: 'fake-echo' },
    })
    // the fake echoes the judge's message: a verdict naming what it was given
    const verdict = '{"score": 0.75, "reason": "{{output}} against {{expected}}"}'
    await t.request(UpsertPromptDocument, {
      input: { id: 'judge', messages: [{ role: 'USER', content: verdict }], defaultProfileId: 'fake-judge' },
    })
    await t.request(CreateDatasetDocument, { input: { id: 'judged' } })
    const items = ['one', 'two', 'three'].map((word) => ({ variables: { word }, expected: word }))
    await t.request(AddDatasetItemsDocument, { input: { datasetId: 'judged', items } })
  })
  afterAll(() => t?.stop({ dropDatabase: true }))

  it("scores by a run of its own, whose cost is the experiment's judgeCostUsd and not its costUsd", async () => {
    const scorers = [{ name: 'judge', kind: 'LLM_JUDGE' as const, promptRef: { id: 'judge' }, threshold: 0.7 }]
    const started = (
      await t.request(StartExperimentDocument, { input: { name: 'judged', datasetId: 'judged', promptRef: { id: 'echo-word' }, scorers } })
    ).data!.startExperiment
    if (started.__typename !== 'ExperimentPayload') throw new Error(JSON.stringify(started))
    await t.subscribe(ExperimentProgressDocument, { id: started.experiment.id }).done(30_000)
    const result = (await t.request(ExperimentJudgedDocument, { id: started.experiment.id })).data!.experiment!
    expect(result.status).toBe('COMPLETED')
    const units = result.items.edges.flatMap((e) => e.node.runs)
    expect(units.map((u) => u.scores![0]).map((s) => [s!.value, s!.pass, s!.reason])).toEqual([
      [0.75, true, 'one against one'],
      [0.75, true, 'two against two'],
      [0.75, true, 'three against three'],
    ])
    const judges = units.map((u) => u.scores![0]!.judgeRun!)
    for (const [i, judge] of judges.entries()) {
      expect(judge.id).not.toBe(units[i]!.run!.id)
      expect(judge.sessionId).not.toBe(units[i]!.run!.sessionId)
      expect(judge.tags).toEqual([`experiment:${started.experiment.id}`, 'judge'])
    }
    const taskCost = units.reduce((sum, u) => sum + u.run!.cost!, 0)
    const judgeCost = judges.reduce((sum, j) => sum + j.cost!, 0)
    expect(taskCost).toBeGreaterThan(0)
    expect(judgeCost).toBeGreaterThan(0)
    expect(result.summary.costUsd).toBeCloseTo(taskCost)
    expect(result.summary.judgeCostUsd).toBeCloseTo(judgeCost)
  })
})
