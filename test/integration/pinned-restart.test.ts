import type { ChildProcess } from 'node:child_process'
import { afterEach, describe, expect, it } from 'vitest'
import {
  CreateSessionDocument,
  EnqueuePromptDocument,
  QueueEntryDocument,
  RunsOfPromptDocument,
  SetPromptLabelDocument,
  UpsertPromptDocument,
} from '../generated/graphql.js'
import { createTestDatabase, providers, type TestDatabase } from '../helpers/databases.js'
import { slow, waitForEntry, words } from '../helpers/flow.js'
import { killHard, post, startServerProcess } from '../helpers/process.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

// What admission resolved is kept with the entry: a queued entry that outlives its server runs
// the version and the includes it was admitted with, whatever moved while it waited.
describe.each(providers)('a queued entry across kill -9 (%s)', (provider) => {
  let database: TestDatabase
  let child: ChildProcess | undefined
  let server: TestServer | undefined
  afterEach(async () => {
    if (child) await killHard(child)
    await server?.stop()
    await database?.drop()
  })

  it('runs the prompt version and includes it was admitted with after the label moved and the server was killed', async () => {
    database = await createTestDatabase(provider)
    const started = await startServerProcess(database.url)
    child = started.child
    const upsert = (id: string, content: string) =>
      post(started.url, UpsertPromptDocument, { input: { id, messages: [{ role: 'USER', content }], defaultProfileId: 'fake-echo' } })
    await upsert('part', 'old part')
    await upsert('pinned', 'one {{> part}} {{input}}')
    await upsert('pinned', 'two {{> part}} {{input}}')
    await post(started.url, SetPromptLabelDocument, { input: { promptId: 'pinned', label: 'production', version: 1 } })
    await post(started.url, CreateSessionDocument, { input: { id: 'waiting', defaultProfileId: 'fake-echo' } })
    const blocker = (
      await post(started.url, EnqueuePromptDocument, { input: { sessionId: 'waiting', input: words(400), overrides: slow(50) } })
    ).enqueuePrompt
    const queued = (await post(started.url, EnqueuePromptDocument, { input: { sessionId: 'waiting', promptId: 'pinned', input: 'q' } }))
      .enqueuePrompt
    if (blocker.__typename !== 'EnqueuePromptPayload' || queued.__typename !== 'EnqueuePromptPayload') throw new Error('not admitted')
    expect(queued.entry).toMatchObject({ promptVersion: 1, promptLabel: 'production' })

    // while it waits, the label moves and the included prompt changes; then the server dies
    await post(started.url, SetPromptLabelDocument, { input: { promptId: 'pinned', label: 'production', version: 2, expectedVersion: 1 } })
    await upsert('part', 'new part')
    const waiting = (await post(started.url, QueueEntryDocument, { sessionId: 'waiting', queueId: queued.entry.queueId })).queueEntry
    expect(waiting?.status).toBe('QUEUED')
    await killHard(child)
    child = undefined

    server = await startTestServer({ provider, database })
    const ran = await waitForEntry(server, 'waiting', queued.entry.queueId, ['COMPLETED'], 20_000)
    const runs = (await server.request(RunsOfPromptDocument, { promptId: 'pinned' })).data!.runs.edges.map((e) => e.node)
    expect(runs.find((r) => r.id === ran.runId)).toMatchObject({
      output: 'one old part q',
      promptVersion: 1,
      promptLabel: 'production',
      includes: [{ key: 'part', version: 1 }],
    })
  })
})
