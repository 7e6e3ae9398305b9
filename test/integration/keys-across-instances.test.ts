import type { ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sha256Hex } from '../../src/domain/hash.js'
import { QueueEntryDocument } from '../generated/graphql.js'
import { createTestDatabase, type TestDatabase } from '../helpers/databases.js'
import {
  ADMIN_KEY,
  admitSlow,
  checkBudget,
  checkConcurrentRuns,
  checkExpiry,
  checkRequestsPerMinute,
  checkRevocation,
  checkRotation,
  createKey,
  gql,
  KEYS_CATALOG,
  TENANT,
  within,
} from '../helpers/key-checks.js'
import { killHard, startServerProcess } from '../helpers/process.js'

const STALE_MS = 2_000
const cluster = process.env.DATABASE_URL && process.env.REDIS_URL

// Keys, limits and budgets hold across two real server processes on one PostgreSQL and Redis.
describe.skipIf(!cluster)('keys, limits and budgets across two instances', () => {
  let database: TestDatabase | undefined
  const children: ChildProcess[] = []
  const release = async () => {
    for (const child of children.splice(0)) await killHard(child)
    await database?.drop()
  }

  /** Two server processes on a fresh database and Redis prefix, with the bootstrap admin key and the keys catalog. */
  async function startTwo(): Promise<string[]> {
    database = await createTestDatabase('postgresql')
    const env = {
      REDIS_URL: process.env.REDIS_URL!,
      PROMPTLINE_REDIS_PREFIX: `test-${randomBytes(6).toString('hex')}:`,
      PROMPTLINE_API_KEYS: `sha256:${sha256Hex(ADMIN_KEY)}:${TENANT}:admin`,
      PROMPTLINE_CATALOG: KEYS_CATALOG(),
      PROMPTLINE_HEARTBEAT_MS: '200',
      PROMPTLINE_STALE_MS: String(STALE_MS),
      PROMPTLINE_INFLIGHT_GRACE_MS: '500',
      PROMPTLINE_REAP_INTERVAL_MS: '200',
    }
    const first = await startServerProcess(database.url, env)
    const second = await startServerProcess(database.url, env)
    children.push(first.child, second.child)
    return [first.url, second.url]
  }

  describe('each check with keys of its own', () => {
    let urls: string[]
    beforeAll(async () => {
      urls = await startTwo()
    }, 60_000)
    afterAll(release)

    it('admits at most a key’s requests per minute, counted by both together', () => checkRequestsPerMinute(urls), 60_000)
    it('never lets concurrent admissions on both reserve past a key’s cost budget', () => checkBudget(urls), 60_000)
    it('refuses a key revoked on one instance on the other within a second, and closes its subscription there', () => checkRevocation(urls))
    it('keeps a rotated key’s old secret working on both through its grace only', () => checkRotation(urls))
    it('refuses an expired key on both', () => checkExpiry(urls))
    it('never runs more than a key’s concurrent runs at once across both', () => checkConcurrentRuns(urls), 60_000)
  })

  describe('an instance killed', () => {
    afterAll(release)
    it('gives the run slots of a killed instance back within the stale bound', () => slotsOfAKilledInstance(), 60_000)
  })

  async function slotsOfAKilledInstance(): Promise<void> {
    const [a, b] = await startTwo()
    const key = await createKey(a!, { limits: { concurrentRuns: 2 } })
    // A runs two long prompts, holding both slots; B's two wait for them
    const long = Array.from({ length: 60 }, (_, i) => `w${i}`).join(' ')
    const onA = await admitSlow([a!], key.secret, 2, 'held', [a!], long)
    const running = async (url: string, entry: { sessionId: string; queueId: string }) =>
      (await gql(url, ADMIN_KEY, QueueEntryDocument, entry)).data?.queueEntry?.status === 'RUNNING'
    await within(async () => (await running(a!, onA[0]!)) && (await running(a!, onA[1]!)), 10_000)
    const onB = await admitSlow([b!], key.secret, 2, 'waiting', [b!])
    const status = async (entry: { sessionId: string; queueId: string }) =>
      (await gql(b!, ADMIN_KEY, QueueEntryDocument, entry)).data?.queueEntry?.status
    expect([await status(onB[0]!), await status(onB[1]!)]).toEqual(['QUEUED', 'QUEUED'])
    await killHard(children[0]!)
    const killedAt = Date.now()
    await within(async () => (await status(onB[0]!)) !== 'QUEUED' && (await status(onB[1]!)) !== 'QUEUED', STALE_MS + 5_000)
    // the slots lapse within the stale bound; B asks again every second
    expect(Date.now() - killedAt).toBeLessThanOrEqual(STALE_MS + 1_500)
  }
})
