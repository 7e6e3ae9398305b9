// The fake OpenAI server in a process of its own, so the floor and promptline share it:
// tsx bench/fake-openai.ts <tokenDelayMs>; prints its base URL.
import { FakeVendorServer } from '../test/fixtures/fake-vendor.js'

const server = await FakeVendorServer.start('openai')
server.defaults = { delayMs: Number(process.argv[2] ?? 0) }
// a request that offers tools and carries no tool result yet gets a call of the first (the soak's tool rounds)
server.scriptFor = (body) =>
  body.tools?.length > 0 && body.messages?.at(-1)?.role !== 'tool'
    ? { toolCalls: [{ name: body.tools[0].function.name, arguments: '{"city":"Paris"}' }] }
    : {}
// keep no history: a bench sends many thousands of requests
server.requests.push = () => 0
process.stdout.write(`${server.baseUrl}\n`)
process.on('SIGTERM', () => void server.close().then(() => process.exit(0)))
