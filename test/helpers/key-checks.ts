import type { TypedDocumentNode } from '@graphql-typed-document-node/core'
import { print } from 'graphql'
import { expect } from 'vitest'
import { sha256Hex } from '../../src/domain/hash.js'
import type { AppOptions } from '../../src/server/app.js'
import {
  ApiKeysDocument,
  CreateApiKeyDocument,
  type CreateApiKeyInput,
  CreateSessionDocument,
  EnqueueForKeyDocument,
  QueueEntryDocument,
  RevokeApiKeyDocument,
  RotateApiKeyDocument,
  SessionEventsDocument,
  type SessionEventsSubscription,
  ViewerDocument,
} from '../generated/graphql.js'
import { catalogDir } from './catalog-dir.js'
import type { TestDatabase } from './databases.js'
import { Subscription, startTestServer, type TestServer } from './server.js'
import { wsClient } from './ws-client.js'

/** The bootstrap admin key every check creates its keys with (PROMPTLINE_API_KEYS). */
export const ADMIN_KEY = 'bootstrap-admin-key-0123456789'
export const TENANT = 'acme'

/**
 * A catalog whose `priced-slow` profile can cost at most $0.0002 a run (100 output tokens at
 * $2 a million, input free) and streams one token every 300 ms, so a burst of admissions all
 * come before any run ends; `fake-echo` is the plain fake.
 */
export const KEYS_CATALOG = () =>
  catalogDir({
    'catalog.yaml': `
backends:
  - { id: fake, kind: FAKE }
  - { id: priced, kind: FAKE, prices: { echo: { inputPerMillion: 0, outputPerMillion: 2 } } }
profiles:
  - { id: fake-echo, backendId: fake, model: echo }
  - { id: priced-slow, backendId: priced, model: echo, settings: { maxTokens: 100, extra: { tokenDelayMs: 300 } } }
  - { id: slow-echo, backendId: fake, model: echo, settings: { extra: { tokenDelayMs: 400 } } }
`,
  })

export interface GraphQLAnswer<T> {
  data?: T
  errors?: { message: string; extensions?: Record<string, unknown> }[]
}

/** One operation over HTTP with `secret` as the key. */
export async function gql<T, V>(url: string, secret: string, document: TypedDocumentNode<T, V>, variables?: V): Promise<GraphQLAnswer<T>> {
  const response = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
    body: JSON.stringify({ query: print(document), variables }),
  })
  return (await response.json()) as GraphQLAnswer<T>
}

/** Creates a key with the admin key and answers its id and secret. */
export async function createKey(url: string, input: Partial<CreateApiKeyInput>): Promise<{ id: string; secret: string }> {
  const { data, errors } = await gql(url, ADMIN_KEY, CreateApiKeyDocument, { input: { name: 'k', role: 'WRITE', ...input } })
  const created = data?.createApiKey
  if (created?.__typename !== 'CreateApiKeyPayload') throw new Error(`createApiKey: ${JSON.stringify(created ?? errors)}`)
  return { id: created.key.id, secret: created.secret }
}

/** Sessions made with the admin key (their creation is not counted against the keys under test). */
async function sessions(url: string, count: number, prefix: string): Promise<string[]> {
  const ids = Array.from({ length: count }, (_, i) => `${prefix}-${i}`)
  for (const id of ids) await gql(url, ADMIN_KEY, CreateSessionDocument, { input: { id, defaultProfileId: 'fake-echo' } })
  return ids
}

/** Whether `secret` is taken as a key now (the viewer query answers). */
const accepted = async (url: string, secret: string) => (await gql(url, secret, ViewerDocument)).data?.viewer !== undefined

