// Open a session, enqueue a prompt and print its tokens as they come; the stream survives a
// server restart. Against `npm start`: npx tsx examples/stream-session.ts
import { createPromptlineClient } from 'promptline/client'

const client = createPromptlineClient({ url: process.env.PROMPTLINE_URL ?? 'http://127.0.0.1:4000/graphql', apiKey: process.env.PROMPTLINE_API_KEY })
const sessionId = await client.createSession({ defaultProfileId: 'fake-echo' })
const entry = await client.enqueue({ sessionId, promptId: 'chat', input: 'stream me, word by word', overrides: { extra: { tokenDelayMs: 100 } } })
for await (const event of client.streamSession(sessionId, { afterSequence: 0 })) {
  if (event.__typename === 'TokenDeltaEvent') process.stdout.write(event.text)
  if (event.__typename === 'RunFinishedEvent' && event.run.queueId === entry.queueId) break
}
await client.close()
