import { afterEach, describe, expect, it } from 'vitest'
import { EnqueuePromptDocument, PromptDocument, QueueEntryDocument, UpsertPromptDocument } from '../generated/graphql.js'
import { providers } from '../helpers/databases.js'
import { createSession } from '../helpers/flow.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

const SESSIONS = 4
/** Pairs of admissions a session, each pair sharing a key: within the session's outstanding limit. */
const PAIRS = 5
const UPSERTS = 40

describe.each(providers)('every acknowledged write, read back after a restart (%s)', (provider) => {
  let server: TestServer | undefined
  afterEach(async () => {
    await server?.stop({ dropDatabase: true })
    server = undefined
  })

  it('keeps each admission once per idempotency key and every upsert, raced against each other', async () => {
    const first = await startTestServer({ provider })
    server = first
    const sessionIds = await Promise.all(Array.from({ length: SESSIONS }, (_, i) => createSession(first, `raced-${i}`)))
    const enqueue = (sessionId: string, key: string) =>
      first.request(EnqueuePromptDocument, { input: { sessionId, input: `prompt ${key}`, idempotencyKey: key } }).then((r) => {
        const payload = r.data!.enqueuePrompt
        if (payload.__typename !== 'EnqueuePromptPayload') throw new Error(payload.__typename)
        return { sessionId, key, queueId: payload.entry.queueId }
      })
    const upsert = (i: number) =>
      first
        .request(UpsertPromptDocument, { input: { id: `raced-${i}`, messages: [{ role: 'USER', content: `version of ${i}` }] } })
        .then((r) => {
          const payload = r.data!.upsertPrompt
          if (payload.__typename !== 'UpsertPromptPayload') throw new Error(payload.__typename)
          return payload.prompt
        })
    // no await in between: pairs of admissions sharing a key, interleaved with unrelated upserts
    const keys = Array.from({ length: PAIRS }, (_, i) => `key-${i}`)
    const [admitted, upserted] = await Promise.all([
      Promise.all(sessionIds.flatMap((sessionId) => keys.flatMap((key) => [enqueue(sessionId, key), enqueue(sessionId, key)]))),
      Promise.all(Array.from({ length: UPSERTS }, (_, i) => upsert(i))),
    ])
    for (let i = 0; i < admitted.length; i += 2) expect(admitted[i]!.queueId).toBe(admitted[i + 1]!.queueId)

    await first.stop()
    server = await startTestServer({ provider, database: first.database })
    for (const sessionId of sessionIds) {
      const stored = await server.app.store.entries.forSession('local', sessionId, true)
      expect(stored.map((e) => e.idempotencyKey).sort()).toEqual([...keys].sort())
    }
    for (const { sessionId, queueId } of admitted) {
      const entry = (await server.request(QueueEntryDocument, { sessionId, queueId })).data!.queueEntry
      expect(entry?.queueId).toBe(queueId)
    }
    for (const prompt of upserted) {
      const read = (await server.request(PromptDocument, { id: prompt.id })).data!.prompt
      expect(read).toMatchObject({ id: prompt.id, version: prompt.version, definitionHash: prompt.definitionHash })
    }
  })
})
