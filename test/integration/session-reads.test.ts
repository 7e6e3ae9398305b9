import { createRequire } from 'node:module'
import { afterEach, describe, expect, it } from 'vitest'
import { SchedulePromptDocument, SessionsOverviewDocument } from '../generated/graphql.js'
import { createSession, enqueue, waitForEntry } from '../helpers/flow.js'
import { type InstancesInProcess, instancesInProcess } from '../helpers/instances.js'
import type { TestServer } from '../helpers/server.js'

/** Counts the writes (INSERT, UPDATE, DELETE) better-sqlite3 runs in this process, as the bench does. */
function countWrites(): { readonly count: number; stop(): void } {
  const Sqlite = createRequire(import.meta.url)('better-sqlite3')
  const probe = new Sqlite(':memory:')
  const Statement = Object.getPrototypeOf(probe.prepare('select 1'))
  probe.close()
  const original = Statement.run
  const counter = {
    count: 0,
    stop: () => {
      Statement.run = original
    },
  }
  Statement.run = function (this: { source: string }, ...args: unknown[]) {
    if (/^\s*(insert|update|delete)\b/i.test(this.source)) counter.count++
    return original.apply(this, args)
  }
  return counter
}

describe('reading sessions through an instance that holds none of them (sqlite)', () => {
  let instances: InstancesInProcess | undefined
  afterEach(async () => {
    await instances?.stop()
    instances = undefined
  })

  /** Instance a, with 100 sessions: the first has run a prompt, the second (when asked) has one scheduled. */
  async function hundredSessions(scheduleOne: boolean): Promise<[TestServer, TestServer, string | null]> {
    instances = await instancesInProcess('sqlite', ['a', 'b'])
    const [a, b] = instances.servers as [TestServer, TestServer]
    for (let i = 0; i < 100; i++) await createSession(a, `s${String(i).padStart(3, '0')}`)
    const ran = await enqueue(a, { sessionId: 's000', input: 'one answer' })
    await waitForEntry(a, 's000', ran.queueId, ['COMPLETED'])
    if (!scheduleOne) return [a, b, null]
    const { data } = await a.request(SchedulePromptDocument, {
      input: { sessionId: 's001', input: 'later', scheduleKey: 'k', debounceMs: 3_600_000 },
    })
    if (data?.schedulePrompt.__typename !== 'SchedulePromptPayload') throw new Error(JSON.stringify(data))
    return [a, b, data.schedulePrompt.entry.queueId]
  }

  async function overview(at: TestServer) {
    const writes = countWrites()
    try {
      const { data, errors } = await at.request(SessionsOverviewDocument, { first: 100 })
      expect(errors).toBeUndefined()
      return { sessions: data!.sessions.edges.map((e) => e.node), writes: writes.count }
    } finally {
      writes.stop()
    }
  }

  const owners = async () => {
    const rows = await Promise.all(
      Array.from({ length: 100 }, (_, i) => instances!.store.sessions.leaseOf('local', `s${String(i).padStart(3, '0')}`)),
    )
    return rows.map((lease) => lease?.owner ?? null)
  }

  it('answers status, lastSequence, messages and queue of 100 sessions held by the other instance with 0 writes, asking their holder', async () => {
    const [, b, scheduledId] = await hundredSessions(true)
    const { sessions, writes } = await overview(b)
    expect(writes).toBe(0)
    expect(sessions).toHaveLength(100)
    const byId = new Map(sessions.map((s) => [s.id, s]))
    expect(byId.get('s000')).toMatchObject({
      status: 'IDLE',
      messages: [
        { role: 'USER', content: 'one answer' },
        { role: 'ASSISTANT', content: 'one answer' },
      ],
    })
    expect(byId.get('s000')!.lastSequence).toBeGreaterThan(0)
    expect(byId.get('s001')).toMatchObject({ status: 'SCHEDULED', queue: [{ queueId: scheduledId, status: 'SCHEDULED', position: null }] })
    expect(sessions.filter((s) => s.status === 'IDLE')).toHaveLength(99)
    expect(new Set(await owners())).toEqual(new Set(['a']))
  })

  it('answers them from the store with 0 writes once no instance holds them, and takes no lease', async () => {
    const [a, b] = await hundredSessions(false)
    await a.app.drain() // hands its sessions on: with nothing waiting in them, nobody takes them
    const { sessions, writes } = await overview(b)
    expect(writes).toBe(0)
    const byId = new Map(sessions.map((s) => [s.id, s]))
    expect(byId.get('s000')).toMatchObject({ status: 'IDLE', messages: [{ content: 'one answer' }, { content: 'one answer' }] })
    expect(byId.get('s000')!.lastSequence).toBeGreaterThan(0)
    expect(byId.get('s000')!.queue).toEqual([expect.objectContaining({ status: 'COMPLETED', position: null })])
    expect(sessions.filter((s) => s.status === 'IDLE')).toHaveLength(100)
    expect(new Set(await owners())).toEqual(new Set([null]))
  })
})
