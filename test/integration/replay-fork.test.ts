import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  ForkSessionDocument,
  ReplayRunDocument,
  type ReplayRunInput,
  RunDocument,
  RunPromptRefDocument,
  SessionDocument,
  SetPromptLabelDocument,
  UpsertPromptDocument,
} from '../generated/graphql.js'
import { providers } from '../helpers/databases.js'
import { createSession, enqueue, slow, waitForEntry, words } from '../helpers/flow.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

// Replays and forks: a finished run's request admitted again, with another version, in a copy of
// its session as it was; a session copied up to a message.
describe.each(providers)('replaying runs and forking sessions (%s)', (provider) => {
  let t: TestServer
  let source: { id: string; sessionId: string }
  beforeAll(async () => {
    t = await startTestServer({ provider })
    for (const text of ['alpha', 'bravo']) {
      await t.request(UpsertPromptDocument, {
        input: { id: 'replayed', messages: [{ role: 'USER', content: `${text} {{input}}` }], defaultProfileId: 'fake-echo' },
      })
    }
    await t.request(SetPromptLabelDocument, { input: { promptId: 'replayed', label: 'production', version: 1 } })
    const sessionId = await createSession(t, 'original')
    await run({ sessionId, input: 'earlier turn' })
    const { run: ran } = await run({ sessionId, promptId: 'replayed', input: 'x', tags: ['eval'] })
    source = { id: ran!.id, sessionId }
  })
  afterAll(() => t?.stop({ dropDatabase: true }))

  async function run(input: Parameters<typeof enqueue>[1]) {
    const { data } = await t.request(RunPromptRefDocument, { input })
    if (data?.runPrompt.__typename !== 'RunPromptPayload') throw new Error(JSON.stringify(data))
    return data.runPrompt
  }
  const history = async (id: string) => (await t.request(SessionDocument, { id })).data!.session!.messages.map((m) => m.content)
  async function replay(input: ReplayRunInput) {
    const { data } = await t.request(ReplayRunDocument, { input })
    if (data?.replayRun.__typename !== 'ReplayRunPayload') throw new Error(JSON.stringify(data))
    const { entry } = data.replayRun
    const ended = await waitForEntry(t, entry.sessionId, entry.queueId, ['COMPLETED'])
    return { entry, run: (await t.request(RunDocument, { id: ended.runId! })).data!.run! }
  }

  it('forks a session up to a message: the fork has that history and the source keeps its own', async () => {
    expect(await history('original')).toEqual(['earlier turn', 'earlier turn', 'alpha x', 'alpha x'])
    const input = { sessionId: 'original', atPosition: 2, newSessionId: 'forked' }
    const { data } = await t.request(ForkSessionDocument, { input })
    expect(data?.forkSession).toMatchObject({
      session: { id: 'forked', defaultProfileId: 'fake-echo', forkedFrom: { sessionId: 'original', atPosition: 2 } },
    })
    // a retry of the same fork answers the session it made
    expect((await t.request(ForkSessionDocument, { input })).data?.forkSession).toEqual(data?.forkSession)
    expect(await history('forked')).toEqual(['earlier turn', 'earlier turn'])
    await run({ sessionId: 'forked', input: 'in the fork' })
    expect(await history('forked')).toEqual(['earlier turn', 'earlier turn', 'in the fork', 'in the fork'])
    expect(await history('original')).toHaveLength(4)
  })

  it('refuses a fork at a position the session does not have, or into an id that exists, and makes nothing', async () => {
    const missing = await t.request(ForkSessionDocument, { input: { sessionId: 'original', atPosition: 9, newSessionId: 'nowhere' } })
    expect(missing.data?.forkSession).toMatchObject({
      code: 'INVALID_REQUEST',
      message: "input.atPosition: session 'original' has no message at position 9",
    })
    const taken = await t.request(ForkSessionDocument, { input: { sessionId: 'original', atPosition: 0, newSessionId: 'forked' } })
    expect(taken.data?.forkSession).toMatchObject({
      code: 'INVALID_REQUEST',
      message: "input.newSessionId: a session 'forked' already exists",
    })
    expect((await t.request(SessionDocument, { id: 'nowhere' })).data!.session).toBeNull()
    expect(await history('forked')).toHaveLength(4)
  })

  it('replays a run with another version in a fork of its session as it was, recorded as a replay', async () => {
    const { entry, run: replayed } = await replay({ runId: source.id, promptRef: { id: 'replayed', version: 2 } })
    expect(entry).toMatchObject({ promptVersion: 2, input: 'x' })
    expect(entry.sessionId).toMatch(/^replay-/)
    const fork = (await t.request(SessionDocument, { id: entry.sessionId })).data!.session!
    expect(fork).toMatchObject({ forkedFrom: { sessionId: 'original', atPosition: 2 } })
    expect(replayed).toMatchObject({ replayOf: source.id, promptVersion: 2, output: 'bravo x', tags: ['eval'] })
    // the fork holds what the session held when the original run started, then the replay's turn
    expect(await history(entry.sessionId)).toEqual(['earlier turn', 'earlier turn', 'bravo x', 'bravo x'])
  })

  it('replays the version the run ran by default, and into a session of your choice', async () => {
    await t.request(SetPromptLabelDocument, { input: { promptId: 'replayed', label: 'production', version: 2, expectedVersion: 1 } })
    const target = await createSession(t, 'replay-target')
    const { entry, run: replayed } = await replay({ runId: source.id, sessionId: target })
    expect(entry.sessionId).toBe(target)
    expect(replayed).toMatchObject({ replayOf: source.id, promptVersion: 1, output: 'alpha x' })
  })

  it('answers a retry with the same idempotency key with the same entry in the same fork', async () => {
    const input = { runId: source.id, idempotencyKey: 'compare-1' }
    const first = await t.request(ReplayRunDocument, { input })
    const again = await t.request(ReplayRunDocument, { input })
    expect(first.data?.replayRun.__typename).toBe('ReplayRunPayload')
    expect(again.data?.replayRun).toEqual(first.data?.replayRun)
  })

  it('refuses to replay a run that has not ended, or does not exist', async () => {
    const sessionId = await createSession(t, 'busy')
    const entry = await enqueue(t, { sessionId, input: words(40), overrides: slow(20) })
    const running = await waitForEntry(t, sessionId, entry.queueId, ['RUNNING'])
    const live = await t.request(ReplayRunDocument, { input: { runId: running.runId! } })
    expect(live.data?.replayRun).toMatchObject({
      code: 'INVALID_REQUEST',
      message: `input.runId: run '${running.runId}' has not ended yet`,
    })
    const none = await t.request(ReplayRunDocument, { input: { runId: 'no-such-run' } })
    expect(none.data?.replayRun).toMatchObject({ code: 'NOT_FOUND' })
  })
})
