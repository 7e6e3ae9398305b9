import type { ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { print } from 'graphql'
import type { Client } from 'graphql-ws'
import { expect, vi } from 'vitest'
import type { SessionEvent } from '../../src/domain/events.js'
import { openStore, type Store } from '../../src/store/store.js'
import {
  CreateSessionDocument,
  EnqueuePromptDocument,
  type EnqueuePromptMutation,
  SessionEventsDocument,
  type SessionEventsSubscription,
} from '../generated/graphql.js'
import { words } from './flow.js'
import { killHard, post, startServerProcess } from './process.js'
import { Subscription } from './server.js'
import { wsClient } from './ws-client.js'

const TENANT = 'local'
/** Short enough that an outage outlasts every lease and heartbeat. */
const STALE_MS = 2_000
const ADMISSION_EVERY_MS = 100

interface Instance {
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

/** Two server processes on one database and one Redis, each holding the sessions it created, each session watched from the other. */
export class TwoInstancesUnderLoad {
  private readonly clients: Client[] = []
  private readonly watched = new Map<string, Subscription<SessionEventsSubscription>>()
  private readonly answers: { during: boolean; answer: Answer }[] = []
  private readonly sessions = ['s0', 's1', 's2', 's3', 's4', 's5']

  private constructor(
    readonly a: Instance,
    readonly b: Instance,
    private readonly store: Store,
  ) {}

  static async start(databaseUrl: string, redisUrl: string): Promise<TwoInstancesUnderLoad> {
    const env = {
      REDIS_URL: redisUrl,
      PROMPTLINE_REDIS_PREFIX: `test-${randomBytes(6).toString('hex')}:`,
      PROMPTLINE_HEARTBEAT_MS: '200',
      PROMPTLINE_STALE_MS: String(STALE_MS),
      PROMPTLINE_REAP_INTERVAL_MS: '200',
      PROMPTLINE_MUTATIONS_PER_SECOND: '100000',
      // admissions through the holder go on while Redis is away, and queue up
      PROMPTLINE_MAX_OUTSTANDING_PER_SESSION: '1000',
      LOG_FORMAT: 'json',
      LOG_LEVEL: 'info',
    }
    // the first migrates the database
    const a = await startServerProcess(databaseUrl, env)
    const b = await startServerProcess(databaseUrl, env)
    return new TwoInstancesUnderLoad(a, b, await openStore(databaseUrl))
  }

  /**
   * Creates and watches the sessions, then admits prompts through either instance, one after
   * another, while `outage` runs (it stops a dependency, waits, starts it again): twelve before
   * it, twelve after. `outage` calls `during` once the dependency is stopped: from then on
   * admissions count as during the outage, and it answers both instances' /readyz statuses.
   */
  async run(outage: (during: () => Promise<number[]>) => Promise<number[]>): Promise<{ readyDuring: number[] }> {
    const { a, b } = this
    for (const [i, id] of this.sessions.entries()) {
      const holder = i % 2 === 0 ? a : b
      await post(holder.url, CreateSessionDocument, { input: { id, defaultProfileId: 'fake-echo' } })
      const client = wsClient((holder === a ? b : a).url)
      this.clients.push(client)
      this.watched.set(id, new Subscription(client, SessionEventsDocument as never, { sessionId: id, afterSequence: 0 }))
    }
    let during = false
    let admitting = true
    // ten admissions a second, each a run of about 1.2 s
    const load = (async () => {
      for (let n = 0; admitting; n++) {
        const at = during
        const paced = new Promise((resolve) => setTimeout(resolve, ADMISSION_EVERY_MS))
        const answer = await enqueue(n % 3 === 0 ? b : a, this.sessions[n % this.sessions.length]!, `k${n}`)
        this.answers.push({ during: at, answer })
        await paced
      }
    })()
    const admitted = async (count: number) => {
      while (this.answers.length < count) await new Promise((resolve) => setImmediate(resolve))
    }
    await admitted(12)
    const readyDuring = await outage(async () => {
      during = true
      return Promise.all([a, b].map(async (instance) => (await fetch(`${instance.url}/readyz`)).status))
    })
    during = false
    await admitted(this.answers.length + 12)
    admitting = false
    await load
    return { readyDuring }
  }

  /** Resolves once both instances answer /readyz 200 again (they reconnect by themselves). */
  async expectReady(): Promise<void> {
    await vi.waitFor(
      async () => {
        const statuses = await Promise.all([this.a, this.b].map(async (instance) => (await fetch(`${instance.url}/readyz`)).status))
        expect(statuses).toEqual([200, 200])
      },
      { timeout: 15_000, interval: 100 },
    )
  }

  /** The codes of the admissions refused during the outage. */
  refusedDuring(): string[] {
    return this.answers.flatMap(({ during, answer }) => (during && 'code' in answer ? [answer.code] : []))
  }

  /** Waits for every acknowledged admission's run to end, and checks each ran once, completed, where it was admitted. */
  async expectEveryAdmissionRanOnce(): Promise<void> {
    const acknowledged = this.answers.flatMap(({ answer }) => ('queueId' in answer ? [answer.queueId] : []))
    const deadline = Date.now() + 60_000
    let runs = await this.store.runs.list(TENANT, {}, null, 1000)
    while (runs.filter((run) => run.finishedAt !== null).length < acknowledged.length && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200))
      runs = await this.store.runs.list(TENANT, {}, null, 1000)
    }
    expect(runs.map((run) => run.queueId).sort()).toEqual([...acknowledged].sort())
    expect(runs.filter((run) => run.status !== 'COMPLETED').map((run) => [run.status, run.terminalReason, run.errorMessage])).toEqual([])
  }

  /** Checks that each session's subscriber on the other instance was given exactly the session's log: no gap, no duplicate. */
  async expectSubscribersSawTheLog(): Promise<void> {
    for (const sessionId of this.sessions) {
      const log: SessionEvent[] = await this.store.events.after(TENANT, sessionId, 0, 100_000)
      const subscription = this.watched.get(sessionId)!
      await subscription.until((results) => results.at(-1)?.data?.sessionEvents.sequence === log.at(-1)!.sequence, 20_000)
      const seen = subscription.results.map(({ data }) => {
        const event = data!.sessionEvents
        return [event.sequence, event.runId, 'text' in event ? event.text : null]
      })
      // the same events, in the same order, none missed and none twice: what was delivered live is
      // what was written (a session loaded again numbers on from its next reserved block)
      const written = log.map((event) => [event.sequence, event.runId, event.type === 'TOKEN_DELTA' ? event.text : null])
      expect(seen).toEqual(written)
      expect(log.every((event, i) => i === 0 || event.sequence > log[i - 1]!.sequence)).toBe(true)
    }
  }

  /** The structured log lines of an instance. */
  logOf(instance: Instance): { message: string; downMs?: number }[] {
    return instance
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { message: string; downMs?: number })
  }

  async stop(): Promise<void> {
    for (const client of this.clients) await client.dispose()
    for (const instance of [this.a, this.b]) await killHard(instance.child)
    await this.store.close()
  }
}
