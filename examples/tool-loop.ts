// A tool loop: the model calls get_weather, this program runs it and submits the result, and the
// same run answers with it. Against `npm start` (the fake backend calls the tools a message
// names, with extra.toolArguments): npx tsx examples/tool-loop.ts
import { createPromptlineClient } from 'promptline/client'

const tools: Record<string, (args: { city: string }) => Promise<unknown>> = {
  get_weather: async ({ city }) => ({ city, sky: 'clear', celsius: 18 }),
}
const weather = { name: 'get_weather', inputSchema: { type: 'object', required: ['city'], properties: { city: { type: 'string' } } } }
const client = createPromptlineClient({ url: process.env.PROMPTLINE_URL ?? 'http://127.0.0.1:4000/graphql', apiKey: process.env.PROMPTLINE_API_KEY })
const sessionId = await client.createSession({ defaultProfileId: 'fake-echo' })
const entry = await client.enqueue({ sessionId, input: 'use get_weather for Oslo', tools: [weather], overrides: { extra: { toolArguments: { city: 'Oslo' } } } })
for await (const event of client.streamSession(sessionId, { afterSequence: 0 })) {
  if (event.__typename === 'ToolCallsRequestedEvent') {
    const results = await Promise.all(
      event.calls.map(async (call) => ({ callId: call.callId, output: JSON.stringify(await tools[call.name]!(JSON.parse(call.argumentsText))) })),
    )
    // keyed by run and round: a replayed event submits nothing twice
    await client.submitToolResults(event.runId, results, { idempotencyKey: `${event.runId}/${event.round}` })
  }
  if (event.__typename === 'TokenDeltaEvent') process.stdout.write(event.text)
  if (event.__typename === 'RunFinishedEvent' && event.run.queueId === entry.queueId) break
}
await client.close()
