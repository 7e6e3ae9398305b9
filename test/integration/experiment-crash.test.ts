import type { ChildProcess } from 'node:child_process'
import { afterEach, describe, expect, it } from 'vitest'
import {
  AddDatasetItemsDocument,
  CreateDatasetDocument,
  ExperimentResultDocument,
  StartExperimentDocument,
  UpsertProfileDocument,
  UpsertPromptDocument,
} from '../generated/graphql.js'
import { createTestDatabase, providers, type TestDatabase } from '../helpers/databases.js'
import { killHard, post, startServerProcess } from '../helpers/process.js'

/** The server processes mark their experiments alive every 200 ms; a mark older than 2 s means nobody runs it. */
const ENV = { PROMPTLINE_HEARTBEAT_MS: '200', PROMPTLINE_STALE_MS: '2000', PROMPTLINE_REAP_INTERVAL_MS: '200' }

describe.each(providers)('an experiment whose server is killed (%s)', (provider) => {
  let database: TestDatabase | undefined
  const children: ChildProcess[] = []
  afterEach(async () => {
    for (const child of children.splice(0)) await killHard(child)
    await database?.drop()
  })

  it('ends FAILED once another server sees nobody runs it, with the runs it made kept and scored', async () => {
    database = await createTestDatabase(provider)
    const first = await startServerProcess(database.url, ENV)
    children.push(first.child)
    await post(first.url, UpsertPromptDocument, {
      input: { id: 'echo', messages: [{ role: 'USER', content: '{{word}}' }], defaultProfileId: 'fake-echo' },
    })
    await post(first.url, UpsertProfileDocument, {
      input: { id: 'slow', backendId: 'fake', model: 'echo', settings: { extra: { tokenDelayMs: 100 } } },
    })
    await post(first.url, CreateDatasetDocument, { input: { id: 'words' } })
    const items = Array.from({ length: 30 }, (_, i) => ({ variables: { word: `w${i}` }, expected: `w${i}` }))
    await post(first.url, AddDatasetItemsDocument, { input: { datasetId: 'words', items } })
    const input = {
      name: 'cut',
      datasetId: 'words',
      promptRef: { id: 'echo', version: 1 },
      profileId: 'slow',
      concurrency: 1,
      scorers: [{ name: 'exact', kind: 'EXACT' as const }],
    }
    const started = (await post(first.url, StartExperimentDocument, { input })).startExperiment
    if (started.__typename !== 'ExperimentPayload') throw new Error(JSON.stringify(started))
    const id = started.experiment.id
    await expect
      .poll(async () => (await post(first.url, ExperimentResultDocument, { id, first: 0 })).experiment!.progress.done, { timeout: 20_000 })
      .toBeGreaterThanOrEqual(2)
    await killHard(first.child)

    const second = await startServerProcess(database.url, ENV)
    children.push(second.child)
    await expect
      .poll(async () => (await post(second.url, ExperimentResultDocument, { id, first: 0 })).experiment!.status, { timeout: 20_000 })
      .toBe('FAILED')
    const ended = (await post(second.url, ExperimentResultDocument, { id, first: 30 })).experiment!
    expect(ended.errorMessage).toContain('the instance running it stopped')
    const done = ended.items.edges.filter((e) => e.node.runs[0]!.status === 'DONE')
    expect(done.length).toBeGreaterThanOrEqual(2)
    expect(done.length).toBeLessThan(30)
    for (const row of done) expect(row.node.runs[0]!.scores).toEqual([{ scorer: 'exact', value: 1, pass: true }])
  }, 60_000)
})
