import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { FakeVendorServer } from '../fixtures/fake-vendor.js'
import { RunEventsDocument, RunForAnswerDocument, type RunForAnswerMutationVariables } from '../generated/graphql.js'
import { startWithFakeVendors, type VendorTestServer } from '../helpers/fake-vendors.js'
import { createSession } from '../helpers/flow.js'
import type { TestServer } from '../helpers/server.js'

// A stream that breaks after its first tokens, or stalls: the profile's onStreamFailure decides
// whether the run fails or starts again on its next candidate.
describe('a broken stream, handled on purpose', () => {
  let openai: FakeVendorServer
  let anthropic: FakeVendorServer
  let t: TestServer
  let vendors: VendorTestServer
  let sessionId: string
  beforeAll(async () => {
    vendors = await startWithFakeVendors(`
profiles:
  - { id: backup, backendId: an, model: claude-sonnet-4-5 }
  - { id: restarting, backendId: oa, model: gpt-4o, onStreamFailure: RESTART, candidates: [backup] }
  - { id: failing, backendId: oa, model: gpt-4o, candidates: [backup] }
  - { id: impatient, backendId: oa, model: gpt-4o, settings: { firstTokenTimeoutMs: 200 } }
  - { id: impatient-restarting, backendId: oa, model: gpt-4o, onStreamFailure: restart, settings: { firstTokenTimeoutMs: 200 }, candidates: [backup] }
  - { id: idle-failing, backendId: oa, model: gpt-4o, settings: { streamIdleTimeoutMs: 200 } }
  - { id: idle-restarting, backendId: oa, model: gpt-4o, onStreamFailure: RESTART, settings: { streamIdleTimeoutMs: 200 }, candidates: [backup] }
`)
    ;({ t, openai, anthropic } = vendors)
    sessionId = await createSession(t, 'restarts')
  })
  afterAll(() => vendors?.stop())

  async function run(input: Omit<RunForAnswerMutationVariables['input'], 'sessionId'>) {
    const { data } = await t.request(RunForAnswerDocument, { input: { sessionId, ...input } })
    if (data?.runPrompt.__typename !== 'RunPromptPayload') throw new Error(JSON.stringify(data))
    return data.runPrompt.run!
  }

  /** The run's events as a subscriber replaying it sees them. */
  async function eventsOf(runId: string) {
    const events = t.subscribe(RunEventsDocument, { runId, afterSequence: 0 })
    await events.until((results) => results.some((r) => r.data?.runEvents.__typename === 'RunFinishedEvent'))
    events.unsubscribe()
    return events.results.map((r) => r.data!.runEvents)
  }

  it('with RESTART, finishes on the next candidate after a cut; the subscriber sees the restart, and both attempts are counted', async () => {
    openai.script({ tokens: ['half ', 'an ', 'answer ', 'lost'], cutAfter: 2 })
    anthropic.script({ tokens: ['a ', 'whole ', 'answer'] })
    const done = await run({ profileId: 'restarting', input: 'tell me' })
    expect(done).toMatchObject({ status: 'COMPLETED', output: 'a whole answer' })
    expect(done.failoverAttempts).toEqual([
      { profileId: 'restarting', outcome: 'STREAM_INTERRUPTED', errorCode: 'NETWORK', attempt: 1 },
      { profileId: 'backup', outcome: 'SUCCEEDED', errorCode: null, attempt: 1 },
    ])
    // the cut attempt's 2 streamed tokens, and the whole answer's 3
    expect(done.usage!.outputTokens).toBe(2 + 3)

    const events = await eventsOf(done.id)
    const restart = events.find((e) => e.__typename === 'GenerationRestartedEvent')
    expect(restart).toMatchObject({ attempt: 1, reason: 'NETWORK', discardedChars: 'half an '.length })
    const deltas = events.flatMap((e) => (e.__typename === 'TokenDeltaEvent' ? [e] : []))
    expect(
      deltas
        .filter((d) => d.attempt === 0)
        .map((d) => d.text)
        .join(''),
    ).toBe('half an ')
    expect(
      deltas
        .filter((d) => d.attempt === 1)
        .map((d) => d.text)
        .join(''),
    ).toBe('a whole answer')
    // the restart comes between the two attempts' tokens
    const at = (e: (typeof events)[number]) => events.indexOf(e)
    expect(at(restart!)).toBeGreaterThan(at(deltas.findLast((d) => d.attempt === 0)!))
    expect(at(restart!)).toBeLessThan(at(deltas.find((d) => d.attempt === 1)!))
  })

  it('with FAIL (the default), fails the run after a cut and does not try the next candidate', async () => {
    openai.script({ tokens: ['half ', 'an ', 'answer'], cutAfter: 2 })
    const before = anthropic.requests.length
    const failed = await run({ profileId: 'failing', input: 'tell me' })
    expect(failed).toMatchObject({ status: 'FAILED', errorCode: 'GENERATION' })
    expect(failed.failoverAttempts).toEqual([{ profileId: 'failing', outcome: 'FAILED', errorCode: 'NETWORK', attempt: 1 }])
    expect(anthropic.requests.length).toBe(before)
  })

  it('ends an attempt that sends no first token in firstTokenTimeoutMs with STREAM_TIMEOUT, and ends the vendor request', async () => {
    openai.script({ hang: true })
    const failed = await run({ profileId: 'impatient', input: 'tell me' })
    expect(failed).toMatchObject({ status: 'FAILED', errorCode: 'STREAM_TIMEOUT' })
    expect(failed.errorMessage).toBe('no token came within 200 ms (firstTokenTimeoutMs)')
    const hung = openai.requests.at(-1)!
    await hung.closed
    expect(hung.closedByClient).toBe(true)
  })

  it('with RESTART, moves on from a first-token timeout to the next candidate', async () => {
    openai.script({ hang: true })
    anthropic.script({ tokens: ['from ', 'backup'] })
    const done = await run({ profileId: 'impatient-restarting', input: 'tell me' })
    expect(done).toMatchObject({ status: 'COMPLETED', output: 'from backup' })
    expect(done.failoverAttempts[0]).toMatchObject({ outcome: 'STREAM_INTERRUPTED', errorCode: 'STREAM_TIMEOUT' })
  })

  it('with FAIL, ends a stream that falls silent for streamIdleTimeoutMs with STREAM_TIMEOUT, keeping its text', async () => {
    openai.script({ tokens: ['slow ', 'start ', 'never'], stallAfter: 2 })
    const failed = await run({ profileId: 'idle-failing', input: 'tell me' })
    expect(failed).toMatchObject({ status: 'FAILED', errorCode: 'STREAM_TIMEOUT', output: 'slow start ' })
    expect(failed.errorMessage).toBe(
      'the stream was silent for 200 ms (streamIdleTimeoutMs) after 2 tokens had been streamed; not retried, so no text is repeated',
    )
  })

  it('with RESTART, moves on from a stream that falls silent for streamIdleTimeoutMs', async () => {
    openai.script({ tokens: ['slow ', 'start ', 'never'], stallAfter: 2 })
    anthropic.script({ tokens: ['steady'] })
    const done = await run({ profileId: 'idle-restarting', input: 'tell me' })
    expect(done).toMatchObject({ status: 'COMPLETED', output: 'steady' })
    expect(done.failoverAttempts[0]).toMatchObject({ outcome: 'STREAM_INTERRUPTED', errorCode: 'STREAM_TIMEOUT' })
  })
})
