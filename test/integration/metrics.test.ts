import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AbortRunDocument, RunPromptDocument, SessionEventsDocument } from '../generated/graphql.js'
import { createSession, enqueue, slow, waitForEntry, words } from '../helpers/flow.js'
import { type Labels, scrape } from '../helpers/prometheus.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

describe('GET /metrics (Prometheus)', () => {
  let t: TestServer
  beforeAll(async () => {
    t = await startTestServer({ provider: 'sqlite', app: { limits: { maxOutstandingPerSession: 1 } } })
  })
  afterAll(() => t?.stop({ dropDatabase: true }))

  it('moves by the right amounts over 3 completed runs, 1 aborted and 1 refused by a limit', async () => {
    const atStart = await scrape(t.http.url)
    const fake = { backend: 'fake', model: 'echo' }

    const s = await createSession(t, 'metrics')
    let outputTokens = 0
    for (let i = 0; i < 3; i++) {
      const { data } = await t.request(RunPromptDocument, { input: { sessionId: s, input: words(4, `r${i}-`) } })
      if (data?.runPrompt.__typename !== 'RunPromptPayload') throw new Error(JSON.stringify(data))
      outputTokens += data.runPrompt.run!.usage!.outputTokens
    }
    const watching = t.subscribe(SessionEventsDocument, { sessionId: s })
    const running = await enqueue(t, { sessionId: s, input: words(40), overrides: slow(50) })
    const runId = (await waitForEntry(t, s, running.queueId, ['RUNNING'])).runId!
    await watching.until((r) => r.some((e) => e.data?.sessionEvents.__typename === 'TokenDeltaEvent'))
    const whileRunning = await scrape(t.http.url)
    expect(whileRunning('promptline_queue_depth')).toBe(1)
    expect(whileRunning('promptline_open_subscriptions')).toBe(1)
    expect(whileRunning('promptline_capacity_active', { backend: 'fake' })).toBe(1)

    const refused = await t.request(RunPromptDocument, { input: { sessionId: s, input: 'one too many' } })
    expect(refused.data?.runPrompt).toMatchObject({ __typename: 'QueueFullError' })
    await t.request(AbortRunDocument, { runId, reason: 'metrics test' })
    await waitForEntry(t, s, running.queueId, ['CANCELLED'])
    watching.unsubscribe()
    await t.app.flush()

    const atEnd = await scrape(t.http.url)
    const moved = (name: string, labels?: Labels) => atEnd(name, labels) - atStart(name, labels)
    expect(moved('promptline_runs_total', { ...fake, status: 'COMPLETED' })).toBe(3)
    expect(moved('promptline_runs_total', { ...fake, status: 'ABORTED' })).toBe(1)
    expect(moved('promptline_runs_total')).toBe(4)
    expect(moved('promptline_admission_refusals_total', { reason: 'maxOutstandingPerSession' })).toBe(1)
    expect(moved('promptline_admission_refusals_total')).toBe(1)
    expect(moved('promptline_run_duration_seconds_count', { status: 'COMPLETED' })).toBe(3)
    expect(moved('promptline_first_token_seconds_count', fake)).toBe(4)
    expect(moved('promptline_tokens_total', { ...fake, direction: 'output' })).toBeGreaterThanOrEqual(outputTokens)
    expect(moved('promptline_events_written_total')).toBeGreaterThan(0)
    expect(atEnd('promptline_queue_depth')).toBe(0)
    expect(atEnd('promptline_open_subscriptions')).toBe(0)
    expect(atEnd('process_resident_memory_bytes')).toBeGreaterThan(0)
    // Yoga's GraphQL operation series share the registry
    expect(moved('graphql_envelop_request_duration_count')).toBeGreaterThan(0)
  })
})
