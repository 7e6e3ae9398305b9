import type { ChildProcess } from 'node:child_process'
import { afterEach, describe, expect, it } from 'vitest'
import {
  AbortRunDocument,
  CreateWebhookSessionDocument,
  type EnqueuePromptInput,
  EnqueueWithWebhookDocument,
  QueueEntryDocument,
  RunWebhooksDocument,
  SessionDocument,
  SubmitToolResultsDocument,
} from '../generated/graphql.js'
import { createTestDatabase, providers, type TestDatabase } from '../helpers/databases.js'
import { createSession, slow, waitForEntry, words } from '../helpers/flow.js'
import { killHard, post, releaseAll, startServerProcess } from '../helpers/process.js'
import { startTestServer, type TestServer } from '../helpers/server.js'
import { newWebhookSecret, WebhookReceiver } from '../helpers/webhook-receiver.js'

const secret = newWebhookSecret()
const localSecrets = new Map([['local', secret]])

/** Enqueues with a webhook and returns the entry (fails the test on a typed error). */
async function enqueue(t: TestServer, input: EnqueuePromptInput) {
  const { data, errors } = await t.request(EnqueueWithWebhookDocument, { input })
  if (data?.enqueuePrompt.__typename !== 'EnqueuePromptPayload') throw new Error(`enqueuePrompt: ${JSON.stringify(data ?? errors)}`)
  return data.enqueuePrompt.entry
}

