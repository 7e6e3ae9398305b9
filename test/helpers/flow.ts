import {
  CreateSessionDocument,
  EnqueuePromptDocument,
  type EnqueuePromptInput,
  QueueEntryDocument,
  type QueueEntryStatus,
} from '../generated/graphql.js'
import type { TestServer } from './server.js'

/** Creates a session with the fake-echo default profile and returns its id. */
export async function createSession(t: TestServer, id: string): Promise<string> {
  const { data } = await t.request(CreateSessionDocument, { input: { id, defaultProfileId: 'fake-echo' } })
  if (data?.createSession.__typename !== 'CreateSessionPayload') throw new Error(`createSession: ${JSON.stringify(data)}`)
  return id
}

/** Fake-echo settings: `words` streamed one by one, `delayMs` before each. */
export const slow = (delayMs: number) => ({ extra: { tokenDelayMs: delayMs } })

/** Enqueues and returns the admitted entry (fails the test on a typed error). */
export async function enqueue(t: TestServer, input: EnqueuePromptInput) {
  const { data, errors } = await t.request(EnqueuePromptDocument, { input })
  if (data?.enqueuePrompt.__typename !== 'EnqueuePromptPayload') throw new Error(`enqueuePrompt: ${JSON.stringify(data ?? errors)}`)
  return data.enqueuePrompt.entry
}

/** Polls an entry until its status is one of `statuses`. */
export async function waitForEntry(t: TestServer, sessionId: string, queueId: string, statuses: QueueEntryStatus[], timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const entry = (await t.request(QueueEntryDocument, { sessionId, queueId })).data?.queueEntry
    if (entry && statuses.includes(entry.status)) return entry
    if (Date.now() > deadline) throw new Error(`entry ${queueId} stayed ${entry?.status} (${JSON.stringify(entry?.error)})`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

export const words = (n: number, prefix = 'w') => Array.from({ length: n }, (_, i) => `${prefix}${i}`).join(' ')
