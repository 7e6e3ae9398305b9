import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { EnqueuePromptDocument, SchedulePromptDocument, SteerPromptDocument } from '../generated/graphql.js'
import { providers } from '../helpers/databases.js'
import { createSession, enqueue, slow, waitForEntry, words } from '../helpers/flow.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

describe.each(providers)('admission limits (%s)', (provider) => {
  let t: TestServer
  let bytes: TestServer
  beforeAll(async () => {
    t = await startTestServer({
      provider,
      app: {
        limits: { maxOutstandingPerSession: 2, maxOutstandingBytesPerSession: 3000, maxPendingAdmissions: 4, maxPendingBytes: 1_000_000 },
      },
    })
    bytes = await startTestServer({ provider, app: { limits: { maxPendingBytes: 5000 } } })
  })
  afterAll(async () => {
    await t?.stop({ dropDatabase: true })
    await bytes?.stop({ dropDatabase: true })
  })

  /** Every stored entry and run of a session, to prove a refusal wrote nothing. */
  const trace = async (server: TestServer, sessionId: string) => ({
    entries: (await server.app.store.entries.forSession('local', sessionId, true)).map((e) => `${e.queueId}:${e.status}`).sort(),
    runs: (await server.app.store.runs.list('local', { sessionId }, null, 100)).length,
  })

  async function refused(server: TestServer, sessionId: string, attempt: () => Promise<unknown>, limit: string) {
    await server.app.flush()
    const before = await trace(server, sessionId)
    expect(await attempt()).toMatchObject({ __typename: 'QueueFullError', code: 'QUEUE_FULL', limit })
    await server.app.flush()
    expect(await trace(server, sessionId)).toEqual(before)
  }

  const enqueueResult = (server: TestServer, input: Parameters<typeof enqueue>[1]) =>
    server.request(EnqueuePromptDocument, { input }).then((r) => r.data!.enqueuePrompt)

  it('limits outstanding prompts per session, steers included', async () => {
    const s = await createSession(t, 'count')
    const running = await enqueue(t, { sessionId: s, input: words(40), overrides: slow(50) })
    await enqueue(t, { sessionId: s, input: 'queued' })
    await refused(t, s, () => enqueueResult(t, { sessionId: s, input: 'one too many' }), 'maxOutstandingPerSession')
    await waitForEntry(t, s, running.queueId, ['RUNNING'])
    await refused(
      t,
      s,
      () =>
        t
          .request(SteerPromptDocument, { input: { sessionId: s, queueId: running.queueId, steerId: 'st', text: 'x' } })
          .then((r) => r.data!.steerPrompt),
      'maxOutstandingPerSession',
    )
  })

  it('limits outstanding bytes per session', async () => {
    const s = await createSession(t, 'bytes')
    await refused(t, s, () => enqueueResult(t, { sessionId: s, input: 'x'.repeat(3500) }), 'maxOutstandingBytesPerSession')
  })

  it('limits pending admissions server-wide', async () => {
    for (const id of ['p1', 'p2', 'p3']) {
      await createSession(t, id)
      const { data } = await t.request(SchedulePromptDocument, {
        input: { sessionId: id, input: 'later', scheduleKey: 'k', debounceMs: 60_000 },
      })
      expect(data!.schedulePrompt.__typename).toBe('SchedulePromptPayload')
    }
    const s = await createSession(t, 'p4')
    await refused(t, s, () => enqueueResult(t, { sessionId: s, input: 'no room' }), 'maxPendingAdmissions')
  })

  it('keeps only the newest finished entries of a session', async () => {
    const retaining = await startTestServer({ provider, app: { limits: { retainedTerminalPerSession: 3 } } })
    try {
      const s = await createSession(retaining, 'retention')
      const ids: string[] = []
      for (let i = 0; i < 6; i++) {
        const entry = await enqueue(retaining, { sessionId: s, input: `prompt ${i}` })
        await waitForEntry(retaining, s, entry.queueId, ['COMPLETED'])
        ids.push(entry.queueId)
      }
      await retaining.app.flush()
      const kept = (await retaining.app.store.entries.forSession('local', s, true)).map((e) => e.queueId)
      // pruned in batches: between the limit and a tenth (at least one) more, always the newest
      expect(kept.length).toBeGreaterThanOrEqual(3)
      expect(kept.length).toBeLessThanOrEqual(4)
      expect(kept).toEqual(ids.slice(ids.length - kept.length))
    } finally {
      await retaining.stop({ dropDatabase: true })
    }
  })

  it('limits pending bytes server-wide', async () => {
    for (const id of ['b1', 'b2']) {
      await createSession(bytes, id)
      const { data } = await bytes.request(SchedulePromptDocument, {
        input: { sessionId: id, input: 'y'.repeat(2000), scheduleKey: 'k', debounceMs: 60_000 },
      })
      expect(data!.schedulePrompt.__typename).toBe('SchedulePromptPayload')
    }
    const s = await createSession(bytes, 'b3')
    await refused(
      bytes,
      s,
      () =>
        bytes
          .request(SchedulePromptDocument, { input: { sessionId: s, input: 'z'.repeat(2000), scheduleKey: 'k', debounceMs: 60_000 } })
          .then((r) => r.data!.schedulePrompt),
      'maxPendingBytes',
    )
  })
})
