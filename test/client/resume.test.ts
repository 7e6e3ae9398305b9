import type { ChildProcess } from 'node:child_process'
import { createPromptlineClient, type PromptlineClient, type SessionEvent } from 'promptline/client'
import { afterEach, describe, expect, it } from 'vitest'
import { createTestDatabase, providers, type TestDatabase } from '../helpers/databases.js'
import { words } from '../helpers/flow.js'
import { killHard, releaseAll, startServerProcess } from '../helpers/process.js'

const PROMPTS = 4

describe.each(providers)('promptline/client across a server crash (%s)', (provider) => {
  let database: TestDatabase | undefined
  let child: ChildProcess | undefined
  let client: PromptlineClient | undefined
  afterEach(async () => {
    await client?.close()
    await releaseAll(child, undefined, database)
  })

  it('streams a session through kill -9 and a restart: every event once, in order, to the last run end', async () => {
    database = await createTestDatabase(provider)
    const first = await startServerProcess(database.url)
    child = first.child
    const port = new URL(first.url).port
    client = createPromptlineClient({ url: `${first.url}/graphql`, retry: { initialDelayMs: 50, maxDelayMs: 500 } })

    const response = await fetch(`${first.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: 'mutation { createSession(input: { id: "resume", defaultProfileId: "fake-echo" }) { __typename } }' }),
    })
    expect(await response.json()).toEqual({ data: { createSession: { __typename: 'CreateSessionPayload' } } })

    const seen: SessionEvent[] = []
    let lastQueueId = ''
    let killed = false
    let allQueued = false
    const streamed = (async () => {
      for await (const event of client!.streamSession('resume', { afterSequence: 0 })) {
        seen.push(event)
        if (event.__typename === 'TokenDeltaEvent' && allQueued && !killed) {
          killed = true
          await killHard(child!) // mid-run, with prompts still queued behind it
          child = (await startServerProcess(database!.url, { PORT: port })).child
        }
        if (event.__typename === 'RunFinishedEvent' && event.run.queueId === lastQueueId) return
      }
    })()
    for (let i = 0; i < PROMPTS; i++) {
      const entry = await client.enqueue({ sessionId: 'resume', input: words(30, `p${i}-`), overrides: { extra: { tokenDelayMs: 20 } } })
      lastQueueId = entry.queueId
    }
    allQueued = true
    await streamed
    expect(killed).toBe(true)

    // what the log holds now, read by a second client after the fact
    const log: SessionEvent[] = []
    const reader = createPromptlineClient({ url: `http://127.0.0.1:${port}/graphql` })
    for await (const event of reader.streamSession('resume', { afterSequence: 0 })) {
      log.push(event)
      if (event.sequence === seen.at(-1)!.sequence) break
    }
    await reader.close()

    const sequences = seen.map((e) => e.sequence)
    expect(sequences).toEqual([...new Set(sequences)].sort((a, b) => a - b)) // no duplicate, in order
    const yielded = new Set(sequences)
    expect(log.filter((e) => !yielded.has(e.sequence))).toEqual([]) // no gap: every logged event was yielded
    // the only events yielded but not in the log are the killed process's last, never written
    const restartedAt = seen.findIndex((e, i) => i > 0 && e.sequence - seen[i - 1]!.sequence > 1)
    const logged = new Set(log.map((e) => e.sequence))
    const unlogged = seen.filter((e) => !logged.has(e.sequence))
    for (const event of unlogged) expect(seen.indexOf(event)).toBeLessThan(restartedAt === -1 ? seen.length : restartedAt)

    const ends = seen.filter((e) => e.__typename === 'RunFinishedEvent')
    expect(ends).toHaveLength(PROMPTS)
    expect(ends.map((e) => e.__typename === 'RunFinishedEvent' && e.run.status)).toEqual([
      'FAILED',
      ...Array(PROMPTS - 1).fill('COMPLETED'),
    ])
  })

  it('keeps every lifecycle event a subscriber was given through kill -9 the moment it arrived', async () => {
    database = await createTestDatabase(provider)
    let server = await startServerProcess(database.url)
    child = server.child
    const port = new URL(server.url).port
    const url = `http://127.0.0.1:${port}/graphql`
    client = createPromptlineClient({ url, retry: { initialDelayMs: 20, maxDelayMs: 200 } })
    await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: 'mutation { createSession(input: { id: "told", defaultProfileId: "fake-echo" }) { __typename } }' }),
    })
    // the server dies as each of the first lifecycle events reaches the subscriber, before anything else can happen
    const told: SessionEvent[] = []
    let kills = 0
    const streamed = (async () => {
      for await (const event of client!.streamSession('told', { afterSequence: 0 })) {
        if (event.__typename === 'TokenDeltaEvent') continue
        told.push(event)
        if (event.__typename === 'RunFinishedEvent') return
        if (kills++ < 3) {
          await killHard(child!)
          server = await startServerProcess(database!.url, { PORT: port })
          child = server.child
        }
      }
    })()
    // slow enough that the run has not ended (and written everything with its end) when a kill comes
    await client.enqueue({ sessionId: 'told', input: words(5), overrides: { extra: { tokenDelayMs: 300 } } })
    await streamed
    expect(kills).toBeGreaterThanOrEqual(2)

    const reader = createPromptlineClient({ url })
    const log = new Map<number, SessionEvent>()
    for await (const event of reader.streamSession('told', { afterSequence: 0 })) {
      log.set(event.sequence, event)
      if (event.sequence === told.at(-1)!.sequence) break
    }
    await reader.close()
    for (const event of told) expect(log.get(event.sequence)).toEqual(event)
  })
})
