import { afterEach, describe, expect, it } from 'vitest'
import { EnqueuePromptDocument, SessionEventsDocument } from '../generated/graphql.js'
import { providers } from '../helpers/databases.js'
import { createSession, enqueue, slow, waitForEntry, words } from '../helpers/flow.js'
import { type InstancesInProcess, instancesInProcess } from '../helpers/instances.js'
import type { TestServer } from '../helpers/server.js'

/**
 * The several-instance logic (leases, calls to a session's owner, take-over) with two apps in
 * one process: one store and one in-memory fan-out, each app under its own instance id.
 * `instances.test.ts` runs the same logic as processes on PostgreSQL and Redis.
 */
describe.each(providers)('two instances in one process (%s)', (provider) => {
  let instances: InstancesInProcess | undefined
  afterEach(async () => {
    await instances?.stop()
    instances = undefined
  })

  async function startPair(): Promise<[TestServer, TestServer]> {
    instances = await instancesInProcess(provider, ['a', 'b'], { durability: { reapIntervalMs: 50 } })
    return instances.servers as [TestServer, TestServer]
  }

  it("runs a prompt asked of B at the session's owner A, streams its events to B's subscriber, and returns A's typed refusal through B", async () => {
    const [a, b] = await startPair()
    const sessionId = await createSession(a, 'held-by-a')
    const events = b.subscribe(SessionEventsDocument, { sessionId, afterSequence: 0 })
    const running = await enqueue(b, { sessionId, input: words(30), overrides: slow(10) })
    await waitForEntry(b, sessionId, running.queueId, ['RUNNING'])
    const refused = (await b.request(EnqueuePromptDocument, { input: { sessionId, input: 'no', whenBusy: 'REJECT' } })).data!
    expect(refused.enqueuePrompt).toMatchObject({ __typename: 'SessionBusyError', code: 'SESSION_BUSY' })

    await events.until((r) => r.some((e) => e.data?.sessionEvents.__typename === 'RunFinishedEvent'))
    events.unsubscribe()
    const deltas = events.results.map((r) => r.data!.sessionEvents).filter((e) => e.__typename === 'TokenDeltaEvent')
    expect(deltas.map((e) => (e.__typename === 'TokenDeltaEvent' ? e.text : '')).join('')).toBe(words(30))
    expect(a.model.requests.map((r) => r.messages.at(-1)?.content)).toEqual([words(30)])
    expect(b.model.requests).toEqual([])
  })

  it("gives a draining instance's queued prompts to the other, which runs them after the history so far", async () => {
    const [a, b] = await startPair()
    const sessionId = await createSession(a, 'handed-on')
    await enqueue(a, { sessionId, input: 'answered at a' })
    const running = await enqueue(a, { sessionId, input: words(200), overrides: slow(20) })
    const queued = await enqueue(a, { sessionId, input: 'answered at b' })
    await waitForEntry(a, sessionId, running.queueId, ['RUNNING'])

    await a.app.drain()
    const done = await waitForEntry(b, sessionId, queued.queueId, ['COMPLETED', 'FAILED', 'CANCELLED'])
    expect(done.status).toBe('COMPLETED')
    const atB = b.model.requests.map((r) => r.messages.map((m) => m.content))
    expect(atB).toEqual([['answered at a', 'answered at a', 'answered at b']])
  })
})
