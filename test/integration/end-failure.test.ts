import { afterEach, describe, expect, it } from 'vitest'
import { RunDocument, SessionEventsDocument } from '../generated/graphql.js'
import { providers } from '../helpers/databases.js'
import { createSession, enqueue, slow, waitForEntry, words } from '../helpers/flow.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

type Event = { __typename: string; sequence: number; text?: string }

describe.each(providers)('a run whose end cannot be written (%s)', (provider) => {
  let t: TestServer | undefined
  afterEach(() => t?.stop({ dropDatabase: true }))

  it('keeps the deltas its end carried: they are written later, and the reaper ends the run with them', async () => {
    t = await startTestServer({
      provider,
      app: {
        // the deltas are still waiting to be written when the run ends: its end carries them
        events: { flushIntervalMs: 500 },
        durability: { heartbeatMs: 50, staleMs: 1_500, reapIntervalMs: 100 },
      },
    })
    const ledger = t.app.store.ledger
    const finish = ledger.finish.bind(ledger)
    let ends = 0
    ledger.finish = (end, stale) => (++ends === 1 ? Promise.reject(new Error('database unavailable')) : finish(end, stale))

    const s = await createSession(t, 'end-fails')
    const entry = await enqueue(t, { sessionId: s, input: words(10), overrides: slow(10) })
    const ended = await waitForEntry(t, s, entry.queueId, ['FAILED', 'COMPLETED'])
    expect(ends).toBe(2) // the owner's end, refused, then the reaper's
    const run = (await t.request(RunDocument, { id: ended.runId! })).data!.run!
    expect(run).toMatchObject({ status: 'FAILED', terminalReason: 'STALE', output: words(10) })

    const replay = t.subscribe(SessionEventsDocument, { sessionId: s, afterSequence: 0 })
    await replay.until((r) => r.some((e) => e.data?.sessionEvents.__typename === 'RunFinishedEvent'))
    replay.unsubscribe()
    const events = replay.results.map((r) => r.data!.sessionEvents as Event)
    const sequences = events.map((e) => e.sequence)
    expect(sequences).toEqual([...sequences].sort((a, b) => a - b))
    const text = events
      .filter((e) => e.__typename === 'TokenDeltaEvent')
      .map((e) => e.text)
      .join('')
    expect(text).toBe(words(10))
    expect(events.filter((e) => e.__typename === 'RunFinishedEvent')).toHaveLength(1)
  })
})
