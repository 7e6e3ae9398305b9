import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FakeModelClient } from '../../src/providers/fake-client.js'
import { AbortRunDocument } from '../generated/graphql.js'
import { createSession, enqueue, waitForEntry, words } from '../helpers/flow.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

// One huge run must not starve every other request (the fuzz run saw /healthz wait 8 s).
describe('a 2-million-token run', () => {
  let t: TestServer
  beforeAll(async () => {
    t = await startTestServer({ provider: 'sqlite', app: { clients: { FAKE: new FakeModelClient() } } })
  })
  afterAll(() => t?.stop({ dropDatabase: true }))

  it('leaves the server answering other requests while it streams', async () => {
    const s = await createSession(t, 'huge')
    const entry = await enqueue(t, { sessionId: s, input: words(200), overrides: { extra: { repeat: 10_000 } } })
    const { runId } = await waitForEntry(t, s, entry.queueId, ['RUNNING'])
    const latencies: number[] = []
    for (let i = 0; i < 5; i++) {
      const started = performance.now()
      expect((await fetch(`${t.http.url}/healthz`)).status).toBe(200)
      latencies.push(performance.now() - started)
    }
    // every answer came while the run was still streaming
    expect((await waitForEntry(t, s, entry.queueId, ['RUNNING'])).status).toBe('RUNNING')
    console.info(`/healthz during a 2M-token run: ${latencies.map((ms) => ms.toFixed(1)).join(', ')} ms`)
    await t.request(AbortRunDocument, { runId: runId! })
    await waitForEntry(t, s, entry.queueId, ['CANCELLED'])
  })
})
