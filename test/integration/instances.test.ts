import type { ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { afterEach, describe, expect, it } from 'vitest'
import type { SessionEvent } from '../../src/domain/events.js'
import { openStore, type Store } from '../../src/store/store.js'
import { FakeVendorServer } from '../fixtures/fake-vendor.js'
import {
  AbortRunDocument,
  CatalogEventsDocument,
  type CatalogEventsSubscription,
  CreateSessionDocument,
  DeleteSessionDocument,
  EnqueuePromptDocument,
  type EnqueuePromptInput,
  QueueEntryDocument,
  RunPromptDocument,
  SessionDocument,
  SessionEventsDocument,
  type SessionEventsSubscription,
  SetPromptLabelDocument,
  UpsertPromptDocument,
} from '../generated/graphql.js'
import { catalogDir } from '../helpers/catalog-dir.js'
import { createTestDatabase, type TestDatabase } from '../helpers/databases.js'
import { words } from '../helpers/flow.js'
import { killHard, post, startServerProcess } from '../helpers/process.js'
import { Subscription } from '../helpers/server.js'
import { wsClient } from '../helpers/ws-client.js'

const TENANT = 'local'
const STALE_MS = 2_000
const INFLIGHT_GRACE_MS = 1_000
const cluster = process.env.DATABASE_URL && process.env.REDIS_URL

interface Instance {
  child: ChildProcess
  url: string
}

describe.skipIf(!cluster)('several instances on one PostgreSQL and Redis', () => {
  let database: TestDatabase | undefined
  let store: Store | undefined
  let vendor: FakeVendorServer | undefined
  const instances: Instance[] = []
  afterEach(async () => {
    for (const { child } of instances.splice(0)) await killHard(child)
    await vendor?.close()
    await store?.close()
    await database?.drop()
  })

  /** Starts `count` server processes sharing a fresh database and a fresh Redis prefix. */
  async function startInstances(count: number, extraEnv: Record<string, string> = {}): Promise<Instance[]> {
    database = await createTestDatabase('postgresql')
    const env = {
      REDIS_URL: process.env.REDIS_URL!,
      PROMPTLINE_REDIS_PREFIX: `test-${randomBytes(6).toString('hex')}:`,
      PROMPTLINE_HEARTBEAT_MS: '200',
      PROMPTLINE_STALE_MS: String(STALE_MS),
      PROMPTLINE_INFLIGHT_GRACE_MS: String(INFLIGHT_GRACE_MS),
      PROMPTLINE_REAP_INTERVAL_MS: '200',
      PROMPTLINE_MUTATIONS_PER_SECOND: '100000',
      PROMPTLINE_MAX_PENDING_ADMISSIONS: '1000',
      ...extraEnv,
    }
    // the first migrates the database; the others find it migrated
    const first = await startServerProcess(database.url, env)
    const rest = await Promise.all(Array.from({ length: count - 1 }, () => startServerProcess(database!.url, env)))
    instances.push(first, ...rest)
    store = await openStore(database.url)
    return [first, ...rest]
  }

  async function enqueue(instance: Instance, input: EnqueuePromptInput) {
    const result = (await post(instance.url, EnqueuePromptDocument, { input })).enqueuePrompt
    if (result.__typename !== 'EnqueuePromptPayload') throw new Error(`not admitted: ${JSON.stringify(result)}`)
    return result.entry
  }

  async function until<T>(what: string, probe: () => Promise<T | null | undefined | false>, timeoutMs = 30_000): Promise<T> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const value = await probe()
      if (value) return value
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
      await new Promise((r) => setTimeout(r, 50))
    }
  }

  it('runs 20 sessions × 5 prompts admitted through both instances exactly once each, in order, one at a time', async () => {
    const [a, b] = await startInstances(2)
    const both = [a!, b!]
    const sessions = Array.from({ length: 20 }, (_, i) => `s${i}`)
    for (const id of sessions)
      await post(both[Math.floor(Math.random() * 2)]!.url, CreateSessionDocument, { input: { id, defaultProfileId: 'fake-echo' } })
    const admitted = await Promise.all(
      sessions.flatMap((sessionId) =>
        Array.from({ length: 5 }, (_, i) =>
          enqueue(both[Math.floor(Math.random() * 2)]!, {
            sessionId,
            input: words(4, `${sessionId}p${i}-`),
            overrides: { extra: { tokenDelayMs: 5 } },
          }),
        ),
      ),
    )
    expect(admitted).toHaveLength(100)
    await until('every prompt to finish', async () => {
      const open = await Promise.all(sessions.map((s) => store!.entries.forSession(TENANT, s, false)))
      return open.every((e) => e.length === 0)
    })
    const runs = await store!.runs.list(TENANT, {}, null, 1000)
    for (const sessionId of sessions) {
      const entries = await store!.entries.forSession(TENANT, sessionId, true)
      expect(entries.map((e) => e.status)).toEqual(['COMPLETED', 'COMPLETED', 'COMPLETED', 'COMPLETED', 'COMPLETED'])
      const own = runs.filter((r) => r.sessionId === sessionId).sort((x, y) => x.startedAt.localeCompare(y.startedAt))
      // exactly one run per entry, each answering its own prompt, started in admission order, never overlapping
      expect(own.map((r) => r.queueId)).toEqual(entries.map((e) => e.queueId))
      expect(own.map((r) => r.output)).toEqual(entries.map((e) => e.request.input))
      for (let i = 1; i < own.length; i++) expect(own[i]!.startedAt >= own[i - 1]!.finishedAt!).toBe(true)
    }
  }, 120_000)

  it('admits one entry for one idempotency key sent to both at once, and streams a run on B to a subscriber on A', async () => {
    const [a, b] = await startInstances(2)
    await post(b!.url, CreateSessionDocument, { input: { id: 'shared', defaultProfileId: 'fake-echo' } })
    // reading its status makes B the session's owner
    expect((await post(b!.url, SessionDocument, { id: 'shared' })).session).toMatchObject({ status: 'IDLE' })
    const input = { sessionId: 'shared', input: words(60), idempotencyKey: 'once', overrides: { extra: { tokenDelayMs: 10 } } }
    const [fromA, fromB] = await Promise.all([enqueue(a!, input), enqueue(b!, input)])
    expect(fromA.queueId).toBe(fromB.queueId)
    expect(await store!.entries.forSession(TENANT, 'shared', true)).toHaveLength(1)
    // B's answer crosses to A as the same typed error
    const refused = (await post(a!.url, EnqueuePromptDocument, { input: { sessionId: 'shared', input: 'no', whenBusy: 'REJECT' } }))
      .enqueuePrompt
    expect(refused).toMatchObject({ __typename: 'SessionBusyError', code: 'SESSION_BUSY' })

    const client = wsClient(a!.url)
    try {
      const events = new Subscription(client, SessionEventsDocument as never, { sessionId: 'shared', afterSequence: 0 })
      await events.until(
        (r) => r.some((e) => (e.data as SessionEventsSubscription | undefined)?.sessionEvents.__typename === 'RunFinishedEvent'),
        20_000,
      )
      events.unsubscribe()
      const received = events.results.map((r) => (r.data as SessionEventsSubscription).sessionEvents)
      const sequences = received.map((e) => e.sequence)
      expect(sequences).toEqual(sequences.map((_, i) => sequences[0]! + i))
      const text = received.map((e) => (e.__typename === 'TokenDeltaEvent' ? e.text : '')).join('')
      expect(text).toBe(words(60))
    } finally {
      await client.dispose()
    }
    // A knows the session; deleted by its owner B (asked through A), it is gone on A too
    expect((await post(a!.url, SessionDocument, { id: 'shared' })).session).toMatchObject({ id: 'shared' })
    expect((await post(a!.url, DeleteSessionDocument, { id: 'shared' })).deleteSession).toMatchObject({ deletedId: 'shared' })
    expect((await post(a!.url, SessionDocument, { id: 'shared' })).session).toBeNull()
  }, 60_000)

  it('stops a run on B when A is asked to abort it, and B renders a prompt A changed', async () => {
    vendor = await FakeVendorServer.start('openai')
    vendor.defaults = { delayMs: 20 }
    const catalog = catalogDir({
      'catalog.yaml': `
backends:
  - { id: oa, kind: OPENAI, baseUrl: "${vendor.baseUrl}", credentialEnv: OA_KEY }
profiles:
  - { id: oa-plain, backendId: oa, model: gpt-test }
`,
    })
    const [a, b] = await startInstances(2, { PROMPTLINE_CATALOG: catalog, OA_KEY: 'sk-test' })
    await post(b!.url, CreateSessionDocument, { input: { id: 'stop', defaultProfileId: 'oa-plain' } })
    const entry = await enqueue(b!, { sessionId: 'stop', input: words(400) })
    const runId = await until('the run to stream', async () => {
      const live = (await post(a!.url, QueueEntryDocument, { sessionId: 'stop', queueId: entry.queueId })).queueEntry
      return live?.status === 'RUNNING' && vendor!.requests.length > 0 && live.runId
    })
    const aborted = (await post(a!.url, AbortRunDocument, { runId, reason: 'from A' })).abortRun
    if (aborted.__typename !== 'AbortRunPayload') throw new Error(aborted.__typename)
    expect(aborted.aborted).toBe(true)
    expect(aborted.run).toMatchObject({ status: 'ABORTED', terminalReason: 'ABORTED' })
    // durably, with only part of the answer, and the vendor saw its request closed
    const stored = await store!.runs.find(TENANT, runId)
    expect(stored).toMatchObject({ status: 'ABORTED', errorMessage: 'from A' })
    expect(stored!.output!.length).toBeLessThan(words(400).length)
    await until('the vendor to see the request closed', async () => vendor!.requests[0]!.finishedAt !== null)
    expect(vendor.requests[0]).toMatchObject({ closedByClient: true, ended: false })

    // B has the prompt cached from a run; A changes it; B's next run renders the new one
    const upsert = (content: string) =>
      post(a!.url, UpsertPromptDocument, { input: { id: 'greet', messages: [{ role: 'USER', content }] } })
    const run = async () => {
      const result = (await post(b!.url, RunPromptDocument, { input: { sessionId: 'stop', promptId: 'greet' } })).runPrompt
      if (result.__typename !== 'RunPromptPayload') throw new Error(result.__typename)
      return result.run?.output
    }
    await upsert('first version')
    expect(await run()).toBe('first version')
    await upsert('second version')
    expect(await run()).toBe('second version')
  }, 60_000)

  it('tells a catalogEvents subscriber on B of the label A moved, and B runs the version it names from then on', async () => {
    const [a, b] = await startInstances(2)
    const upsert = (content: string) =>
      post(a!.url, UpsertPromptDocument, {
        input: { id: 'labelled', messages: [{ role: 'USER', content }], defaultProfileId: 'fake-echo' },
      })
    const moveLabel = (label: string, version: number, expectedVersion: number | null) =>
      post(a!.url, SetPromptLabelDocument, { input: { promptId: 'labelled', label, version, expectedVersion } })
    await upsert('one')
    await upsert('two')
    await moveLabel('production', 1, null)
    await post(b!.url, CreateSessionDocument, { input: { id: 'labels', defaultProfileId: 'fake-echo' } })
    const runOnB = async () => {
      const result = (await post(b!.url, RunPromptDocument, { input: { sessionId: 'labels', promptId: 'labelled' } })).runPrompt
      if (result.__typename !== 'RunPromptPayload') throw new Error(result.__typename)
      return result.run?.output
    }
    expect(await runOnB()).toBe('one')

    const client = wsClient(b!.url)
    try {
      const events = new Subscription(client, CatalogEventsDocument as never, {})
      const moves = () => events.results.map((r) => (r.data as CatalogEventsSubscription).catalogEvents)
      // nothing says when B listens on Redis but its first event: move a spare label until one arrives
      for (let i = 0; events.results.length === 0; i++) {
        await moveLabel('ping', 1 + (i % 2), i === 0 ? null : 1 + ((i - 1) % 2))
        await events.until((r) => r.length > 0, 250).catch(() => {})
      }
      await moveLabel('production', 2, 1)
      await events.until(() => moves().some((e) => e.__typename === 'PromptLabelMovedEvent' && e.move.label === 'production'), 20_000)
      events.unsubscribe()
      expect(moves().at(-1)).toEqual({ __typename: 'PromptLabelMovedEvent', move: { label: 'production', version: 2, previousVersion: 1 } })
    } finally {
      await client.dispose()
    }
    expect(await runOnB()).toBe('two')
  }, 60_000)

  it('when one instance is killed mid-run, one survivor reaps its run once and finishes its queue', async () => {
    const [a, b, c] = await startInstances(3)
    // A creates the session (reading its status makes A the owner) and completes a first prompt
    await post(a!.url, CreateSessionDocument, { input: { id: 'orphan', defaultProfileId: 'fake-echo' } })
    const first = await enqueue(a!, { sessionId: 'orphan', input: 'first' })
    await until('the first prompt', async () => (await store!.entries.find(TENANT, 'orphan', first.queueId))?.status === 'COMPLETED')
    const long = await enqueue(a!, { sessionId: 'orphan', input: words(400), overrides: { extra: { tokenDelayMs: 20 } } })
    const next = [await enqueue(a!, { sessionId: 'orphan', input: 'second' }), await enqueue(a!, { sessionId: 'orphan', input: 'third' })]
    const runId = await until('the run to start', async () => {
      const live = (await post(a!.url, QueueEntryDocument, { sessionId: 'orphan', queueId: long.queueId })).queueEntry
      return live?.status === 'RUNNING' && live.runId
    })
    // its row marks the model call open before A dies
    await until('the open call to be written', async () => (await store!.runs.find(TENANT, runId))?.inFlightSince)
    await killHard(a!.child)
    const killedAt = Date.now()

    const reaped = await until('the run to be reaped', async () => {
      const run = await store!.runs.find(TENANT, runId)
      return run?.status === 'FAILED' && run
    })
    expect(reaped.terminalReason).toBe('STALE')
    // its model call was open: it got the in-flight grace on top of the stale bound
    expect(Date.parse(reaped.finishedAt!) - Date.parse(reaped.heartbeatAt!)).toBeGreaterThanOrEqual(STALE_MS + INFLIGHT_GRACE_MS)
    for (const { queueId } of next) {
      const done = await until('the queue to go on', async () => {
        const stored = await store!.entries.find(TENANT, 'orphan', queueId)
        return stored?.status === 'COMPLETED' && stored
      })
      expect(done.finishedAt).not.toBeNull()
    }
    // the survivor went on from the history A had written
    const history = await store!.sessions.messages(TENANT, 'orphan')
    expect(history.map((m) => `${m.position}:${m.role}:${m.content}`)).toEqual([
      '1:user:first',
      '2:assistant:first',
      '3:user:second',
      '4:assistant:second',
      '5:user:third',
      '6:assistant:third',
    ])
    const moved = (await store!.runs.list(TENANT, { sessionId: 'orphan' }, null, 10)).find((r) => r.output === 'second')!
    process.stdout.write(`instances: a dead instance's session moved in ${Date.parse(moved.startedAt) - killedAt} ms\n`)
    // b and c both raced to reap it: it ended once, with one RUN_FINISHED, and every sequence once
    const events: SessionEvent[] = await store!.events.after(TENANT, 'orphan', 0, 100_000)
    expect(events.filter((e) => e.type === 'RUN_FINISHED' && e.runId === runId)).toHaveLength(1)
    const sequences = events.map((e) => e.sequence)
    expect(new Set(sequences).size).toBe(sequences.length)
    expect(b && c).toBeTruthy()
  }, 90_000)
})