/** Polls until `probe` holds, at most `timeoutMs`; answers how long it took. */
export async function within(probe: () => Promise<boolean>, timeoutMs: number): Promise<number> {
  const started = Date.now()
  while (!(await probe())) {
    if (Date.now() - started > timeoutMs) throw new Error(`did not happen within ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  return Date.now() - started
}

/** 80 admissions, alternately to each instance, from a key allowed 30 requests a minute: exactly 30 pass. */
export async function checkRequestsPerMinute(urls: string[]): Promise<void> {
  const key = await createKey(urls[0]!, { limits: { requestsPerMinute: 30 } })
  const ids = await sessions(urls[0]!, 8, 'rpm')
  const answers = await Promise.all(
    Array.from({ length: 80 }, (_, i) =>
      gql(urls[i % urls.length]!, key.secret, EnqueueForKeyDocument, { input: { sessionId: ids[i % 8]!, input: `n ${i}` } }),
    ),
  )
  const admitted = answers.filter((a) => a.data?.enqueuePrompt.__typename === 'EnqueuePromptPayload')
  const refused = answers.filter((a) => a.errors?.[0]?.extensions?.code === 'RATE_LIMITED')
  expect(admitted).toHaveLength(30)
  expect(refused).toHaveLength(50)
  for (const answer of refused) {
    expect(answer.errors![0]!.extensions).toMatchObject({ limit: 'requestsPerMinute', retryAfterMs: expect.any(Number) })
    expect(answer.errors![0]!.extensions!.retryAfterMs as number).toBeGreaterThan(0)
  }
}

/**
 * 40 concurrent admissions, alternately to each instance, each able to cost $0.0002, under a
 * key's budget of $0.002: 10 run, 30 are refused with BudgetExceededError, and what the runs
 * cost (settled) stays within the budget, with nothing left reserved.
 */
export async function checkBudget(urls: string[]): Promise<void> {
  const key = await createKey(urls[0]!, { budget: { costUsd: 0.002, period: 'TOTAL' } })
  const ids = await sessions(urls[0]!, 40, 'budget')
  const answers = await Promise.all(
    ids.map((sessionId, i) =>
      gql(urls[i % urls.length]!, key.secret, EnqueueForKeyDocument, {
        input: { sessionId, input: 'one two three', profileId: 'priced-slow' },
      }),
    ),
  )
  const results = answers.map((a) => a.data!.enqueuePrompt)
  const admitted = results.flatMap((r, i) =>
    r.__typename === 'EnqueuePromptPayload' ? [{ sessionId: ids[i]!, queueId: r.entry.queueId }] : [],
  )
  const refused = results.filter((r) => r.__typename === 'BudgetExceededError')
  expect(admitted).toHaveLength(10)
  expect(refused).toHaveLength(30)
  for (const r of refused) expect(r).toMatchObject({ code: 'BUDGET_EXCEEDED', budget: 'keyCost', resetsAt: null })
  for (const r of refused) expect((r as { remaining: number }).remaining).toBeLessThan(0.0002)
  let spent = 0
  for (const { sessionId, queueId } of admitted) {
    let cost: number | null = null
    await within(async () => {
      const entry = (await gql(urls[0]!, ADMIN_KEY, QueueEntryDocument, { sessionId, queueId })).data?.queueEntry
      cost = entry?.status === 'COMPLETED' ? entry.run!.cost! : null
      return cost !== null
    }, 30_000)
    spent += cost!
  }
  expect(spent).toBeGreaterThan(0)
  expect(spent).toBeLessThanOrEqual(0.002)
  // the reservations were replaced by what the runs cost
  await within(async () => {
    const budget = (await gql(urls[0]!, ADMIN_KEY, ApiKeysDocument, { first: 50 })).data!.apiKeys.edges.find((e) => e.node.id === key.id)!
      .node.budget!
    return budget.reservedUsd === 0 && Math.abs(budget.usedUsd - spent) < 1e-9
  }, 10_000)
}

/**
 * A key revoked through the first instance is refused by the last within a second, and its
 * subscription there is closed (graphql-ws close code 4403).
 */
export async function checkRevocation(urls: string[]): Promise<void> {
  const key = await createKey(urls[0]!, {})
  const [sessionId] = await sessions(urls[0]!, 1, 'revoked')
  const last = urls.at(-1)!
  const client = wsClient(last, key.secret)
  const closed = new Promise<number>((resolve) => client.on('closed', (event) => resolve((event as { code: number }).code)))
  await gql(last, key.secret, EnqueueForKeyDocument, { input: { sessionId: sessionId!, input: 'still here' } })
  // from the session's start: the subscription is open once it has replayed its first event
  const events = new Subscription<SessionEventsSubscription>(client, SessionEventsDocument as never, {
    sessionId: sessionId!,
    afterSequence: 0,
  })
  await events.until((results) => results.length > 0)
  expect(await accepted(last, key.secret)).toBe(true)
  const revoked = await gql(urls[0]!, ADMIN_KEY, RevokeApiKeyDocument, { input: { id: key.id } })
  expect(revoked.data?.revokeApiKey.__typename).toBe('ApiKeyPayload')
  expect(await within(async () => !(await accepted(last, key.secret)), 1_000)).toBeLessThanOrEqual(1_000)
  expect(await closed).toBe(4403)
  const refused = await gql(last, key.secret, ViewerDocument)
  expect(refused.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED')
  await client.dispose()
}

/** A rotated key's old secret works through its grace and not after; the new one works at once. */
export async function checkRotation(urls: string[]): Promise<void> {
  const key = await createKey(urls[0]!, {})
  const rotated = await gql(urls[0]!, key.secret, RotateApiKeyDocument, { input: { id: key.id, graceSeconds: 2 } })
  if (rotated.data?.rotateApiKey.__typename !== 'RotateApiKeyPayload') throw new Error(JSON.stringify(rotated))
  const graceEnds = Date.now() + 2_000
  const { secret } = rotated.data.rotateApiKey
  for (const url of urls) {
    expect(await accepted(url, secret)).toBe(true)
    expect(await accepted(url, key.secret)).toBe(true)
  }
  const last = urls.at(-1)!
  await within(async () => !(await accepted(last, key.secret)), 4_000)
  expect(Date.now()).toBeGreaterThanOrEqual(graceEnds)
  for (const url of urls) expect(await accepted(url, key.secret)).toBe(false)
  expect(await accepted(last, secret)).toBe(true)
}

/** A key past its expiry is refused by every instance. */
export async function checkExpiry(urls: string[]): Promise<void> {
  const expiresAt = new Date(Date.now() + 1_500).toISOString()
  const key = await createKey(urls[0]!, { expiresAt })
  for (const url of urls) expect(await accepted(url, key.secret)).toBe(true)
  await within(async () => !(await accepted(urls.at(-1)!, key.secret)), 3_000)
  expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(expiresAt))
  for (const url of urls) {
    const refused = await gql(url, key.secret, ViewerDocument)
    expect(refused.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED')
  }
}

/** The most runs that were running at one moment, from their start and end times. */
function mostAtOnce(runs: readonly { startedAt: string; finishedAt: string }[]): number {
  const starts = runs.map((r) => Date.parse(r.startedAt))
  return Math.max(...starts.map((t) => runs.filter((r) => Date.parse(r.startedAt) <= t && t < Date.parse(r.finishedAt)).length))
}

/** Admits `count` slow prompts of `secret`'s key, alternately to each instance, each in a session of its own. */
export async function admitSlow(urls: string[], secret: string, count: number, prefix: string, via = urls, input = 'a slow answer') {
  const ids = await sessions(urls[0]!, count, prefix)
  const entries = []
  for (const [i, sessionId] of ids.entries()) {
    const answer = await gql(via[i % via.length]!, secret, EnqueueForKeyDocument, {
      input: { sessionId, input, profileId: 'slow-echo' },
    })
    if (answer.data?.enqueuePrompt.__typename !== 'EnqueuePromptPayload') throw new Error(JSON.stringify(answer))
    entries.push({ sessionId, queueId: answer.data.enqueuePrompt.entry.queueId })
  }
  return entries
}

/** Waits until the entry has run to COMPLETED and answers its run's times. */
export async function completedRun(url: string, entry: { sessionId: string; queueId: string }, timeoutMs = 60_000) {
  let run: { startedAt: string; finishedAt: string } | null = null
  await within(async () => {
    const found = (await gql(url, ADMIN_KEY, QueueEntryDocument, entry)).data?.queueEntry
    run = found?.status === 'COMPLETED' ? { startedAt: found.run!.startedAt, finishedAt: found.run!.finishedAt! } : null
    return run !== null
  }, timeoutMs)
  return run!
}

/** Six slow runs of a key with concurrentRuns 2, admitted alternately to each instance: never more than two run at once, and all complete. */
export async function checkConcurrentRuns(urls: string[]): Promise<void> {
  const key = await createKey(urls[0]!, { limits: { concurrentRuns: 2 } })
  const entries = await admitSlow(urls, key.secret, 6, 'concurrent')
  const runs = []
  for (const entry of entries) runs.push(await completedRun(urls[0]!, entry))
  expect(mostAtOnce(runs)).toBe(2)
}

/** A server on `provider` with the catalog `catalogYaml` and the bootstrap admin key of tenant `acme` (its client's key too). */
export function startWithAdminKey(
  provider: TestDatabase['provider'],
  catalogYaml: string,
  app: Partial<AppOptions> = {},
): Promise<TestServer> {
  return startTestServer({
    provider,
    apiKey: ADMIN_KEY,
    app: {
      catalogDir: catalogDir({ 'catalog.yaml': catalogYaml }),
      apiKeys: [{ sha256: sha256Hex(ADMIN_KEY), tenantId: TENANT, role: 'admin' }],
      ...app,
    },
  })
}
