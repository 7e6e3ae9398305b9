import { existsSync, readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { FakeVendorServer } from '../fixtures/fake-vendor.js'
import {
  AbortRunDocument,
  BackendCapacityDocument,
  EnqueuePromptDocument,
  RunDetailsDocument,
  RunTokensDocument,
  SessionQueueRunsDocument,
  SessionsTotalsDocument,
  SessionTotalsDocument,
} from '../generated/graphql.js'
import { catalogDir } from '../helpers/catalog-dir.js'
import { providers } from '../helpers/databases.js'
import { createSession, enqueue, waitForEntry } from '../helpers/flow.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

const OA_KEY = 'sk-openai-secret-0123456789'
const AN_KEY = 'sk-ant-secret-9876543210'
const PERSON_SCHEMA = {
  type: 'object',
  required: ['name', 'age'],
  additionalProperties: false,
  properties: { name: { type: 'string' }, age: { type: 'integer' } },
}

function catalog(openai: FakeVendorServer, anthropic: FakeVendorServer): string {
  const retry = '{ maxAttempts: 3, baseDelayMs: 5, maxDelayMs: 2000 }'
  return catalogDir({
    'catalog.yaml': `
backends:
  - { id: fake, kind: FAKE }
  - id: oa
    kind: OPENAI
    baseUrl: ${openai.baseUrl}
    credentialEnv: OA_KEY
    retry: ${retry}
    prices: { gpt-test: { inputPerMillion: 1.5, outputPerMillion: 4 } }
  - id: an
    kind: ANTHROPIC
    baseUrl: ${anthropic.baseUrl}
    credentialEnv: AN_KEY
    retry: ${retry}
    prices: { claude-test: { inputPerMillion: 3, outputPerMillion: 15 } }
  - { id: oa-serial, kind: OPENAI, baseUrl: "${openai.baseUrl}", credentialEnv: OA_KEY, capacity: { maxActive: 1 } }
  - { id: oa-serial-patient, kind: OPENAI, baseUrl: "${openai.baseUrl}", credentialEnv: OA_KEY, capacity: { maxActive: 1 }, retry: { maxAttempts: 2, baseDelayMs: 60000, maxDelayMs: 60000 } }
  - { id: oa-adaptive, kind: OPENAI, baseUrl: "${openai.baseUrl}", credentialEnv: OA_KEY, retry: ${retry}, capacity: { maxActive: 8 } }
  - { id: an-adaptive, kind: ANTHROPIC, baseUrl: "${anthropic.baseUrl}", credentialEnv: AN_KEY, retry: ${retry}, capacity: { maxActive: 8 } }
  - { id: oa-tight, kind: OPENAI, baseUrl: "${openai.baseUrl}", credentialEnv: OA_KEY, capacity: { maxAccepted: 1, maxWaiting: 1 } }
profiles:
  - { id: fake-echo, backendId: fake, model: echo }
  - { id: oa-plain, backendId: oa, model: gpt-test }
  - { id: an-plain, backendId: an, model: claude-test }
  - { id: oa-main, backendId: oa, model: gpt-test, candidates: [an-plain] }
  - { id: keyless, backendId: oa, model: gpt-test, credentialEnv: MISSING_KEY, candidates: [oa-plain] }
  - { id: keyless-too, backendId: an, model: claude-test, credentialEnv: ALSO_MISSING }
  - { id: all-keyless, backendId: oa, model: gpt-test, credentialEnv: MISSING_KEY, candidates: [keyless-too] }
  - { id: serial, backendId: oa-serial, model: gpt-test }
  - { id: tight, backendId: oa-tight, model: gpt-test }
  - { id: patient, backendId: oa-serial-patient, model: gpt-test }
  - { id: adaptive, backendId: oa-adaptive, model: gpt-test }
  - { id: an-adaptive, backendId: an-adaptive, model: claude-test }
  - { id: an-second, backendId: an, model: claude-second }
prompts:
  - id: race
    parallel: { profiles: [oa-plain, an-plain], select: FIRST_VALID }
    output: { kind: JSON }
    messages: [{ role: user, content: "{{input}}" }]
  - id: contest
    parallel: { profiles: [an-plain, an-second], select: BEST_OF, judgePromptId: pick }
    messages: [{ role: user, content: "{{input}}" }]
  - id: pick
    defaultProfileId: oa-plain
    output: { kind: JSON_SCHEMA, schema: { type: object, required: [best], properties: { best: { type: integer } } } }
    messages: [{ role: user, content: "Which answer to {{input}} is best? {{candidates}}" }]
  - id: person
    defaultProfileId: oa-plain
    maxRepairs: 2
    output: { kind: JSON_SCHEMA, schema: ${JSON.stringify(PERSON_SCHEMA)} }
    messages:
      - { role: system, content: "Answer with JSON." }
      - { role: user, content: "{{input}}" }
`,
  })
}

describe.each(providers)('generation with real vendor clients (%s)', (provider) => {
  let openai: FakeVendorServer
  let anthropic: FakeVendorServer
  let t: TestServer
  const logLines: string[] = []
  beforeAll(async () => {
    openai = await FakeVendorServer.start('openai')
    anthropic = await FakeVendorServer.start('anthropic')
    t = await startTestServer({ provider, app: { catalogDir: catalog(openai, anthropic) }, secrets: { OA_KEY, AN_KEY }, logLines })
  })
  afterAll(async () => {
    await t?.stop({ dropDatabase: true })
    await openai?.close()
    await anthropic?.close()
  })

  let sessions = 0
  /** Runs a prompt in a fresh session and returns the finished run's details. */
  async function run(input: Parameters<typeof enqueue>[1] extends infer I ? Omit<I & object, 'sessionId'> : never) {
    const s = await createSession(t, `gen-${sessions++}`)
    const entry = await enqueue(t, { sessionId: s, ...input })
    const done = await waitForEntry(t, s, entry.queueId, ['COMPLETED', 'FAILED', 'CANCELLED'])
    return { session: s, entry: done, run: (await t.request(RunDetailsDocument, { id: done.runId! })).data!.run! }
  }

  it.each([
    ['OpenAI', 'oa-plain', () => openai, 1.5, 4],
    ['Anthropic', 'an-plain', () => anthropic, 3, 15],
  ] as const)('streams text, usage and cost from %s', async (_vendor, profileId, server, inPrice, outPrice) => {
    const { run: r, session } = await run({ input: 'four words right here', profileId })
    expect(r).toMatchObject({ status: 'COMPLETED', output: 'four words right here', profileId })
    // the fake vendors count words; the request had the one user message
    expect(r.usage).toEqual({ inputTokens: 4, outputTokens: 4, totalTokens: 8 })
    expect(r.cost).toBeCloseTo((4 * inPrice + 4 * outPrice) / 1e6, 12)
    expect(server().requests.at(-1)!.apiKey).toBe(profileId === 'oa-plain' ? OA_KEY : AN_KEY)
    const totals = (await t.request(SessionTotalsDocument, { id: session })).data!.session!
    expect(totals).toEqual({ usage: { inputTokens: 4, outputTokens: 4, totalTokens: 8 }, cost: r.cost })
  })

  it("answers every listed session's usage and cost with one grouped load, each the session's own", async () => {
    const totalsOf = vi.spyOn(t.app.store.runs, 'totalsBySession')
    const listed = (await t.request(SessionsTotalsDocument, {})).data!.sessions.edges.map((e) => e.node)
    expect(listed.length).toBeGreaterThan(1)
    expect(totalsOf).toHaveBeenCalledTimes(1)
    for (const session of listed) {
      const own = (await t.request(SessionTotalsDocument, { id: session.id })).data!.session!
      expect({ totalTokens: session.usage.totalTokens, cost: session.cost }).toEqual({ totalTokens: own.usage.totalTokens, cost: own.cost })
    }
    expect(listed.some((s) => s.usage.totalTokens > 0)).toBe(true)
    totalsOf.mockRestore()
  })

  it("answers a queue's runs with one load for the ended ones, each entry its own run", async () => {
    const s = await createSession(t, 'queue-runs')
    const entries = [await enqueue(t, { sessionId: s, input: 'one' }), await enqueue(t, { sessionId: s, input: 'two three' })]
    for (const entry of entries) await waitForEntry(t, s, entry.queueId, ['COMPLETED'])
    const byIds = vi.spyOn(t.app.store.runs, 'findMany')
    const byId = vi.spyOn(t.app.store.runs, 'find')
    const queue = (await t.request(SessionQueueRunsDocument, { id: s })).data!.session!.queue
    expect(queue.map((e) => [e.run?.id, e.run?.status, e.run?.output])).toEqual([
      [queue[0]!.runId, 'COMPLETED', 'one'],
      [queue[1]!.runId, 'COMPLETED', 'two three'],
    ])
    expect(byIds).toHaveBeenCalledTimes(1)
    expect(byId).not.toHaveBeenCalled()
    byIds.mockRestore()
    byId.mockRestore()
  })

  it('has no cost where the catalog has no price', async () => {
    const { run: r } = await run({ input: 'free', profileId: 'fake-echo' })
    expect(r.cost).toBeNull()
  })

  it('really closes the vendor request when the run is aborted', async () => {
    openai.script({ tokens: Array.from({ length: 100 }, (_, i) => `t${i} `), delayMs: 30 })
    const s = await createSession(t, 'abort-vendor')
    const entry = await enqueue(t, { sessionId: s, input: 'x', profileId: 'oa-plain' })
    const runId = (await waitForEntry(t, s, entry.queueId, ['RUNNING'])).runId!
    const tokens = t.subscribe(RunTokensDocument, { runId })
    await tokens.until((r) => r.some((e) => e.data?.runEvents.__typename === 'TokenDeltaEvent'))
    await t.request(AbortRunDocument, { runId })
    await tokens.done()
    await openai.requests.at(-1)!.closed
    expect(openai.requests.at(-1)).toMatchObject({ closedByClient: true, ended: false })
  })

  it('retries a 429 on the same candidate, honouring retry-after', async () => {
    openai.script({ status: 429, retryAfter: '0.2' }, {})
    const before = openai.requests.length
    const { run: r } = await run({ input: 'after the limit', profileId: 'oa-plain' })
    expect(r.status).toBe('COMPLETED')
    expect(r.failoverAttempts.map((a) => [a.profileId, a.outcome, a.errorCode, a.attempt])).toEqual([
      ['oa-plain', 'FAILED', 'RATE_LIMITED', 1],
      ['oa-plain', 'SUCCEEDED', null, 2],
    ])
    const [first, second] = openai.requests.slice(before)
    expect(second!.startedAt - first!.startedAt).toBeGreaterThanOrEqual(190)
  })

  it('fails over to the next candidate after a 500 that persists', async () => {
    openai.script({ status: 500 }, { status: 500 }, { status: 500 })
    const { run: r } = await run({ input: 'from the backup', profileId: 'oa-main' })
    expect(r).toMatchObject({
      status: 'COMPLETED',
      output: 'from the backup',
      profileId: 'an-plain',
      backendId: 'an',
      model: 'claude-test',
    })
    expect(r.failoverAttempts.map((a) => [a.profileId, a.outcome, a.errorCode])).toEqual([
      ['oa-main', 'FAILED', 'SERVER_ERROR'],
      ['oa-main', 'FAILED', 'SERVER_ERROR'],
      ['oa-main', 'FAILED', 'SERVER_ERROR'],
      ['an-plain', 'SUCCEEDED', null],
    ])
  })

  it('moves on at once after a 401', async () => {
    openai.script({ status: 401 })
    const { run: r } = await run({ input: 'unauthorized first', profileId: 'oa-main' })
    expect(r.failoverAttempts.map((a) => [a.profileId, a.outcome, a.errorCode])).toEqual([
      ['oa-main', 'FAILED', 'UNAUTHORIZED'],
      ['an-plain', 'SUCCEEDED', null],
    ])
  })

  it('skips a candidate without a key without sending it anything', async () => {
    const before = openai.requests.length
    const { run: r } = await run({ input: 'skip the keyless', profileId: 'keyless' })
    expect(r.failoverAttempts.map((a) => [a.profileId, a.outcome, a.errorCode])).toEqual([
      ['keyless', 'SKIPPED', 'NO_CREDENTIALS'],
      ['oa-plain', 'SUCCEEDED', null],
    ])
    expect(openai.requests.length - before).toBe(1)
    expect(openai.requests.at(-1)!.apiKey).toBe(OA_KEY)
  })

  it('refuses a prompt when no candidate has a key, naming the variables to set', async () => {
    const s = await createSession(t, 'no-keys')
    const { data } = await t.request(EnqueuePromptDocument, { input: { sessionId: s, input: 'x', profileId: 'all-keyless' } })
    expect(data!.enqueuePrompt).toMatchObject({ __typename: 'CredentialsError', code: 'CREDENTIALS' })
    const message = (data!.enqueuePrompt as { message: string }).message
    expect(message).toContain('MISSING_KEY')
    expect(message).toContain('ALSO_MISSING')
  })

  it('fails a stream cut after tokens with GENERATION and does not retry it', async () => {
    openai.script({ tokens: ['one ', 'two ', 'three ', 'four '], cutAfter: 2 })
    const before = openai.requests.length
    const { run: r } = await run({ input: 'x', profileId: 'oa-plain' })
    expect(r).toMatchObject({ status: 'FAILED', errorCode: 'GENERATION', output: 'one two ' })
    expect(r.errorMessage).toMatch(/after 2 tokens/)
    expect(openai.requests.length - before).toBe(1)
  })

  it('retries a stream cut before any token', async () => {
    openai.script({ tokens: ['a '], cutAfter: 0 }, {})
    const { run: r } = await run({ input: 'second try', profileId: 'oa-plain' })
    expect(r).toMatchObject({ status: 'COMPLETED', output: 'second try' })
    expect(r.failoverAttempts.map((a) => a.errorCode)).toEqual(['NETWORK', null])
  })

  it('never overlaps two model calls on a backend with maxActive 1', async () => {
    openai.defaults = { delayMs: 15 }
    try {
      const before = openai.requests.length
      const [a, b] = [await createSession(t, 'serial-a'), await createSession(t, 'serial-b')]
      const entries = await Promise.all(
        [a, b].map((s) => enqueue(t, { sessionId: s, input: 'one two three four five six', profileId: 'serial' })),
      )
      await Promise.all(entries.map((e, i) => waitForEntry(t, [a, b][i]!, e.queueId, ['COMPLETED'])))
      const [first, second] = openai.requests.slice(before).sort((x, y) => x.startedAt - y.startedAt)
      expect(second!.startedAt).toBeGreaterThanOrEqual(first!.finishedAt!)
    } finally {
      openai.defaults = {}
    }
  })

  it("lets another run's call start on a backend with maxActive 1 while a run backs off after a 500", async () => {
    openai.script({ status: 500 })
    const [a, b] = [await createSession(t, 'backoff-a'), await createSession(t, 'backoff-b')]
    const arrived = openai.nextRequest()
    const backingOff = await enqueue(t, { sessionId: a, input: 'answered 500 first', profileId: 'patient' })
    const failed = await arrived
    await failed.closed
    // the retry waits about a minute: the other run must not wait behind it
    const other = await enqueue(t, { sessionId: b, input: 'called meanwhile', profileId: 'patient' })
    expect(await waitForEntry(t, b, other.queueId, ['COMPLETED', 'FAILED'])).toMatchObject({ status: 'COMPLETED' })
    const live = await waitForEntry(t, a, backingOff.queueId, ['RUNNING'])
    const sentForA = openai.requests.filter((r) => r.body.messages.at(-1).content === 'answered 500 first')
    expect(sentForA).toEqual([failed])
    await t.request(AbortRunDocument, { runId: live.runId! })
    expect(await waitForEntry(t, a, backingOff.queueId, ['CANCELLED', 'FAILED'])).toMatchObject({ status: 'CANCELLED' })
  })

  it('makes runs wait for a lease in line, fails the overflow with CAPACITY at once, and lets a waiter leave', async () => {
    openai.script({ tokens: Array.from({ length: 40 }, (_, i) => `h${i} `), delayMs: 25 })
    const [a, b, c] = [await createSession(t, 'cap-a'), await createSession(t, 'cap-b'), await createSession(t, 'cap-c')]
    const holder = await enqueue(t, { sessionId: a, input: 'x', profileId: 'tight' })
    await waitForEntry(t, a, holder.queueId, ['RUNNING'])
    const waiter = await enqueue(t, { sessionId: b, input: 'x', profileId: 'tight' })
    const waiting = await waitForEntry(t, b, waiter.queueId, ['STARTING'])
    await expect.poll(async () => (await t.request(RunDetailsDocument, { id: waiting.runId! })).data!.run!.status).toBe('WAITING_CAPACITY')
    const tight = (await t.request(BackendCapacityDocument)).data!.backends.find((x) => x.id === 'oa-tight')!
    expect(tight.capacity).toMatchObject({ maxAccepted: 1, maxWaiting: 1, accepted: 1, waiting: 1 })

    const requestsBefore = openai.requests.length
    const overflow = await enqueue(t, { sessionId: c, input: 'x', profileId: 'tight' })
    const failed = await waitForEntry(t, c, overflow.queueId, ['FAILED'], 2000)
    const overflowRun = (await t.request(RunDetailsDocument, { id: failed.runId! })).data!.run!
    expect(overflowRun).toMatchObject({ status: 'FAILED', errorCode: 'CAPACITY', renderedHash: null })
    expect(overflowRun.errorMessage).toContain("'oa-tight'")

    await t.request(AbortRunDocument, { runId: waiting.runId! })
    await t.request(AbortRunDocument, { runId: (await waitForEntry(t, a, holder.queueId, ['RUNNING'])).runId! })
    expect(openai.requests.length).toBe(requestsBefore)
    const after = (await t.request(BackendCapacityDocument)).data!.backends.find((x) => x.id === 'oa-tight')!
    expect(after.capacity).toMatchObject({ accepted: 0, active: 0, waiting: 0 })
  })

  it("lowers a backend's call limit on a vendor 429, shows it, and grows it back under load", async () => {
    const adaptive = async () => (await t.request(BackendCapacityDocument)).data!.backends.find((x) => x.id === 'oa-adaptive')!.capacity
    expect(await adaptive()).toMatchObject({ maxActive: 8, activeLimit: 8 })
    openai.script({ status: 429, retryAfter: '0', errorMessage: 'slow down' })
    const { run: throttled } = await run({ input: 'after a 429', profileId: 'adaptive' })
    expect(throttled).toMatchObject({ status: 'COMPLETED', output: 'after a 429' })
    expect(throttled.failoverAttempts.map((a) => a.errorCode)).toEqual(['RATE_LIMITED', null])
    // halved from the one call in flight (to 1), then one success while it held calls back
    expect(await adaptive()).toMatchObject({ maxActive: 8, activeLimit: 2, active: 0, callsWaiting: 0 })

    openai.defaults = { delayMs: 10 }
    try {
      const sessions = await Promise.all([1, 2, 3, 4].map((i) => createSession(t, `adaptive-${i}`)))
      const entries = await Promise.all(sessions.map((s) => enqueue(t, { sessionId: s, input: 'a b c d e', profileId: 'adaptive' })))
      await Promise.all(entries.map((e, i) => waitForEntry(t, sessions[i]!, e.queueId, ['COMPLETED'])))
    } finally {
      openai.defaults = {}
    }
    expect((await adaptive()).activeLimit).toBeGreaterThanOrEqual(4)
  })

  it("retries a vendor's in-stream server error before the first token, recording it as SERVER_ERROR, not a network failure", async () => {
    openai.script({ tokens: ['lost'], streamErrorAfter: 0, streamErrorType: 'server_error', errorMessage: 'The server had an error' })
    const { run: retried } = await run({ input: 'after a stream error', profileId: 'adaptive' })
    expect(retried).toMatchObject({ status: 'COMPLETED', output: 'after a stream error' })
    expect(retried.failoverAttempts.map((a) => a.errorCode)).toEqual(['SERVER_ERROR', null])
  })

  it.each([
    ['OpenAI', () => openai, { refusal: true }, 'stop', "I'm sorry, I can't help with that."],
    ['Anthropic', () => anthropic, { finishReason: 'refusal' }, 'refusal', null],
  ] as const)(
    'completes a run %s refused as REFUSAL, without repairing it against its contract',
    async (_vendor, server, script, vendorReason, refusal) => {
      const words = ["I'm ", 'sorry, ', 'I ', "can't ", 'help ', 'with ', 'that.']
      server().script({ tokens: words, ...script })
      const before = server().requests.length
      const profileId = server() === openai ? 'oa-plain' : 'an-plain'
      const { run: r } = await run({ promptId: 'person', input: 'something harmful', profileId })
      expect(r).toMatchObject({ status: 'COMPLETED', finishReason: 'REFUSAL', vendorFinishReason: vendorReason, refusal })
      expect(r.output).toBe(refusal === null ? words.join('') : '')
      expect(server().requests.length - before).toBe(1)
    },
  )

  it("keeps an Anthropic run's thinking with its signature on the run, apart from its output", async () => {
    anthropic.script({ tokens: ['Look ', 'both ', 'ways.'], thinking: ['Street ', 'safety.'] })
    const { run: r } = await run({ input: 'x', profileId: 'an-plain' })
    expect(r).toMatchObject({ output: 'Look both ways.', reasoning: { text: 'Street safety.', signature: expect.stringMatching(/^EvMC/) } })
  })

  it('repairs a contract answer cut off at the token limit, even when the cut text parses', async () => {
    openai.script({ tokens: ['{"name": "Ada", ', '"age": 36}'], finishReason: 'length' }, { tokens: ['{"name": "Ada", ', '"age": 36}'] })
    const { run: r } = await run({ promptId: 'person', input: 'Ada is 36' })
    expect(r).toMatchObject({ status: 'COMPLETED', finishReason: 'STOP', vendorFinishReason: 'stop', refusal: null })
    expect(r.validation).toMatchObject({ valid: true, attempts: 2 })
  })

  it('records LENGTH on a plain-text answer cut off at the token limit, and keeps it as it came', async () => {
    openai.script({ tokens: ['cut ', 'short'], finishReason: 'length' })
    const { run: r } = await run({ input: 'x', profileId: 'oa-plain' })
    expect(r).toMatchObject({ status: 'COMPLETED', output: 'cut short', finishReason: 'LENGTH', vendorFinishReason: 'length' })
    expect(r.validation).toMatchObject({ valid: true, attempts: 1 })
  })

  it("retries Anthropic's in-stream overloaded_error before the first token and lowers the backend's call limit, as a 529 does", async () => {
    const limit = async () => (await t.request(BackendCapacityDocument)).data!.backends.find((x) => x.id === 'an-adaptive')!.capacity
    expect(await limit()).toMatchObject({ activeLimit: 8 })
    anthropic.script({ tokens: ['lost'], streamErrorAfter: 0, streamErrorType: 'overloaded_error', errorMessage: 'Overloaded' })
    const { run: retried } = await run({ input: 'after an overload', profileId: 'an-adaptive' })
    expect(retried).toMatchObject({ status: 'COMPLETED', output: 'after an overload' })
    expect(retried.failoverAttempts.map((a) => a.errorCode)).toEqual(['OVERLOADED', null])
    expect((await limit()).activeLimit).toBeLessThan(8)
  })

  it('repairs an invalid JSON answer once and completes valid', async () => {
    openai.script({ tokens: ['not ', 'json'] }, { tokens: ['{"name": "Ada", ', '"age": 36}'] })
    const before = openai.requests.length
    const { run: r } = await run({ promptId: 'person', input: 'Ada is 36' })
    expect(r).toMatchObject({
      status: 'COMPLETED',
      output: '{"name": "Ada", "age": 36}',
      parsedOutput: { name: 'Ada', age: 36 },
      validation: { valid: true, errors: [], attempts: 2 },
    })
    const repair = openai.requests.slice(before)[1]!
    expect(repair.body.messages.at(-2)).toEqual({ role: 'assistant', content: 'not json' })
    expect(repair.body.messages.at(-1).content).toMatch(/not valid JSON/)
    const tokens = t.subscribe(RunTokensDocument, { runId: r.id })
    await tokens.done()
    const deltas = tokens.results.map((e) => e.data!.runEvents).filter((e) => e.__typename === 'TokenDeltaEvent') as {
      text: string
      attempt: number
    }[]
    expect(
      deltas
        .filter((d) => d.attempt === 0)
        .map((d) => d.text)
        .join(''),
    ).toBe('not json')
    expect(
      deltas
        .filter((d) => d.attempt === 1)
        .map((d) => d.text)
        .join(''),
    ).toBe(r.output)
  })

  it('ends valid = false after exactly maxRepairs repairs of an answer that never fits', async () => {
    const wrong = { tokens: ['{"name": 7}'] }
    openai.script(wrong, wrong, wrong)
    const before = openai.requests.length
    const { run: r } = await run({ promptId: 'person', input: 'no age here' })
    expect(r.status).toBe('COMPLETED')
    expect(r.validation).toMatchObject({ valid: false, attempts: 3 })
    expect(r.validation!.errors.join(' ')).toMatch(/age/)
    expect(openai.requests.length - before).toBe(3)
  })

  it('runs parallel profiles and takes the first valid answer, stopping the other', async () => {
    openai.script({ tokens: Array.from({ length: 60 }, () => 'slow '), delayMs: 20 })
    anthropic.script({ tokens: ['{"fast": ', 'true}'], delayMs: 60 })
    const { run: r } = await run({ promptId: 'race', input: 'go' })
    expect(r).toMatchObject({ status: 'COMPLETED', profileId: 'an-plain', output: '{"fast": true}', parsedOutput: { fast: true } })
    const details = (await t.request(RunDetailsDocument, { id: r.id })).data!.run!
    expect(details.alternatives).toEqual([expect.objectContaining({ profileId: 'oa-plain', status: 'ABORTED', valid: null })])
    await openai.requests.at(-1)!.closed
    expect(openai.requests.at(-1)!.closedByClient).toBe(true)
    const tokens = t.subscribe(RunTokensDocument, { runId: r.id })
    await tokens.done()
    const deltas = tokens.results.map((e) => e.data!.runEvents).filter((e) => e.__typename === 'TokenDeltaEvent') as {
      text: string
      candidate: string | null
    }[]
    expect(
      deltas
        .filter((d) => d.candidate === 'an-plain')
        .map((d) => d.text)
        .join(''),
    ).toBe(r.output)
    expect(deltas.some((d) => d.candidate === 'oa-plain')).toBe(true)
  })

  it('runs parallel profiles to the end and lets the judge prompt pick the best', async () => {
    openai.script({ tokens: ['{"best": 1}'] })
    const { run: r } = await run({ promptId: 'contest', input: 'two ways' })
    const details = (await t.request(RunDetailsDocument, { id: r.id })).data!.run!
    expect(details).toMatchObject({ status: 'COMPLETED', profileId: 'an-second', model: 'claude-second', output: 'two ways' })
    expect(details.alternatives).toEqual([
      expect.objectContaining({ profileId: 'an-plain', status: 'COMPLETED', output: 'two ways', valid: true }),
    ])
    const judged = openai.requests.at(-1)!.body.messages.at(-1).content as string
    expect(judged).toContain('"profileId":"an-plain"')
    expect(judged).toContain('"profileId":"an-second"')
    // the judge's call counts in the usage and the attempts
    expect(details.failoverAttempts.map((a) => a.profileId).sort()).toEqual(['an-plain', 'an-second', 'oa-plain'])
  })

  it('refuses a setting the vendor does not take at admission', async () => {
    const s = await createSession(t, 'unsupported')
    const { data } = await t.request(EnqueuePromptDocument, {
      input: { sessionId: s, input: 'x', profileId: 'an-plain', overrides: { reasoningEffort: 'high' } },
    })
    expect(data!.enqueuePrompt).toMatchObject({ __typename: 'InvalidRequestError', code: 'INVALID_REQUEST' })
  })

  it('scrubs the key from a vendor error that quotes it back, whole, in part or masked', async () => {
    const fragment = OA_KEY.slice(4, 16)
    const masked = `${OA_KEY.slice(0, 6)}****${OA_KEY.slice(-4)}`
    openai.script({ status: 400, errorMessage: `Incorrect API key provided: ${OA_KEY}; seen as ${fragment}, shown as ${masked}.` })
    const { run: r } = await run({ input: 'x', profileId: 'oa-plain' })
    expect(r.status).toBe('FAILED')
    expect(r.errorMessage).toContain('Incorrect API')
    for (const leak of [OA_KEY, fragment, OA_KEY.slice(-4)]) expect(r.errorMessage).not.toContain(leak)
  })

  it('never lets a key into a response, a run row, an event or a log line', async () => {
    await t.app.flush()
    const rows = JSON.stringify(await t.app.store.runs.list('local', {}, null, 500))
    const events = JSON.stringify(
      await Promise.all(Array.from({ length: sessions }, (_, i) => t.app.store.events.after('local', `gen-${i}`, 0, 10_000))),
    )
    const everything = [rows, events, logLines.join('\n'), JSON.stringify((await t.request(BackendCapacityDocument)).data)].join('\n')
    expect(rows.length).toBeGreaterThan(1000)
    // the database file itself (and its write-ahead log) on SQLite
    const file = t.database.provider === 'sqlite' ? t.database.url.slice('file:'.length) : null
    const onDisk = file
      ? [file, `${file}-wal`]
          .filter(existsSync)
          .map((f) => readFileSync(f).toString('latin1'))
          .join('\n')
      : ''
    for (const key of [OA_KEY, AN_KEY]) {
      for (const haystack of [everything, onDisk]) {
        expect(haystack).not.toContain(key)
        expect(haystack).not.toContain(key.slice(4, 16))
      }
    }
  })
})
