import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AbortRunDocument, CancelPromptDocument, QueueEntryDocument, RunsDocument, SessionsDocument } from '../generated/graphql.js'
import { createSession } from '../helpers/flow.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

const forged = (parts: unknown[]) => Buffer.from(JSON.stringify(parts)).toString('base64url')

// Bad input gets a clear typed error that names the argument, never INTERNAL.
describe('input validation', () => {
  let t: TestServer
  beforeAll(async () => {
    t = await startTestServer({ provider: 'sqlite' })
    await createSession(t, 'valid')
  })
  afterAll(() => t?.stop({ dropDatabase: true }))

  it('names the argument that is wrong', async () => {
    const cancel = await t.request(CancelPromptDocument, { sessionId: 'not valid!', queueId: 'q' })
    expect(cancel.data!.cancelPrompt).toMatchObject({ code: 'INVALID_REQUEST', message: expect.stringMatching(/^sessionId: /) })
    const longId = await t.request(CancelPromptDocument, { sessionId: 'valid', queueId: 'q'.repeat(500) })
    expect(longId.data!.cancelPrompt).toMatchObject({ code: 'INVALID_REQUEST', message: expect.stringMatching(/^queueId: /) })
    const entry = await t.request(QueueEntryDocument, { sessionId: 'not valid!', queueId: 'q' })
    expect(entry.errors![0]!).toMatchObject({ message: expect.stringMatching(/^sessionId: /), extensions: { code: 'INVALID_REQUEST' } })
    const abort = await t.request(AbortRunDocument, { runId: 'r'.repeat(500) })
    expect(abort.data!.abortRun).toMatchObject({ code: 'INVALID_REQUEST', message: expect.stringMatching(/^runId: /) })
  })

  it.each([
    ['a cursor whose timestamp is not a date', forged(['run', 'not-a-date', 'x'])],
    ['a cursor of another list', forged(['prompt', 'x'])],
    ['a cursor that is not base64 JSON', '%%%'],
  ])('refuses %s as INVALID_REQUEST naming after', async (_name, after) => {
    const runs = await t.request(RunsDocument, { first: 5, after })
    expect(runs.errors![0]!).toMatchObject({ message: expect.stringMatching(/^after: /), extensions: { code: 'INVALID_REQUEST' } })
    const sessions = await t.request(SessionsDocument, { first: 5, after: forged(['session', '2026-13-45T99:00:00Z', 'x']) })
    expect(sessions.errors![0]!.extensions!.code).toBe('INVALID_REQUEST')
  })
})