/** Polls a run's deliveries until `done` holds for them. */
async function deliveriesOf(
  request: (runId: string) => Promise<NonNullable<import('../generated/graphql.js').RunWebhooksQuery['run']> | null>,
  runId: string,
  done: (d: NonNullable<import('../generated/graphql.js').RunWebhooksQuery['run']>['webhookDeliveries']) => boolean,
  timeoutMs = 15_000,
) {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const deliveries = (await request(runId))?.webhookDeliveries ?? []
    if (done(deliveries)) return deliveries
    if (Date.now() > deadline) throw new Error(`deliveries of ${runId}: ${JSON.stringify(deliveries)}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

describe.each(providers)('webhooks (%s)', (provider) => {
  let server: TestServer | undefined
  let receiver: WebhookReceiver | undefined
  let child: ChildProcess | undefined
  let database: TestDatabase | undefined
  afterEach(async () => {
    await releaseAll(child, server, database ?? server?.database)
    await receiver?.close()
    child = server = database = receiver = undefined
  })
  const runOf = (t: TestServer) => async (id: string) => (await t.request(RunWebhooksDocument, { id })).data?.run ?? null

  it("posts each run's end once, signed, to the prompt's webhook or else its session's; a run without one posts nothing", async () => {
    receiver = await WebhookReceiver.start(secret)
    server = await startTestServer({ provider, app: { webhooks: { secrets: localSecrets } } })
    const t = server
    const created = await t.request(CreateWebhookSessionDocument, {
      input: { id: 'hooked', defaultProfileId: 'fake-echo', webhookUrl: `${receiver.url}/session?token=abc` },
    })
    expect(created.data?.createSession).toMatchObject({ session: { webhookUrl: `${receiver.url}/session?token=abc` } })
    await createSession(t, 'plain')

    const bySession = await enqueue(t, { sessionId: 'hooked', input: 'first' })
    expect(bySession.webhookUrl).toBe(`${receiver.url}/session?token=abc`)
    const own = await enqueue(t, { sessionId: 'hooked', input: 'second', webhookUrl: `${receiver.url}/own` })
    const long = await enqueue(t, { sessionId: 'hooked', input: words(400), overrides: slow(20) })
    const silent = await enqueue(t, { sessionId: 'plain', input: 'no hook' })
    const running = await waitForEntry(t, 'hooked', long.queueId, ['RUNNING'])
    const aborted = await t.request(AbortRunDocument, { runId: running.runId! })
    expect(aborted.data?.abortRun.__typename).toBe('AbortRunPayload')

    const posts = await receiver.until(3)
    const quiet = await waitForEntry(t, 'plain', silent.queueId, ['COMPLETED'])
    await new Promise((r) => setTimeout(r, 500)) // several polls: nothing more may come
    expect(receiver.received).toHaveLength(3)
    const entries = await Promise.all(
      [bySession, own, long].map(
        async (e) => (await t.request(QueueEntryDocument, { sessionId: 'hooked', queueId: e.queueId })).data!.queueEntry!,
      ),
    )
    const expected = [
      { path: '/session?token=abc', runId: entries[0]!.runId, status: 'COMPLETED' },
      { path: '/own', runId: entries[1]!.runId, status: 'COMPLETED' },
      { path: '/session?token=abc', runId: entries[2]!.runId, status: 'ABORTED' },
    ]
    const got = posts.map((p) => ({ path: p.path, runId: p.verified?.data.runId, status: p.verified?.data.status }))
    expect(got.sort((a, b) => String(a.runId).localeCompare(String(b.runId)))).toEqual(
      expected.sort((a, b) => String(a.runId).localeCompare(String(b.runId))),
    )
    for (const p of posts) {
      expect(p.verified).toMatchObject({ type: 'run.finished', data: { sessionId: 'hooked' } })
      expect(p.headers['webhook-id']).toBe(`run_${p.verified!.data.runId}`)
      expect(p.headers['content-type']).toBe('application/json')
    }
    const first = posts.find((p) => p.verified!.data.runId === entries[0]!.runId)!
    expect(first.verified!.data).toMatchObject({
      output: 'first',
      usage: { outputTokens: 1 },
      finishReason: 'STOP',
      vendorFinishReason: 'stop',
      refusal: null,
    })

    const delivered = await runOf(t)(entries[0]!.runId!)
    expect(delivered!.webhookDeliveries).toEqual([
      {
        id: `run_${entries[0]!.runId}`,
        event: 'run.finished',
        url: `${receiver.url}/session?token=abc`,
        status: 'DELIVERED',
        nextAttemptAt: null,
        attempts: [{ at: expect.any(String), statusCode: 200, error: null, durationMs: expect.any(Number) }],
      },
    ])
    expect((await runOf(t)(quiet.runId!))!.webhookDeliveries).toEqual([])
  })

  it('posts run.requires_action when a run starts waiting for tool results, then run.finished when it ends', async () => {
    receiver = await WebhookReceiver.start(secret)
    server = await startTestServer({ provider, app: { webhooks: { secrets: localSecrets } } })
    const t = server
    await createSession(t, 'tools-hooked')
    const tool = { name: 'get_weather', inputSchema: { type: 'object' } }
    const entry = await enqueue(t, {
      sessionId: 'tools-hooked',
      input: 'use get_weather',
      tools: [tool],
      webhookUrl: `${receiver.url}/tools`,
    })
    const [asked] = await receiver.until(1)
    expect(asked!.verified).toMatchObject({
      type: 'run.requires_action',
      data: {
        sessionId: 'tools-hooked',
        status: 'REQUIRES_ACTION',
        round: 0,
        pendingToolCalls: [{ name: 'get_weather', arguments: '{}' }],
      },
    })
    const runId = asked!.verified!.data.runId as string
    expect(asked!.headers['webhook-id']).toBe(`run_${runId}_round_0`)
    const callId = (asked!.verified!.data.pendingToolCalls as { callId: string }[])[0]!.callId
    await t.request(SubmitToolResultsDocument, { input: { runId, results: [{ callId, output: 'sunny' }] } })
    await waitForEntry(t, 'tools-hooked', entry.queueId, ['COMPLETED'])
    const posts = await receiver.until(2)
    expect(posts[1]!.verified).toMatchObject({ type: 'run.finished', data: { runId, status: 'COMPLETED', output: 'sunny' } })
  })

  it('retries a failing receiver on the schedule: the third try lands, and the run shows the three attempts', async () => {
    receiver = await WebhookReceiver.start(secret)
    receiver.answers = [500, 503]
    server = await startTestServer({ provider, app: { webhooks: { secrets: localSecrets, retryDelaysMs: [100, 100, 100] } } })
    await createSession(server, 's')
    const entry = await enqueue(server, { sessionId: 's', input: 'retry me', webhookUrl: `${receiver.url}/hook` })
    const ended = await waitForEntry(server, 's', entry.queueId, ['COMPLETED'])
    const [delivery] = await deliveriesOf(runOf(server), ended.runId!, (d) => d[0]?.status === 'DELIVERED')
    expect(delivery!.attempts.map((a) => [a.statusCode, a.error])).toEqual([
      [500, 'HTTP 500 Internal Server Error'],
      [503, 'HTTP 503 Service Unavailable'],
      [200, null],
    ])
    const posts = receiver.received
    expect(posts.map((p) => p.status)).toEqual([500, 503, 200])
    // every try is the same message, signed anew
    expect(new Set(posts.map((p) => p.headers['webhook-id']))).toEqual(new Set([delivery!.id]))
    expect(new Set(posts.map((p) => p.body)).size).toBe(1)
    expect(posts.every((p) => p.verified !== null)).toBe(true)
    // the schedule's delays were waited between tries
    const at = delivery!.attempts.map((a) => Date.parse(a.at))
    expect(at[1]! - at[0]!).toBeGreaterThanOrEqual(100)
    expect(at[2]! - at[1]!).toBeGreaterThanOrEqual(100)
  })

  it('gives up once the schedule is spent: FAILED, with every attempt and no next one', async () => {
    receiver = await WebhookReceiver.start(secret)
    receiver.answers = [500, 500, 500]
    server = await startTestServer({ provider, app: { webhooks: { secrets: localSecrets, retryDelaysMs: [50] } } })
    await createSession(server, 's')
    const entry = await enqueue(server, { sessionId: 's', input: 'never lands', webhookUrl: `${receiver.url}/hook` })
    const ended = await waitForEntry(server, 's', entry.queueId, ['COMPLETED'])
    const [delivery] = await deliveriesOf(runOf(server), ended.runId!, (d) => d[0]?.status === 'FAILED')
    expect(delivery).toMatchObject({ status: 'FAILED', nextAttemptAt: null })
    expect(delivery!.attempts.map((a) => a.statusCode)).toEqual([500, 500])
    await new Promise((r) => setTimeout(r, 300))
    expect(receiver.received).toHaveLength(2)
  })

  it('refuses a webhook it cannot sign or that is no http(s) URL, and admits nothing', async () => {
    server = await startTestServer({ provider })
    await createSession(server, 's')
    const unsigned = await server.request(EnqueueWithWebhookDocument, {
      input: { sessionId: 's', input: 'x', webhookUrl: 'http://127.0.0.1:9/hook' },
    })
    expect(unsigned.data?.enqueuePrompt).toMatchObject({ __typename: 'InvalidRequestError', field: 'input.webhookUrl' })
    expect(unsigned.data?.enqueuePrompt).toMatchObject({ message: expect.stringContaining('no webhook secret is configured') })
    const session = await server.request(CreateWebhookSessionDocument, { input: { id: 'h', webhookUrl: 'http://127.0.0.1:9/hook' } })
    expect(session.data?.createSession).toMatchObject({ __typename: 'InvalidRequestError', field: 'input.webhookUrl' })
    await server.stop()

    server = await startTestServer({ provider, database: server.database, app: { webhooks: { secrets: localSecrets } } })
    for (const webhookUrl of ['ftp://127.0.0.1/hook', 'not a url', `http://127.0.0.1/${'x'.repeat(2100)}`]) {
      const bad = await server.request(EnqueueWithWebhookDocument, { input: { sessionId: 's', input: 'x', webhookUrl } })
      expect(bad.data?.enqueuePrompt).toMatchObject({ __typename: 'InvalidRequestError', field: 'input.webhookUrl' })
    }
    const queue = await server.request(SessionDocument, { id: 's', includeTerminal: true })
    expect(queue.data?.session?.queue).toEqual([])
  })

  it('loses no delivery to a kill -9 between tries: the restarted server makes the next one', async () => {
    database = await createTestDatabase(provider)
    receiver = await WebhookReceiver.start(secret)
    receiver.answers = [500]
    const env = { PROMPTLINE_WEBHOOK_SECRET: secret, PROMPTLINE_WEBHOOK_RETRY_MS: '1500' }
    const first = await startServerProcess(database.url, env)
    child = first.child
    const runOf = async (url: string, id: string) => (await post(url, RunWebhooksDocument, { id })).run
    await post(first.url, CreateWebhookSessionDocument, {
      input: { id: 's', defaultProfileId: 'fake-echo', webhookUrl: `${receiver.url}/hook` },
    })
    const admitted = (await post(first.url, EnqueueWithWebhookDocument, { input: { sessionId: 's', input: 'survive' } })).enqueuePrompt
    if (admitted.__typename !== 'EnqueuePromptPayload') throw new Error(JSON.stringify(admitted))
    await receiver.until(1)
    let runId: string | null | undefined
    while (!runId)
      runId = (await post(first.url, QueueEntryDocument, { sessionId: 's', queueId: admitted.entry.queueId })).queueEntry?.runId
    // the failed try is on record, the next is due 1.5 s later: kill the server in between
    const [pending] = await deliveriesOf(
      (id) => runOf(first.url, id),
      runId,
      (d) => d[0]?.attempts.length === 1,
    )
    expect(pending).toMatchObject({ status: 'PENDING', attempts: [{ statusCode: 500 }] })
    await killHard(child)

    const second = await startServerProcess(database.url, env)
    child = second.child
    await receiver.until(2)
    const [delivered] = await deliveriesOf(
      (id) => runOf(second.url, id),
      runId,
      (d) => d[0]?.status === 'DELIVERED',
    )
    expect(delivered!.attempts.map((a) => a.statusCode)).toEqual([500, 200])
    expect(receiver.received.map((p) => p.verified?.data.runId)).toEqual([runId, runId])
  })
})
