import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import {
  AbortRunDocument,
  CancelPromptDocument,
  CancelScheduledPromptDocument,
  CreateSessionDocument,
  DeleteSessionDocument,
  EnqueuePromptDocument,
  LastSequenceDocument,
  RunDocument,
  RunPromptDocument,
  SchedulePromptDocument,
  SessionDocument,
  SessionEventsDocument,
  SessionsDocument,
  SteerPromptDocument,
  UpsertPromptDocument,
} from '../generated/graphql.js'
import { providers } from '../helpers/databases.js'
import { createSession, enqueue, slow, waitForEntry, words } from '../helpers/flow.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe.each(providers)('sessions and the prompt queue (%s)', (provider) => {
  let t: TestServer
  beforeAll(async () => {
    t = await startTestServer({ provider })
  })
  afterAll(() => t?.stop({ dropDatabase: true }))

  const history = async (sessionId: string) =>
    (await t.request(SessionDocument, { id: sessionId })).data!.session!.messages.map(
      (m) => `${m.role}:${m.content}${m.interrupted ? ' (interrupted)' : ''}`,
    )
  const requestsWith = (text: string) => t.model.requests.filter((r) => r.messages.at(-1)?.content === text)

  it('runs three prompts of one session strictly in order, each seeing the answers before it', async () => {
    const s = await createSession(t, 'order')
    const events = t.subscribe(SessionEventsDocument, { sessionId: s, afterSequence: 0 })
    for (const text of ['first prompt', 'second prompt', 'third prompt']) await enqueue(t, { sessionId: s, input: text })
    await events.until((r) => r.filter((e) => e.data?.sessionEvents.__typename === 'RunFinishedEvent').length === 3)
    events.unsubscribe()

    const kinds = events.results
      .map((r) => r.data!.sessionEvents)
      .filter((e) => e.__typename === 'RunStartedEvent' || e.__typename === 'RunFinishedEvent')
    expect(kinds.map((e) => e.__typename)).toEqual([
      'RunStartedEvent',
      'RunFinishedEvent',
      'RunStartedEvent',
      'RunFinishedEvent',
      'RunStartedEvent',
      'RunFinishedEvent',
    ])
    const sequences = events.results.map((r) => r.data!.sessionEvents.sequence)
    expect(sequences).toEqual([...sequences].sort((a, b) => a - b))
    expect(new Set(sequences).size).toBe(sequences.length)

    const third = requestsWith('third prompt')[0]!
    expect(third.messages.map((m) => `${m.role}:${m.content}`)).toEqual([
      'user:first prompt',
      'assistant:first prompt',
      'user:second prompt',
      'assistant:second prompt',
      'user:third prompt',
    ])
    expect(await history(s)).toEqual([
      'USER:first prompt',
      'ASSISTANT:first prompt',
      'USER:second prompt',
      'ASSISTANT:second prompt',
      'USER:third prompt',
      'ASSISTANT:third prompt',
    ])
  })

  it('runs two sessions at the same time', async () => {
    const [a, b] = [await createSession(t, 'par-a'), await createSession(t, 'par-b')]
    const results = await Promise.all(
      [a, b].map((sessionId) => t.request(RunPromptDocument, { input: { sessionId, input: words(6), overrides: slow(40) } })),
    )
    const [runA, runB] = results.map((r) => (r.data?.runPrompt.__typename === 'RunPromptPayload' ? r.data.runPrompt.run : null))
    expect(runA?.status).toBe('COMPLETED')
    expect(runB?.status).toBe('COMPLETED')
    expect(Date.parse(runA!.firstTokenAt!)).toBeLessThan(Date.parse(runB!.finishedAt!))
    expect(Date.parse(runB!.firstTokenAt!)).toBeLessThan(Date.parse(runA!.finishedAt!))
  })

  it('runPrompt answers with the finished run, and with the entry still running on timeout', async () => {
    const s = await createSession(t, 'run-prompt')
    const done = await t.request(RunPromptDocument, { input: { sessionId: s, promptId: 'chat', input: 'hello there' } })
    expect(done.data!.runPrompt).toMatchObject({
      __typename: 'RunPromptPayload',
      entry: { status: 'COMPLETED' },
      run: {
        status: 'COMPLETED',
        output: 'hello there',
        promptId: 'chat',
        profileId: 'fake-echo',
        backendId: 'fake',
        model: 'echo',
        usage: { outputTokens: 2 },
      },
    })
    const early = await t.request(RunPromptDocument, { input: { sessionId: s, input: words(5), overrides: slow(100) }, timeoutMs: 50 })
    expect(early.data!.runPrompt).toMatchObject({ entry: { status: 'RUNNING' }, run: { status: 'GENERATING' } })
  })

  it('runs the prompt version it admitted, though the prompt is edited before its turn', async () => {
    const s = await createSession(t, 'admitted-version')
    const prompt = (text: string) => ({
      id: 'edited-later',
      defaultProfileId: 'fake-echo',
      messages: [{ role: 'USER' as const, content: text }],
    })
    const first = await t.request(UpsertPromptDocument, { input: prompt('admitted {{input}}') })
    expect(first.data!.upsertPrompt).toMatchObject({ prompt: { version: 1 } })
    const blocker = await enqueue(t, { sessionId: s, input: words(5), overrides: slow(40) })
    const waiting = await enqueue(t, { sessionId: s, promptId: 'edited-later', input: 'text' })
    const edited = await t.request(UpsertPromptDocument, { input: prompt('edited {{input}}') })
    expect(edited.data!.upsertPrompt).toMatchObject({ prompt: { version: 2 } })

    await waitForEntry(t, s, blocker.queueId, ['COMPLETED'])
    const done = await waitForEntry(t, s, waiting.queueId, ['COMPLETED'])
    const run = (await t.request(RunDocument, { id: done.runId! })).data!.run!
    expect(run).toMatchObject({ promptVersion: 1, output: 'admitted text' })
    expect(requestsWith('edited text')).toEqual([])
  })

  it('REJECT admits nothing while the session is busy', async () => {
    const s = await createSession(t, 'reject')
    const running = await enqueue(t, { sessionId: s, input: words(5), overrides: slow(60) })
    const { data } = await t.request(EnqueuePromptDocument, { input: { sessionId: s, input: 'later', whenBusy: 'REJECT' } })
    expect(data!.enqueuePrompt).toMatchObject({ __typename: 'SessionBusyError', code: 'SESSION_BUSY' })
    const queue = (await t.request(SessionDocument, { id: s, includeTerminal: true })).data!.session!.queue
    expect(queue.map((e) => e.queueId)).toEqual([running.queueId])
    expect(await t.app.store.entries.forSession('local', s, true)).toHaveLength(1)
  })

  it.each(['INTERRUPT', 'ROLLBACK'] as const)('%s aborts the running entry and runs the new prompt next', async (whenBusy) => {
    const s = await createSession(t, `busy-${whenBusy}`)
    const events = t.subscribe(SessionEventsDocument, { sessionId: s, afterSequence: 0 })
    const first = await enqueue(t, { sessionId: s, input: 'alpha beta gamma delta epsilon', overrides: slow(80) })
    const queued = await enqueue(t, { sessionId: s, input: 'bravo' })
    await events.until((r) => r.some((e) => e.data?.sessionEvents.__typename === 'TokenDeltaEvent'))
    const urgent = await enqueue(t, { sessionId: s, input: `charlie ${whenBusy}`, whenBusy })
    expect(urgent.position).toBe(1)
    // all three runs ended as the subscriber saw them (an entry read elsewhere can be ahead of its stream)
    await events.until((r) => r.filter((e) => e.data?.sessionEvents.__typename === 'RunFinishedEvent').length === 3)
    await waitForEntry(t, s, queued.queueId, ['COMPLETED'])
    events.unsubscribe()

    const started = events.results.map((r) => r.data!.sessionEvents).filter((e) => e.__typename === 'RunStartedEvent')
    expect(started).toHaveLength(3)
    const entries = (await t.request(SessionDocument, { id: s, includeTerminal: true })).data!.session!.queue
    const byId = new Map(entries.map((e) => [e.queueId, e]))
    expect(byId.get(first.queueId)).toMatchObject({ status: 'CANCELLED' })
    expect(Date.parse(byId.get(urgent.queueId)!.startedAt!)).toBeLessThan(Date.parse(byId.get(queued.queueId)!.startedAt!))
    const firstRun = (await t.request(RunDocument, { id: byId.get(first.queueId)!.runId! })).data!.run!
    expect(firstRun).toMatchObject({ status: 'ABORTED', terminalReason: 'SUPERSEDED' })
    expect(firstRun.output!.length).toBeGreaterThan(0)

    const kept = whenBusy === 'INTERRUPT' ? ['USER:alpha beta gamma delta epsilon', `ASSISTANT:${firstRun.output} (interrupted)`] : []
    expect(await history(s)).toEqual([
      ...kept,
      `USER:charlie ${whenBusy}`,
      `ASSISTANT:charlie ${whenBusy}`,
      'USER:bravo',
      'ASSISTANT:bravo',
    ])
    // the model saw the interrupted turn only with INTERRUPT
    expect(requestsWith(`charlie ${whenBusy}`)[0]!.messages.length).toBe(kept.length + 1)
  })

  it('never runs a cancelled queued entry, and answers the cancel once the entry and its FINISHED event are stored', async () => {
    const s = await createSession(t, 'cancel-queued')
    const running = await enqueue(t, { sessionId: s, input: words(4), overrides: slow(50) })
    const queued = await enqueue(t, { sessionId: s, input: 'never to be run' })
    const { data } = await t.request(CancelPromptDocument, { sessionId: s, queueId: queued.queueId })
    expect(data!.cancelPrompt).toMatchObject({ cancelled: true, entry: { status: 'CANCELLED', runId: null } })
    const { store } = t.app
    expect(await store.entries.find('local', s, queued.queueId)).toMatchObject({ status: 'CANCELLED' })
    const logged = await store.events.after('local', s, 0, 1000)
    expect(logged).toContainEqual(
      expect.objectContaining({ type: 'QUEUE_ENTRY', kind: 'FINISHED', entry: expect.objectContaining({ queueId: queued.queueId }) }),
    )
    await waitForEntry(t, s, running.queueId, ['COMPLETED'])
    // the queue runs in order: once a prompt admitted after the cancelled one has run, it would have run too
    const later = await enqueue(t, { sessionId: s, input: 'admitted after' })
    await waitForEntry(t, s, later.queueId, ['COMPLETED'])
    expect(requestsWith('never to be run')).toHaveLength(0)
    const again = await t.request(CancelPromptDocument, { sessionId: s, queueId: queued.queueId })
    expect(again.data!.cancelPrompt).toMatchObject({ cancelled: false, entry: { status: 'CANCELLED' } })
    const unknown = await t.request(CancelPromptDocument, { sessionId: s, queueId: 'no-such-entry' })
    expect(unknown.data!.cancelPrompt).toMatchObject({ __typename: 'NotFoundError' })
  })

  it('cancelling the running entry aborts its run', async () => {
    const s = await createSession(t, 'cancel-running')
    const running = await enqueue(t, { sessionId: s, input: words(10), overrides: slow(50) })
    await waitForEntry(t, s, running.queueId, ['RUNNING'])
    const { data } = await t.request(CancelPromptDocument, { sessionId: s, queueId: running.queueId })
    expect(data!.cancelPrompt).toMatchObject({ cancelled: true, entry: { status: 'CANCELLED' } })
    const entry = data!.cancelPrompt.__typename === 'CancelPromptPayload' ? data!.cancelPrompt.entry! : null
    const run = (await t.request(RunDocument, { id: entry!.runId! })).data!.run!
    expect(run).toMatchObject({ status: 'ABORTED', terminalReason: 'CANCELLED' })
  })

  it('abortRun stops the token stream, leaves the row ABORTED with the partial output, and the session moves on', async () => {
    const s = await createSession(t, 'abort')
    const events = t.subscribe(SessionEventsDocument, { sessionId: s, afterSequence: 0 })
    const running = await enqueue(t, { sessionId: s, input: words(30), overrides: slow(40) })
    const next = await enqueue(t, { sessionId: s, input: 'next in line' })
    await events.until((r) => r.filter((e) => e.data?.sessionEvents.__typename === 'TokenDeltaEvent').length >= 3)
    const runId = (await waitForEntry(t, s, running.queueId, ['RUNNING'])).runId!

    const { data } = await t.request(AbortRunDocument, { runId, reason: 'enough' })
    const abort = data!.abortRun.__typename === 'AbortRunPayload' ? data!.abortRun : null
    expect(abort).toMatchObject({ aborted: true, run: { status: 'ABORTED', terminalReason: 'ABORTED', errorMessage: 'enough' } })
    // durable before the mutation answered
    const row = await t.app.store.runs.find('local', runId)
    expect(row).toMatchObject({ status: 'ABORTED', output: abort!.run.output })
    expect(abort!.run.output!.length).toBeGreaterThan(0)
    expect(abort!.run.output!.length).toBeLessThan(words(30).length)
    expect(abort!.run.usage!.outputTokens).toBe(abort!.run.output!.trim().split(' ').length)

    await waitForEntry(t, s, next.queueId, ['COMPLETED'])
    // every event up to the session's last has arrived
    const { lastSequence } = (await t.request(LastSequenceDocument, { id: s })).data!.session!
    await events.until((r) => r.some((e) => e.data?.sessionEvents.sequence === lastSequence))
    events.unsubscribe()
    const ofRun = events.results.map((r) => r.data!.sessionEvents).filter((e) => e.runId === runId)
    const finishedAt = ofRun.findIndex((e) => e.__typename === 'RunFinishedEvent')
    expect(ofRun.slice(finishedAt + 1).filter((e) => e.__typename === 'TokenDeltaEvent')).toEqual([])
    const text = ofRun.flatMap((e) => (e.__typename === 'TokenDeltaEvent' ? [e.text] : [])).join('')
    expect(text).toBe(abort!.run.output)
    expect((await waitForEntry(t, s, running.queueId, ['CANCELLED'])).status).toBe('CANCELLED')

    const receipt = await t.request(AbortRunDocument, { runId })
    expect(receipt.data!.abortRun).toMatchObject({ aborted: false, run: { id: runId, status: 'ABORTED', output: abort!.run.output } })
  })

  it('applies an accepted steer: its text reaches the model as user input in the same run', async () => {
    const s = await createSession(t, 'steer')
    const events = t.subscribe(SessionEventsDocument, { sessionId: s, afterSequence: 0 })
    const running = await enqueue(t, { sessionId: s, input: words(20), overrides: slow(60) })
    const queued = await enqueue(t, { sessionId: s, input: 'waiting' })
    await events.until((r) => r.some((e) => e.data?.sessionEvents.__typename === 'TokenDeltaEvent'))
    const accepted = await t.request(SteerPromptDocument, {
      input: { sessionId: s, queueId: running.queueId, steerId: 'left', text: 'turn left now' },
    })
    expect(accepted.data!.steerPrompt).toMatchObject({ __typename: 'SteerPromptPayload', steerId: 'left', queueId: running.queueId })
    const duplicate = await t.request(SteerPromptDocument, {
      input: { sessionId: s, queueId: running.queueId, steerId: 'left', text: 'again' },
    })
    expect(duplicate.data!.steerPrompt).toMatchObject({ __typename: 'SteerRejectedError', reason: 'DUPLICATE', code: 'STEER_REJECTED' })
    const notRunning = await t.request(SteerPromptDocument, { input: { sessionId: s, queueId: queued.queueId, steerId: 'x', text: 'hi' } })
    expect(notRunning.data!.steerPrompt).toMatchObject({ __typename: 'SteerRejectedError', reason: 'NOT_RUNNING' })

    const done = await waitForEntry(t, s, running.queueId, ['COMPLETED'])
    expect(done.unappliedSteerIds).toEqual([])
    const [, afterSteer] = t.model.requests.filter((r) => r.messages[0]?.content === words(20))
    expect(afterSteer!.messages.at(-1)).toEqual({ role: 'user', content: 'turn left now' })
    expect(afterSteer!.messages.at(-2)?.role).toBe('assistant')
    const run = (await t.request(RunDocument, { id: done.runId! })).data!.run!
    expect(run.output!.endsWith('turn left now')).toBe(true)
    const kinds = events.results.map((r) => r.data!.sessionEvents.__typename)
    expect(kinds.indexOf('SteerAcceptedEvent')).toBeLessThan(kinds.indexOf('SteerAppliedEvent'))

    const finished = await t.request(SteerPromptDocument, {
      input: { sessionId: s, queueId: running.queueId, steerId: 'late', text: 'too late' },
    })
    expect(finished.data!.steerPrompt).toMatchObject({ reason: 'NOT_RUNNING' })
    events.unsubscribe()
  })

  it('lists a steer the run never applied', async () => {
    const s = await createSession(t, 'steer-unapplied')
    const running = await enqueue(t, { sessionId: s, input: words(10), overrides: slow(400) })
    const runId = (await waitForEntry(t, s, running.queueId, ['RUNNING'])).runId!
    await t.request(SteerPromptDocument, { input: { sessionId: s, queueId: running.queueId, steerId: 'late-steer', text: 'stop' } })
    await t.request(AbortRunDocument, { runId })
    const entry = await waitForEntry(t, s, running.queueId, ['CANCELLED'])
    expect(entry.unappliedSteerIds).toEqual(['late-steer'])
  })

  it('fires a debounced schedule once, after the last re-schedule, and cancels by key', async () => {
    const s = await createSession(t, 'schedule')
    const ids: string[] = []
    for (const text of ['draft one', 'draft two', 'draft three']) {
      const { data } = await t.request(SchedulePromptDocument, {
        input: { sessionId: s, input: text, scheduleKey: 'typing', debounceMs: 250 },
      })
      if (data!.schedulePrompt.__typename !== 'SchedulePromptPayload') throw new Error(JSON.stringify(data))
      expect(data!.schedulePrompt.entry.status).toBe('SCHEDULED')
      ids.push(data!.schedulePrompt.entry.queueId)
      await sleep(60)
    }
    expect(new Set(ids).size).toBe(1)
    expect((await t.request(SessionDocument, { id: s })).data!.session!.status).toBe('SCHEDULED')
    await waitForEntry(t, s, ids[0]!, ['COMPLETED'])
    expect(requestsWith('draft one')).toHaveLength(0)
    expect(requestsWith('draft two')).toHaveLength(0)
    expect(requestsWith('draft three')).toHaveLength(1)

    await t.request(SchedulePromptDocument, { input: { sessionId: s, input: 'discarded', scheduleKey: 'k2', debounceMs: 200 } })
    const cancel = await t.request(CancelScheduledPromptDocument, { sessionId: s, scheduleKey: 'k2' })
    expect(cancel.data!.cancelScheduledPrompt).toMatchObject({ cancelled: true })
    await sleep(350)
    expect(requestsWith('discarded')).toHaveLength(0)
    expect((await t.request(CancelScheduledPromptDocument, { sessionId: s, scheduleKey: 'k2' })).data!.cancelScheduledPrompt).toMatchObject(
      { cancelled: false },
    )
  })

  it('refuses bad requests with typed errors and writes nothing', async () => {
    const s = await createSession(t, 'bad-input')
    const cases = [
      [{ sessionId: 'nope', input: 'x' }, 'NotFoundError'],
      [{ sessionId: s, promptId: 'no-such-prompt' }, 'NotFoundError'],
      [{ sessionId: s }, 'InvalidRequestError'],
      [{ sessionId: s, promptId: 'chat', variables: [1, 2] }, 'InvalidRequestError'],
      [{ sessionId: s, input: 'x', overrides: { maxTokens: -1 } }, 'InvalidRequestError'],
      [{ sessionId: s, promptId: 'extract-json' }, 'RenderError'],
      [{ sessionId: s, input: 'x', profileId: 'openai-default' }, 'CredentialsError'],
    ] as const
    for (const [input, typename] of cases) {
      const { data } = await t.request(EnqueuePromptDocument, { input: input as never })
      expect(data!.enqueuePrompt.__typename, JSON.stringify(input)).toBe(typename)
    }
    expect(await t.app.store.entries.forSession('local', s, true)).toEqual([])
  })

  it('lists sessions newest first with paging, and deleting one cancels its queue first', async () => {
    const s = await createSession(t, 'to-delete')
    const running = await enqueue(t, { sessionId: s, input: words(20), overrides: slow(50) })
    await enqueue(t, { sessionId: s, input: 'queued behind' })
    await waitForEntry(t, s, running.queueId, ['RUNNING'])
    const { data } = await t.request(DeleteSessionDocument, { id: s })
    expect(data!.deleteSession).toEqual({ __typename: 'DeleteSessionPayload', deletedId: s })
    expect((await t.request(SessionDocument, { id: s })).data!.session).toBeNull()
    const run = await t.app.store.runs.find(
      'local',
      running.runId ?? (await t.app.store.runs.list('local', { sessionId: s }, null, 1))[0]!.id,
    )
    expect(run).toMatchObject({ status: 'ABORTED', terminalReason: 'CANCELLED' })
    expect(requestsWith('queued behind')).toHaveLength(0)

    const page1 = (await t.request(SessionsDocument, { first: 2 })).data!.sessions
    const page2 = (await t.request(SessionsDocument, { first: 2, after: page1.pageInfo.endCursor })).data!.sessions
    const ids = [...page1.edges, ...page2.edges].map((e) => e.node.id)
    expect(new Set(ids).size).toBe(4)
    expect(ids).not.toContain(s)
  })

  it('refuses a session id that is taken, in a batch of new sessions, and keeps the first', async () => {
    const results = await Promise.all(
      ['taken', 'taken', 'free-1', 'free-2'].map((id, i) =>
        t.request(CreateSessionDocument, { input: { id, title: `t${i}`, defaultProfileId: 'fake-echo', metadata: { n: i } } }),
      ),
    )
    const typenames = results.map((r) => r.data!.createSession.__typename)
    expect(typenames.filter((n) => n === 'CreateSessionPayload')).toHaveLength(3)
    const refused = results.map((r) => r.data!.createSession).find((p) => p.__typename === 'InvalidRequestError')
    expect(refused).toMatchObject({ code: 'INVALID_REQUEST', message: expect.stringContaining("'taken' already exists") })
    const kept = (await t.app.store.sessions.find('local', 'taken'))!
    expect(kept).toMatchObject({ title: expect.stringMatching(/^t[01]$/), metadata: { n: Number(kept.title!.slice(1)) } })
    await t.request(RunPromptDocument, { input: { sessionId: 'free-2', input: 'works' } })
    expect((await t.request(SessionDocument, { id: 'free-2' })).data!.session!.messages).toHaveLength(2)
  })

  it('forgets a session whose lease lapsed while idle and loads it back as it was, numbering on without a gap; a busy one keeps running', async () => {
    let later = 0
    const moved = await startTestServer({ provider, app: { clock: () => Date.now() + later } })
    try {
      const idle = await createSession(moved, 'lapsed')
      await moved.request(RunPromptDocument, { input: { sessionId: idle, input: 'before the lapse' } })
      const busy = await createSession(moved, 'renewed')
      const running = await enqueue(moved, { sessionId: busy, input: words(20), overrides: slow(20) })
      await waitForEntry(moved, busy, running.queueId, ['RUNNING'])
      const loads = vi.spyOn(moved.app.store.entries, 'maxQueueSequence')
      later = 10 * 60_000 // past every lease this instance holds

      await moved.request(RunPromptDocument, { input: { sessionId: idle, input: 'after the lapse' } })
      expect(loads.mock.calls.map(([, sessionId]) => sessionId)).toEqual([idle])
      expect((await waitForEntry(moved, busy, running.queueId, ['COMPLETED', 'FAILED'])).status).toBe('COMPLETED')
      const session = (await moved.request(SessionDocument, { id: idle })).data!.session!
      expect(session.messages.map((m) => m.content)).toEqual(['before the lapse', 'before the lapse', 'after the lapse', 'after the lapse'])
      const events = moved.subscribe(SessionEventsDocument, { sessionId: idle, afterSequence: 0 })
      await events.until((r) => r.filter((e) => e.data?.sessionEvents.__typename === 'RunFinishedEvent').length === 2)
      events.unsubscribe()
      // let go cleanly, it numbers on right after its last event: no gap, no number twice
      const sequences = events.results.map((r) => r.data!.sessionEvents.sequence)
      expect(sequences).toEqual(sequences.map((_, i) => i + 1))
    } finally {
      await moved.stop({ dropDatabase: true })
    }
  })

  it("deletes a session's event log with it: the same id created again replays only its own events", async () => {
    const s = await createSession(t, 'recreated')
    await t.request(RunPromptDocument, { input: { sessionId: s, input: 'the old conversation' } })
    await t.request(DeleteSessionDocument, { id: s })
    await createSession(t, 'recreated')
    await t.request(RunPromptDocument, { input: { sessionId: s, input: 'the new one' } })
    const events = t.subscribe(SessionEventsDocument, { sessionId: s, afterSequence: 0 })
    const { lastSequence } = (await t.request(LastSequenceDocument, { id: s })).data!.session!
    await events.until((r) => r.some((e) => e.data?.sessionEvents.sequence === lastSequence))
    events.unsubscribe()
    const replayed = events.results.map((r) => r.data!.sessionEvents)
    expect(replayed.filter((e) => e.__typename === 'RunFinishedEvent')).toHaveLength(1)
    expect(JSON.stringify(replayed)).not.toContain('old conversation')
    expect(replayed[0]!.sequence).toBe(1)
  })
})
