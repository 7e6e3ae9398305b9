import { afterEach, describe, expect, it } from 'vitest'
import { RunDocument } from '../generated/graphql.js'
import { providers } from '../helpers/databases.js'
import { createSession, enqueue, slow, waitForEntry, words } from '../helpers/flow.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

describe.each(providers)('a run that stops making progress (%s)', (provider) => {
  let server: TestServer | undefined
  afterEach(() => server?.stop({ dropDatabase: true }))

  it('is stopped with NO_PROGRESS while it still heartbeats, and its session moves on', async () => {
    const durability = { heartbeatMs: 50, staleMs: 10_000, noProgressMs: 400 }
    server = await startTestServer({ provider, app: { durability } })
    await createSession(server, 'quiet')
    // a vendor that goes quiet: its first token would come after a minute
    const stuck = await enqueue(server, { sessionId: 'quiet', input: words(3), overrides: slow(60_000) })
    const next = await enqueue(server, { sessionId: 'quiet', input: 'next' })
    const ended = await waitForEntry(server, 'quiet', stuck.queueId, ['CANCELLED', 'FAILED', 'COMPLETED'])
    const run = (await server.request(RunDocument, { id: ended.runId! })).data!.run!
    expect(run).toMatchObject({ status: 'ABORTED', terminalReason: 'NO_PROGRESS', errorCode: 'GENERATION' })
    expect(ended).toMatchObject({ status: 'CANCELLED', error: { code: 'GENERATION' } })
    const after = await waitForEntry(server, 'quiet', next.queueId, ['COMPLETED'])
    expect((await server.request(RunDocument, { id: after.runId! })).data!.run!.output).toBe('next')
  })

  it('keeps a run that streams slowly but steadily', async () => {
    server = await startTestServer({ provider, app: { durability: { heartbeatMs: 50, staleMs: 10_000, noProgressMs: 400 } } })
    await createSession(server, 'steady')
    const steady = await enqueue(server, { sessionId: 'steady', input: words(8), overrides: slow(150) })
    const ended = await waitForEntry(server, 'steady', steady.queueId, ['CANCELLED', 'FAILED', 'COMPLETED'])
    expect(ended.status).toBe('COMPLETED')
  })
})
