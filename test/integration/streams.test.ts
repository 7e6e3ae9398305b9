import { print } from 'graphql'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LastSequenceDocument, RunDocument, RunEventsDocument, SessionEventsDocument } from '../generated/graphql.js'
import { providers } from '../helpers/databases.js'
import { createSession, enqueue, slow, waitForEntry, words } from '../helpers/flow.js'
import { startTestServer, type TestServer } from '../helpers/server.js'
import { wsClient } from '../helpers/ws-client.js'

type Event = { __typename: string; sequence: number; runId?: string | null; text?: string }

describe.each(providers)('resumable event streams (%s)', (provider) => {
  let t: TestServer
  beforeAll(async () => {
    t = await startTestServer({ provider })
  })
  afterAll(() => t?.stop({ dropDatabase: true }))

  const eventsOf = (results: { data?: { sessionEvents?: Event; runEvents?: Event } | null }[]) =>
    results.map((r) => (r.data!.sessionEvents ?? r.data!.runEvents)!) as Event[]

  it('gives a subscriber that reconnects with its last sequence exactly the events it missed', async () => {
    const s = await createSession(t, 'reconnect')
    const firstClient = wsClient(t.http.url)
    // from the start of the stream: what is published before the subscription is open is replayed
    const before = t.subscribe(SessionEventsDocument, { sessionId: s, afterSequence: 0 }, firstClient)
    const entry = await enqueue(t, { sessionId: s, input: words(25), overrides: slow(25) })
    await before.until((r) => r.filter((e) => e.data?.sessionEvents.__typename === 'TokenDeltaEvent').length >= 3)
    await firstClient.dispose()
    const seen = eventsOf(before.results)
    const last = seen.at(-1)!.sequence

    await new Promise((r) => setTimeout(r, 150)) // events go on while nobody listens
    const after = t.subscribe(SessionEventsDocument, { sessionId: s, afterSequence: last }, wsClient(t.http.url))
    await after.until((r) => r.some((e) => e.data?.sessionEvents.__typename === 'RunFinishedEvent'))
    after.unsubscribe()
    const resumed = eventsOf(after.results)

    const all = t.subscribe(SessionEventsDocument, { sessionId: s, afterSequence: 0 }, wsClient(t.http.url))
    await all.until((r) => r.some((e) => e.data?.sessionEvents.__typename === 'RunFinishedEvent'))
    all.unsubscribe()
    const everything = eventsOf(all.results)

    expect(resumed[0]!.sequence).toBeGreaterThan(last)
    expect([...seen, ...resumed].map((e) => e.sequence)).toEqual(everything.map((e) => e.sequence))
    const run = (await t.request(RunDocument, { id: (await waitForEntry(t, s, entry.queueId, ['COMPLETED'])).runId! })).data!.run!
    const text = (events: Event[]) =>
      events
        .filter((e) => e.__typename === 'TokenDeltaEvent')
        .map((e) => e.text)
        .join('')
    expect(text([...seen, ...resumed])).toBe(run.output)
    expect(text(everything)).toBe(words(25))
  })

  it('starts a stream from now with afterSequence: Session.lastSequence, and resumes it from there', async () => {
    const s = await createSession(t, 'from-now')
    expect((await t.request(LastSequenceDocument, { id: s })).data!.session!.lastSequence).toBe(0)
    const first = await enqueue(t, { sessionId: s, input: 'the first run' })
    await waitForEntry(t, s, first.queueId, ['COMPLETED'])
    const lastSequence = (await t.request(LastSequenceDocument, { id: s })).data!.session!.lastSequence
    const everything = t.subscribe(SessionEventsDocument, { sessionId: s, afterSequence: 0 })
    await everything.until((r) => r.some((e) => e.data?.sessionEvents.__typename === 'RunFinishedEvent'))
    everything.unsubscribe()
    expect(lastSequence).toBe(eventsOf(everything.results).at(-1)!.sequence)

    const fromNow = t.subscribe(SessionEventsDocument, { sessionId: s, afterSequence: lastSequence })
    await enqueue(t, { sessionId: s, input: 'the second run' })
    await fromNow.until((r) => r.some((e) => e.data?.sessionEvents.__typename === 'RunFinishedEvent'))
    fromNow.unsubscribe()
    const events = eventsOf(fromNow.results)
    expect(events[0]!.sequence).toBe(lastSequence + 1)
    expect(events.filter((e) => e.__typename === 'RunStartedEvent')).toHaveLength(1)
  })

  it('replays a run that already ended, then completes', async () => {
    const s = await createSession(t, 'replay')
    const entry = await enqueue(t, { sessionId: s, input: 'replay these words please' })
    const runId = (await waitForEntry(t, s, entry.queueId, ['COMPLETED'])).runId!
    const replay = t.subscribe(RunEventsDocument, { runId })
    await replay.done()
    const events = eventsOf(replay.results)
    // the entry's claim starts the run's stream, then the run's start
    expect(events.slice(0, 2).map((e) => e.__typename)).toEqual(['QueueEntryEvent', 'RunStartedEvent'])
    expect(events.at(-1)!.__typename).toBe('RunFinishedEvent')
    expect(events.every((e) => e.runId === runId)).toBe(true)
    expect(
      events
        .filter((e) => e.__typename === 'TokenDeltaEvent')
        .map((e) => e.text)
        .join(''),
    ).toBe('replay these words please')
    expect(events.map((e) => e.__typename)).toContain('MessageCreatedEvent')

    // resuming in the middle gets exactly the rest
    const middle = events[2]!.sequence
    const rest = t.subscribe(RunEventsDocument, { runId, afterSequence: middle })
    await rest.done()
    expect(eventsOf(rest.results).map((e) => e.sequence)).toEqual(events.filter((e) => e.sequence > middle).map((e) => e.sequence))
  })

  it('follows a live run to its end over runEvents', async () => {
    const s = await createSession(t, 'live-run')
    const entry = await enqueue(t, { sessionId: s, input: words(8), overrides: slow(20) })
    const runId = (await waitForEntry(t, s, entry.queueId, ['RUNNING'])).runId!
    const live = t.subscribe(RunEventsDocument, { runId })
    await live.done()
    const events = eventsOf(live.results)
    expect(events.at(-1)!.__typename).toBe('RunFinishedEvent')
    expect(
      events
        .filter((e) => e.__typename === 'TokenDeltaEvent')
        .map((e) => e.text)
        .join(''),
    ).toBe(words(8))
  })

  it('merges token deltas into fewer events without changing the text', async () => {
    const s = await createSession(t, 'coalesce')
    const entry = await enqueue(t, { sessionId: s, input: words(300) })
    const runId = (await waitForEntry(t, s, entry.queueId, ['COMPLETED'])).runId!
    const replay = t.subscribe(RunEventsDocument, { runId })
    await replay.done()
    const deltas = eventsOf(replay.results).filter((e) => e.__typename === 'TokenDeltaEvent')
    expect(deltas.map((e) => e.text).join('')).toBe(words(300))
    expect(deltas.length).toBeLessThan(300 / 4)
    expect(deltas[0]!.text).toBe('w0 ') // the first token goes out alone, at once
  })

  it("answers NOT_FOUND for an unknown session's or run's stream", async () => {
    const session = t.subscribe(SessionEventsDocument, { sessionId: 'no-such-session' })
    await session.until((r) => r.length > 0 || session.completed)
    expect(session.results[0]?.errors?.[0]?.extensions?.code).toBe('NOT_FOUND')
    const run = t.subscribe(RunEventsDocument, { runId: 'no-such-run' })
    await run.until((r) => r.length > 0 || run.completed)
    expect(run.results[0]?.errors?.[0]?.extensions?.code).toBe('NOT_FOUND')
  })

  it('streams over Server-Sent Events too', async () => {
    const s = await createSession(t, 'sse')
    const entry = await enqueue(t, { sessionId: s, input: 'over sse' })
    const runId = (await waitForEntry(t, s, entry.queueId, ['COMPLETED'])).runId!
    const response = await fetch(`${t.http.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ query: print(RunEventsDocument), variables: { runId } }),
    })
    expect(response.headers.get('content-type')).toContain('text/event-stream')
    const body = await response.text()
    const events = body
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => JSON.parse(line.slice(6)))
      .filter((payload) => payload.data)
      .map((payload) => payload.data.runEvents as Event)
    expect(events.at(-1)!.__typename).toBe('RunFinishedEvent')
    expect(
      events
        .filter((e) => e.__typename === 'TokenDeltaEvent')
        .map((e) => e.text)
        .join(''),
    ).toBe('over sse')
  })
})
