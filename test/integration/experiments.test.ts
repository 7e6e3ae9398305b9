import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  AddDatasetItemsDocument,
  CancelExperimentDocument,
  CreateDatasetDocument,
  ExperimentProgressDocument,
  ExperimentResultDocument,
  type ExperimentResultQuery,
  ScoreExperimentDocument,
  ScoreRunDocument,
  StartExperimentDocument,
  type StartExperimentInput,
  UpsertProfileDocument,
  UpsertPromptDocument,
} from '../generated/graphql.js'
import { providers } from '../helpers/databases.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

type Result = NonNullable<ExperimentResultQuery['experiment']>
type ItemRow = Result['items']['edges'][number]['node']

const words = (n: number, from = 0) =>
  Array.from({ length: n }, (_, i) => ({ variables: { word: `w${from + i}` }, expected: `w${from + i}` }))

describe.each(providers)('experiments (%s)', (provider) => {
  let t: TestServer
  beforeAll(async () => {
    t = await startTestServer({ provider })
    // the fake echoes the last user message: the item's word
    const messages = [{ role: 'USER' as const, content: '{{word}}' }]
    await t.request(UpsertPromptDocument, { input: { id: 'echo-word', messages, defaultProfileId: 'fake-echo' } })
    // each answer takes a while, so runs started together overlap
    const slow = { id: 'fake-slow', backendId: 'fake', model: 'echo', settings: { extra: { tokenDelayMs: 30 } } }
    expect((await t.request(UpsertProfileDocument, { input: slow })).data!.upsertProfile.__typename).toBe('UpsertProfilePayload')
  })
  afterAll(async () => {
    await t?.stop({ dropDatabase: true })
  })

  async function dataset(id: string, items: ReturnType<typeof words>) {
    await t.request(CreateDatasetDocument, { input: { id } })
    await t.request(AddDatasetItemsDocument, { input: { datasetId: id, items } })
  }
  async function start(input: StartExperimentInput) {
    const started = (await t.request(StartExperimentDocument, { input })).data!.startExperiment
    if (started.__typename !== 'ExperimentPayload') throw new Error(JSON.stringify(started))
    return started.experiment
  }
  /** The experiment once it ended, as its progress subscription tells; and every progress event it sent. */
  async function ended(id: string): Promise<Result & { told: { status: string; done: number; total: number }[] }> {
    const progress = t.subscribe(ExperimentProgressDocument, { id })
    await progress.done(30_000)
    const told = progress.results.map((r) => r.data!.experimentProgress)
    const result = (await t.request(ExperimentResultDocument, { id, first: 0 })).data!.experiment!
    return { ...result, told }
  }
  async function itemsOf(id: string): Promise<ItemRow[]> {
    const rows: ItemRow[] = []
    for (let after: string | null | undefined = null; ; ) {
      const page: Result['items'] = (await t.request(ExperimentResultDocument, { id, first: 7, after })).data!.experiment!.items
      rows.push(...page.edges.map((e) => e.node))
      if (!page.pageInfo.hasNextPage) return rows
      after = page.pageInfo.endCursor
    }
  }
  const exact = [{ name: 'exact', kind: 'EXACT' as const }]

  it('runs the dataset and prompt versions frozen at its start, each item in a session of its own, and scores every run', async () => {
    await dataset('words', words(20))
    await t.request(AddDatasetItemsDocument, { input: { datasetId: 'words', items: words(1, 20) } })
    const started = await start({
      name: 'frozen',
      datasetId: 'words',
      datasetVersion: 1,
      promptRef: { id: 'echo-word', label: 'latest' },
      scorers: exact,
      concurrency: 2,
    })
    expect(started).toMatchObject({ promptVersion: 1, promptLabel: 'latest', datasetVersion: 1 })
    // a new version of the prompt while the experiment runs: its runs keep to version 1
    await t.request(UpsertPromptDocument, {
      input: { id: 'echo-word', messages: [{ role: 'USER', content: 'say {{word}}' }], defaultProfileId: 'fake-echo' },
    })

    const result = await ended(started.id)
    expect(result).toMatchObject({ status: 'COMPLETED', progress: { done: 20, total: 20 } })
    // the subscription told each run's end as it came, and the end last
    const done = result.told.map((p) => p.done)
    expect(done).toEqual([...done].sort((a, b) => a - b))
    expect(result.told.at(-1)).toMatchObject({ status: 'COMPLETED', done: 20, total: 20 })
    expect(result.summary).toMatchObject({ passRate: 1, meanScores: [{ scorer: 'exact', mean: 1 }] })
    const rows = await itemsOf(started.id)
    expect(rows.map((r) => r.item.variables)).toEqual(words(20).map((w) => w.variables))
    const runs = rows.flatMap((r) => r.runs.map((u) => u.run!))
    expect(new Set(runs.map((r) => r.promptVersion))).toEqual(new Set([1]))
    expect(runs.map((r) => r.output)).toEqual(words(20).map((w) => w.expected))
    expect(new Set(runs.map((r) => r.sessionId)).size).toBe(20)
    for (const run of runs) expect(run).toMatchObject({ status: 'COMPLETED', origin: 'EXPERIMENT', tags: [`experiment:${started.id}`] })
    expect(rows.map((r) => r.runs[0]!.scores)).toEqual(rows.map(() => [{ scorer: 'exact', value: 1, pass: true }]))
  })

  it('never has more model calls in flight than its concurrency', async () => {
    await dataset('slow-words', words(8))
    t.model.maxInFlight = 0
    const started = await start({
      name: 'two at a time',
      datasetId: 'slow-words',
      promptRef: { id: 'echo-word', version: 1 },
      profileId: 'fake-slow',
      scorers: exact,
      concurrency: 2,
      repetitions: 2,
    })
    expect(await ended(started.id)).toMatchObject({ status: 'COMPLETED', progress: { done: 16, total: 16 } })
    expect(t.model.maxInFlight).toBe(2)
  })

  it('is FAILED when a budget refuses a run, with the runs before it kept and scored', async () => {
    const budgeted = await startTestServer({
      provider,
      app: { budgets: [{ tenantId: 'local', metric: 'runs', limit: 3, windowMs: 3_600_000 }] },
    })
    try {
      const messages = [{ role: 'USER' as const, content: '{{word}}' }]
      await budgeted.request(UpsertPromptDocument, { input: { id: 'echo-word', messages, defaultProfileId: 'fake-echo' } })
      await budgeted.request(CreateDatasetDocument, { input: { id: 'budgeted' } })
      await budgeted.request(AddDatasetItemsDocument, { input: { datasetId: 'budgeted', items: words(5) } })
      const started = (
        await budgeted.request(StartExperimentDocument, {
          input: { name: 'over budget', datasetId: 'budgeted', promptRef: { id: 'echo-word', version: 1 }, scorers: exact, concurrency: 1 },
        })
      ).data!.startExperiment
      if (started.__typename !== 'ExperimentPayload') throw new Error(JSON.stringify(started))
      await budgeted.subscribe(ExperimentProgressDocument, { id: started.experiment.id }).done(30_000)
      const result = (await budgeted.request(ExperimentResultDocument, { id: started.experiment.id, first: 10 })).data!.experiment!
      expect(result.status).toBe('FAILED')
      expect(result.errorMessage).toContain('budget')
      const statuses = result.items.edges.map((e) => e.node.runs[0]!.status)
      expect(statuses).toEqual(['DONE', 'DONE', 'DONE', 'FAILED', 'PENDING'])
      expect(result.summary.passRate).toBe(1)
    } finally {
      await budgeted.stop({ dropDatabase: true })
    }
  })

  it('stops starting runs once cancelled, and aborts those under way', async () => {
    await dataset('cancelled', words(30))
    // answers that take seconds: the first runs are under way when the cancel comes
    const stalling = { id: 'fake-stalling', backendId: 'fake', model: 'echo', settings: { extra: { tokenDelayMs: 5_000 } } }
    await t.request(UpsertProfileDocument, { input: stalling })
    const started = await start({
      name: 'cancel me',
      datasetId: 'cancelled',
      promptRef: { id: 'echo-word', version: 1 },
      profileId: 'fake-stalling',
      scorers: exact,
      concurrency: 2,
    })
    await expect.poll(() => t.model.inFlight, { timeout: 10_000 }).toBe(2)
    const cancelled = (await t.request(CancelExperimentDocument, { id: started.id })).data!.cancelExperiment
    expect(cancelled).toMatchObject({ experiment: { status: 'CANCELLED' } })
    const result = await ended(started.id)
    expect(result.status).toBe('CANCELLED')
    const runs = (await itemsOf(started.id)).flatMap((row) => row.runs.flatMap((u) => (u.run ? [u.run] : [])))
    expect(runs.map((r) => r.status)).toEqual(['ABORTED', 'ABORTED'])
  })

  it('scores an ended experiment again with another scorer, from the recorded outputs, without a model call', async () => {
    await dataset('rescored', words(4))
    const started = await start({ name: 'rescore', datasetId: 'rescored', promptRef: { id: 'echo-word', version: 1 }, scorers: exact })
    await ended(started.id)
    const calls = t.model.requests.length
    const odd = { name: 'odd', kind: 'REGEX' as const, pattern: '[13]$' }
    const rescored = (await t.request(ScoreExperimentDocument, { input: { experimentId: started.id, scorers: [odd] } })).data!
      .scoreExperiment
    expect(rescored).toMatchObject({
      experiment: {
        scorers: [
          { name: 'exact', kind: 'EXACT' },
          { name: 'odd', kind: 'REGEX' },
        ],
        summary: {
          passRate: 0.5,
          meanScores: [
            { scorer: 'exact', mean: 1 },
            { scorer: 'odd', mean: 0.5 },
          ],
        },
      },
    })
    expect(t.model.requests.length).toBe(calls)
  })

  it("keeps a person's score of a run by name, the latest of a name standing, and refuses one out of range", async () => {
    await dataset('human', words(1))
    const started = await start({ name: 'human', datasetId: 'human', promptRef: { id: 'echo-word', version: 1 }, scorers: exact })
    await ended(started.id)
    const runId = (await itemsOf(started.id))[0]!.runs[0]!.run!.id
    const score = async (input: { runId: string; name: string; value: number; comment?: string }) =>
      (await t.request(ScoreRunDocument, { input })).data!.scoreRun
    await score({ runId, name: 'helpful', value: 0.5 })
    await score({ runId, name: 'tone', value: 1, comment: 'kind' })
    const rescored = await score({ runId, name: 'helpful', value: 0.75, comment: 'on second look' })
    expect(rescored).toMatchObject({
      run: {
        humanScores: [
          { name: 'helpful', value: 0.75, comment: 'on second look', keyId: null },
          { name: 'tone', value: 1, comment: 'kind' },
        ],
      },
    })
    expect(await score({ runId, name: 'helpful', value: 1.5 })).toMatchObject({ __typename: 'InvalidRequestError' })
    expect(await score({ runId: 'no-such-run', name: 'helpful', value: 1 })).toMatchObject({ __typename: 'NotFoundError' })
  })

  it('refuses what it cannot run with a typed error, and starts nothing', async () => {
    const missing = (
      await t.request(StartExperimentDocument, {
        input: { name: 'x', datasetId: 'no-such', promptRef: { id: 'echo-word' }, scorers: exact },
      })
    ).data!.startExperiment
    expect(missing.__typename).toBe('NotFoundError')
    await dataset('refusals', words(1))
    const noPattern = (
      await t.request(StartExperimentDocument, {
        input: { name: 'x', datasetId: 'refusals', promptRef: { id: 'echo-word' }, scorers: [{ name: 're', kind: 'REGEX' }] },
      })
    ).data!.startExperiment
    expect(noPattern).toMatchObject({ __typename: 'InvalidRequestError' })
    expect(JSON.stringify(noPattern)).toContain('REGEX needs a pattern')
  })
})
