import type { ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { print } from 'graphql'
import type { Client } from 'graphql-ws'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { SessionEvent } from '../../src/domain/events.js'
import { openStore, type Store } from '../../src/store/store.js'
import {
  CreateSessionDocument,
  EnqueuePromptDocument,
  type EnqueuePromptMutation,
  SessionEventsDocument,
  type SessionEventsSubscription,
} from '../generated/graphql.js'
import { words } from '../helpers/flow.js'
import { type OwnPostgres, startOwnPostgres } from '../helpers/postgres-server.js'
import { killHard, post, startServerProcess } from '../helpers/process.js'
import { Subscription } from '../helpers/server.js'
import { wsClient } from '../helpers/ws-client.js'

const TENANT = 'local'
// short enough that the outage outlasts every lease and heartbeat: only the pause on takeovers keeps the runs where they are
const STALE_MS = 2_000
const OUTAGE_MS = 5_000

interface Instance {
  name: 'a' | 'b'
  child: ChildProcess
  url: string
  output: () => string
}

/** What an admission answered: its entry, or the code of the error that refused it. */
type Answer = { queueId: string } | { code: string }

async function enqueue(instance: Instance, sessionId: string, key: string): Promise<Answer> {
  const response = await fetch(`${instance.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      query: print(EnqueuePromptDocument),
      variables: { input: { sessionId, input: words(20, `${key}-`), idempotencyKey: key, overrides: { extra: { tokenDelayMs: 60 } } } },
    }),
  })
  const body = (await response.json()) as { data: EnqueuePromptMutation | null; errors?: { extensions: { code: string } }[] }
  const payload = body.data?.enqueuePrompt
  if (payload?.__typename === 'EnqueuePromptPayload') return { queueId: payload.entry.queueId }
  return { code: body.errors?.[0]?.extensions.code ?? payload?.__typename ?? 'NONE' }
}

describe.skipIf(!process.env.REDIS_URL)('two instances while PostgreSQL stops for 5 s and starts again', () => {
  let postgres: OwnPostgres
  let store: Store
  let a: Instance
  let b: Instance
  const clients: Client[] = []

  beforeAll(async () => {
    postgres = await startOwnPostgres()
    const env = {
      REDIS_URL: process.env.REDIS_URL!,
      PROMPTLINE_REDIS_PREFIX: `test-${randomBytes(6).toString('hex')}:`,
      PROMPTLINE_HEARTBEAT_MS: '200',
      PROMPTLINE_STALE_MS: String(STALE_MS),
      PROMPTLINE_REAP_INTERVAL_MS: '200',
      PROMPTLINE_MUTATIONS_PER_SECOND: '100000',
      LOG_FORMAT: 'json',
      LOG_LEVEL: 'info',
    }
    // the first migrates the database
    a = { name: 'a', ...(await startServerProcess(postgres.url, env)) }
    b = { name: 'b', ...(await startServerProcess(postgres.url, env)) }
    store = await openStore(postgres.url)
  }, 60_000)
  afterAll(async () => {
    for (const client of clients) await client.dispose()
    for (const instance of [a, b]) if (instance) await killHard(instance.child)
    await store?.close()
    await postgres?.remove()
  })

  it('loses no acknowledged admission, ends every run once where it ran, writes what subscribers saw, and answers UNAVAILABLE meanwhile', async () => {
    const sessions = ['s0', 's1', 's2', 's3', 's4', 's5']
    // each instance holds the sessions it created; each session is watched from the other instance
    const holder = (i: number) => (i % 2 === 0 ? a : b)
    const watched = new Map<string, Subscription<SessionEventsSubscription>>()
    for (const [i, id] of sessions.entries()) {
      await post(holder(i).url, CreateSessionDocument, { input: { id, defaultProfileId: 'fake-echo' } })
      const client = wsClient((holder(i) === a ? b : a).url)
      clients.push(client)
      watched.set(id, new Subscription(client, SessionEventsDocument as never, { sessionId: id, afterSequence: 0 }))
    }

    const answers: { at: 'before' | 'during' | 'after'; answer: Answer }[] = []
    let phase: 'before' | 'during' | 'after' = 'before'
    let admitting = true
    let sent = 0
    // admissions through either instance, to sessions either holds, one after another
    const load = (async () => {
      while (admitting) {
        const n = sent++
        const at = phase
        const answer = await enqueue(n % 3 === 0 ? b : a, sessions[n % sessions.length]!, `k${n}`)
        answers.push({ at, answer })
      }
    })()

    const ready = async (instance: Instance) => (await fetch(`${instance.url}/readyz`)).status
    while (answers.length < 12) await new Promise((resolve) => setImmediate(resolve))
    await postgres.stop()
    phase = 'during'
    const readyDuring = [await ready(a), await ready(b)]
    await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS))
    await postgres.start()
    phase = 'after'
    const afterStart = answers.length
    while (answers.length < afterStart + 12) await new Promise((resolve) => setImmediate(resolve))
    admitting = false
    await load

    const acknowledged = answers.flatMap(({ answer }) => ('queueId' in answer ? [answer.queueId] : []))
    const refusedDuring = answers.filter(({ at, answer }) => at === 'during' && 'code' in answer)
    expect(refusedDuring.length).toBeGreaterThan(0)
    expect(new Set(refusedDuring.map(({ answer }) => (answer as { code: string }).code))).toEqual(new Set(['UNAVAILABLE']))
    expect(readyDuring).toEqual([503, 503])
    expect([await ready(a), await ready(b)]).toEqual([200, 200])

    // every acknowledged admission ran to its end, once, in its session
    const deadline = Date.now() + 60_000
    let runs = await store.runs.list(TENANT, {}, null, 1000)
    while (runs.filter((run) => run.finishedAt !== null).length < acknowledged.length && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200))
      runs = await store.runs.list(TENANT, {}, null, 1000)
    }
    expect(runs.map((run) => run.queueId).sort()).toEqual([...acknowledged].sort())
    expect(runs.filter((run) => run.status !== 'COMPLETED').map((run) => [run.status, run.terminalReason, run.errorMessage])).toEqual([])

    for (const sessionId of sessions) {
      const log: SessionEvent[] = await store.events.after(TENANT, sessionId, 0, 100_000)
      const subscription = watched.get(sessionId)!
      await subscription.until((results) => results.at(-1)?.data?.sessionEvents.sequence === log.at(-1)!.sequence, 20_000)
      const seen = subscription.results.map(({ data }) => {
        const event = data!.sessionEvents
        return [event.sequence, event.runId, 'text' in event ? event.text : null]
      })
      // the same events, in the same order, with no gap: what was delivered live is what was written
      const written = log.map((event) => [event.sequence, event.runId, event.type === 'TOKEN_DELTA' ? event.text : null])
      expect(seen).toEqual(written)
      expect(written.map(([sequence]) => sequence)).toEqual(log.map((_, i) => i + 1))
    }
    // neither process restarted, and each told its operators of the outage and its end
    for (const instance of [a, b]) {
      expect(instance.child.exitCode).toBeNull()
      const lines = instance
        .output()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { message: string; downMs?: number })
      expect(lines.some((line) => line.message.startsWith('the database is unreachable'))).toBe(true)
      expect(lines.find((line) => line.message === 'the database is reachable again')?.downMs).toBeGreaterThan(OUTAGE_MS / 2)
    }
  }, 120_000)
})
