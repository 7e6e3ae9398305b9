import type { ChildProcess } from 'node:child_process'
import { afterEach, describe, expect, it } from 'vitest'
import { openStore } from '../../src/store/store.js'
import {
  CreateSessionDocument,
  EnqueuePromptDocument,
  QueueEntryDocument,
  RunDocument,
  SessionEventsDocument,
} from '../generated/graphql.js'
import { createTestDatabase, providers, type TestDatabase } from '../helpers/databases.js'
import { waitForEntry, words } from '../helpers/flow.js'
import { post, startServerProcess } from '../helpers/process.js'
import { scrape } from '../helpers/prometheus.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

describe.each(providers)('a server restart (%s)', (provider) => {
  let database: TestDatabase
  let child: ChildProcess | undefined
  let server: TestServer | undefined
  afterEach(async () => {
    child?.kill('SIGKILL')
    await server?.stop()
    await database?.drop()
  })

  it('keeps queued entries and resumes them; the run cut off by the crash is FAILED/INTERRUPTED', async () => {
    database = await createTestDatabase(provider)
    const started = await startServerProcess(database.url)
    child = started.child
    await post(started.url, CreateSessionDocument, { input: { id: 'crash', defaultProfileId: 'fake-echo' } })
    const first = (
      await post(started.url, EnqueuePromptDocument, {
        input: { sessionId: 'crash', input: words(400), overrides: { extra: { tokenDelayMs: 50 } } },
      })
    ).enqueuePrompt
    const second = (await post(started.url, EnqueuePromptDocument, { input: { sessionId: 'crash', input: 'after the crash' } }))
      .enqueuePrompt
    if (first.__typename !== 'EnqueuePromptPayload' || second.__typename !== 'EnqueuePromptPayload') throw new Error('not admitted')
    // once it generates with its rows and some of its tokens written (20 s of tokens remain), kill it without warning
    const store = await openStore(database.url)
    try {
      for (;;) {
        const entry = (await post(started.url, QueueEntryDocument, { sessionId: 'crash', queueId: first.entry.queueId })).queueEntry
        const run = entry?.status === 'RUNNING' && (await store.runs.find('local', entry.runId!))
        const written = run ? await store.events.forRun('local', run.id, 0, 1000) : []
        if (run && run.status === 'GENERATING' && written.some((e) => e.type === 'TOKEN_DELTA')) break
      }
    } finally {
      await store.close()
    }
    child.kill('SIGKILL')
    await new Promise((r) => child!.once('exit', r))

    server = await startTestServer({ provider, database })
    const interrupted = await waitForEntry(server, 'crash', first.entry.queueId, ['FAILED'])
    expect(interrupted.error).toEqual({ code: 'INTERNAL', message: 'interrupted by a server restart' })
    const runResult = await server.request(RunDocument, { id: interrupted.runId! })
    expect(runResult.errors).toBeUndefined()
    const run = runResult.data!.run!
    expect(run).toMatchObject({ status: 'FAILED', terminalReason: 'INTERRUPTED', errorCode: 'INTERNAL' })

    const resumed = await waitForEntry(server, 'crash', second.entry.queueId, ['COMPLETED'])
    expect((await server.request(RunDocument, { id: resumed.runId! })).data!.run!.output).toBe('after the crash')

    // the replay shows the interrupted run ending, numbered above anything published before the crash
    const replay = server.subscribe(SessionEventsDocument, { sessionId: 'crash', afterSequence: 0 })
    await replay.until((r) =>
      r.some((e) => e.data?.sessionEvents.__typename === 'RunFinishedEvent' && e.data.sessionEvents.runId === resumed.runId),
    )
    replay.unsubscribe()
    const events = replay.results.map((r) => r.data!.sessionEvents)
    const sequences = events.map((e) => e.sequence)
    expect(sequences).toEqual([...sequences].sort((a, b) => a - b))
    expect(new Set(sequences).size).toBe(sequences.length)
    const finished = events.find((e) => e.__typename === 'RunFinishedEvent' && e.runId === run.id)
    expect(finished).toMatchObject({ run: { terminalReason: 'INTERRUPTED', status: 'FAILED' } })
    const beforeCrash = events.filter((e) => e.runId === run.id && e.__typename === 'TokenDeltaEvent')
    expect(beforeCrash.length).toBeGreaterThan(0)
    expect(finished!.sequence).toBeGreaterThan(Math.max(...beforeCrash.map((e) => e.sequence)))

    // the restarted server counts the run its recovery ended beside the one it ran
    const metric = await scrape(server.http.url)
    expect(metric('promptline_runs_total', { status: 'FAILED' })).toBe(1)
    expect(metric('promptline_runs_total', { status: 'COMPLETED' })).toBe(1)
  }, 60_000)

  it('on a graceful stop aborts the running prompt (SHUTDOWN), keeps the queued one, and resumes it at the next start', async () => {
    database = await createTestDatabase(provider)
    const first = await startTestServer({ provider, database })
    await first.request(CreateSessionDocument, { input: { id: 'graceful', defaultProfileId: 'fake-echo' } })
    const running = (
      await first.request(EnqueuePromptDocument, {
        input: { sessionId: 'graceful', input: words(100), overrides: { extra: { tokenDelayMs: 50 } } },
      })
    ).data!.enqueuePrompt
    const queued = (await first.request(EnqueuePromptDocument, { input: { sessionId: 'graceful', input: 'resume me' } })).data!
      .enqueuePrompt
    if (running.__typename !== 'EnqueuePromptPayload' || queued.__typename !== 'EnqueuePromptPayload') throw new Error('not admitted')
    const runId = (await waitForEntry(first, 'graceful', running.entry.queueId, ['RUNNING'])).runId!
    await first.stop() // shutdownGraceMs is 0 in tests

    server = await startTestServer({ provider, database })
    expect((await server.request(RunDocument, { id: runId })).data!.run).toMatchObject({ status: 'ABORTED', terminalReason: 'SHUTDOWN' })
    const resumed = await waitForEntry(server, 'graceful', queued.entry.queueId, ['COMPLETED'])
    expect((await server.request(RunDocument, { id: resumed.runId! })).data!.run!.output).toBe('resume me')
  })
})
