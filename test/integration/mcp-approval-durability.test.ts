import type { ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { FakeVendorServer } from '../fixtures/fake-vendor.js'
import { McpToolServer } from '../fixtures/mcp-tool-server.js'
import {
  ApproveToolCallsDocument,
  CreateSessionDocument,
  EnqueuePromptDocument,
  QueueEntryDocument,
  RunServerToolsDocument,
  type RunServerToolsQuery,
} from '../generated/graphql.js'
import { vendorCatalog } from '../helpers/catalog-dir.js'
import { createTestDatabase, providers, type TestDatabase } from '../helpers/databases.js'
import { killHard, post, startServerProcess } from '../helpers/process.js'

type Run = NonNullable<RunServerToolsQuery['run']>

/** Polls a server until the run is in one of `statuses` (a server process has no subscription here to await). */
async function runUntil(url: string, runId: string, statuses: string[], timeoutMs = 20_000): Promise<Run> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const run = (await post(url, RunServerToolsDocument, { id: runId })).run
    if (run && statuses.includes(run.status)) return run
    if (Date.now() > deadline) throw new Error(`run ${runId} stayed ${run?.status}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}

const cluster = Boolean(process.env.DATABASE_URL && process.env.REDIS_URL)

let openai: FakeVendorServer
let anthropic: FakeVendorServer
let mcp: McpToolServer
let env: Record<string, string>
beforeAll(async () => {
  openai = await FakeVendorServer.start('openai')
  anthropic = await FakeVendorServer.start('anthropic')
  mcp = await McpToolServer.start()
  env = {
    PROMPTLINE_CATALOG: vendorCatalog(openai, anthropic),
    OA_KEY: 'sk-oa-test',
    PROMPTLINE_MCP_ORIGINS: mcp.origin,
    PROMPTLINE_MCP_HEADER_ENVS: 'CITY_MCP_TOKEN',
    CITY_MCP_TOKEN: 'Bearer city-t0k3n',
    // the dead server's session lease lapses in seconds, not the default's minute
    PROMPTLINE_HEARTBEAT_MS: '200',
    PROMPTLINE_STALE_MS: '2000',
    PROMPTLINE_REAP_INTERVAL_MS: '200',
  }
})
afterAll(async () => {
  await openai?.close()
  await anthropic?.close()
  await mcp?.close()
})

describe.each(providers)('an MCP call waiting for approval across kill -9 (%s)', (provider) => {
  let database: TestDatabase | undefined
  const children: ChildProcess[] = []
  afterEach(async () => {
    for (const child of children.splice(0)) await killHard(child)
    await database?.drop()
  })

  it('after a restart, a decline sent to another instance is told to the model and never made; the approved call is made once', async () => {
    openai.script(
      {
        tokens: [],
        toolCalls: [
          { name: 'lookup_city', arguments: '{"city": "Bergen"}' },
          { name: 'flaky_forecast', arguments: '{"city": "Bergen"}' },
        ],
      },
      { tokens: ['Bergen ', 'facts.'] },
    )
    database = await createTestDatabase(provider)
    // on PostgreSQL with Redis the restarted deployment is two instances, and decisions go to either
    const shared: Record<string, string> =
      cluster && provider === 'postgresql'
        ? { REDIS_URL: process.env.REDIS_URL!, PROMPTLINE_REDIS_PREFIX: `test-${randomBytes(6).toString('hex')}:` }
        : {}
    const first = await startServerProcess(database.url, { ...env, ...shared })
    children.push(first.child)
    await post(first.url, CreateSessionDocument, { input: { id: 'approvals', defaultProfileId: 'oa-plain' } })
    const mcpServers = [
      {
        label: 'cities',
        url: mcp.url,
        requireApproval: { mode: 'ALWAYS' as const },
        headers: [{ name: 'Authorization', valueEnv: 'CITY_MCP_TOKEN' }],
      },
    ]
    const admitted = (await post(first.url, EnqueuePromptDocument, { input: { sessionId: 'approvals', input: 'Bergen?', mcpServers } }))
      .enqueuePrompt
    if (admitted.__typename !== 'EnqueuePromptPayload') throw new Error(JSON.stringify(admitted))
    let runId: string | null | undefined = null
    while (!runId)
      runId = (await post(first.url, QueueEntryDocument, { sessionId: 'approvals', queueId: admitted.entry.queueId })).queueEntry?.runId
    const waiting = await runUntil(first.url, runId, ['REQUIRES_ACTION'])
    expect(waiting.pendingToolCalls.map((c) => c.approvalRequired)).toEqual([true, true])
    const before = mcp.calls.length
    await killHard(first.child)

    const restarted = await startServerProcess(database.url, { ...env, ...shared })
    children.push(restarted.child)
    const other = shared.REDIS_URL ? await startServerProcess(database.url, { ...env, ...shared }) : restarted
    if (other !== restarted) children.push(other.child)
    const [lookup, forecast] = waiting.pendingToolCalls
    const declined = (
      await post(other.url, ApproveToolCallsDocument, {
        input: { runId, decisions: [{ callId: forecast!.callId, approve: false, reason: 'the forecast costs too much' }] },
      })
    ).approveToolCalls
    expect(declined.__typename).toBe('ApproveToolCallsPayload')
    expect(mcp.calls.length).toBe(before)
    await post(restarted.url, ApproveToolCallsDocument, { input: { runId, decisions: [{ callId: lookup!.callId, approve: true }] } })

    const done = await runUntil(restarted.url, runId, ['COMPLETED', 'FAILED', 'ABORTED'])
    expect(done).toMatchObject({ status: 'COMPLETED', output: 'Bergen facts.' })
    expect(mcp.calls.slice(before).map((c) => [c.name, c.arguments])).toEqual([['lookup_city', { city: 'Bergen' }]])
    expect(JSON.stringify(openai.requests.at(-1)!.body)).toContain('the call was declined: the forecast costs too much; it was not made')
  }, 60_000)

  it('never makes again a call that kill -9 cut while it was being made: the model is told its outcome is unknown', async () => {
    openai.script({ tokens: [], toolCalls: [{ name: 'stalled_lookup', arguments: '{"city": "Tromsø"}' }] }, { tokens: ['Unknown.'] })
    database = await createTestDatabase(provider)
    const first = await startServerProcess(database.url, env)
    children.push(first.child)
    const stalled = mcp.nextCall('stalled_lookup')
    await post(first.url, CreateSessionDocument, { input: { id: 'cut-call', defaultProfileId: 'oa-plain' } })
    const mcpServers = [{ label: 'cities', url: mcp.url, requireApproval: { mode: 'NEVER' as const } }]
    const admitted = (await post(first.url, EnqueuePromptDocument, { input: { sessionId: 'cut-call', input: 'Tromsø?', mcpServers } }))
      .enqueuePrompt
    if (admitted.__typename !== 'EnqueuePromptPayload') throw new Error(JSON.stringify(admitted))
    // the call is being made (the server has it, and has not answered) when the process dies
    await stalled
    const before = mcp.calls.length
    let runId: string | null | undefined = null
    while (!runId)
      runId = (await post(first.url, QueueEntryDocument, { sessionId: 'cut-call', queueId: admitted.entry.queueId })).queueEntry?.runId
    await killHard(first.child)
    mcp.release()

    const restarted = await startServerProcess(database.url, env)
    children.push(restarted.child)
    const done = await runUntil(restarted.url, runId, ['COMPLETED', 'FAILED', 'ABORTED'])
    expect(done.status).toBe('COMPLETED')
    expect(mcp.calls.length).toBe(before)
    expect(done.toolRounds[0]!.results).toMatchObject([{ isError: true, server: 'cities', durationMs: null }])
    expect(done.toolRounds[0]!.results[0]!.output).toContain('its outcome is unknown, and it was not made again')
    expect(JSON.stringify(openai.requests.at(-1)!.body)).toContain('its outcome is unknown')
  }, 60_000)
})
