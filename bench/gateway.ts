// The gateway levels of `npm run bench`: POST /v1/chat/completions, streamed and not, through
// promptline and straight to the same fake OpenAI server in the same run, sequentially and at
// 10, 50 and 200 clients. The server runs as in production: it requires keys, the key has rate
// limits and a daily budget, every request is a durable run, and the server's admission limits
// keep their defaults (what it refuses, with its status, is counted).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { percentile } from './drive.js'
import { PromptlineProcess, ROOT, startChild, stop } from './processes.js'

const ADMIN_SECRET = 'bench-admin-secret'
export const GATEWAY_CLIENTS = (process.env.BENCH_GATEWAY_CLIENTS ?? '1,10,50,200').split(',').filter(Boolean).map(Number)
/** 20 words: the fake vendor answers with them, one token each. */
const MESSAGE = Array.from({ length: 20 }, (_, i) => `w${i}`).join(' ')
const requestsAt = (clients: number) => (clients === 1 ? 400 : Math.max(1000, clients * 10))

interface Level {
  requests: number
  rps: number
  p50: number
  p95: number
  p99: number
  /** Answers other than 200, by status (with retry-after: how many carried it). */
  refused: Record<string, number>
  /** The p50 of the server's own figure, x-promptline-overhead-ms; null without the header. */
  overheadP50: number | null
}

/** `clients` loops sending `total` requests between them; each latency is from sending to the body read whole. */
async function level(url: string, headers: Record<string, string>, stream: boolean, clients: number, total: number): Promise<Level> {
  const body = JSON.stringify({ model: 'gw', messages: [{ role: 'user', content: MESSAGE }], stream })
  const latencies: number[] = []
  const overheads: number[] = []
  const refused: Record<string, number> = {}
  let sent = 0
  // a request on each client's connection first: clients of a gateway keep theirs open, and a
  // burst of new connections is the opening's tail, not the steady state's (docs/performance.md)
  await Promise.all(
    Array.from({ length: clients }, () => fetch(`${url}/v1/chat/completions`, { method: 'POST', headers, body }).then((r) => r.text())),
  )
  const started = performance.now()
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (sent++ < total) {
        const at = performance.now()
        const response = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers, body })
        const text = await response.text()
        if (response.status !== 200) {
          const key = `${response.status}${response.headers.has('retry-after') ? '+retry-after' : ''}`
          refused[key] = (refused[key] ?? 0) + 1
          continue
        }
        if (!text.includes('w19')) throw new Error(`an answer without its last token: ${text.slice(0, 300)}`)
        latencies.push(performance.now() - at)
        const overhead = response.headers.get('x-promptline-overhead-ms')
        if (overhead !== null) overheads.push(Number(overhead))
      }
    }),
  )
  const seconds = (performance.now() - started) / 1000
  latencies.sort((a, b) => a - b)
  overheads.sort((a, b) => a - b)
  return {
    requests: latencies.length,
    rps: Math.round(latencies.length / seconds),
    p50: round2(percentile(latencies, 50)),
    p95: round2(percentile(latencies, 95)),
    p99: round2(percentile(latencies, 99)),
    refused,
    overheadP50: overheads.length > 0 ? round2(percentile(overheads, 50)) : null,
  }
}

const round2 = (n: number) => Math.round(n * 100) / 100

/** A WRITE key with rate limits and a daily budget, made by the bootstrap admin key; its secret. */
async function benchKey(url: string): Promise<string> {
  const response = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_SECRET}` },
    body: JSON.stringify({
      query: `mutation { createApiKey(input: { name: "gateway bench", role: WRITE,
        limits: { requestsPerMinute: 10000000, tokensPerMinute: 1000000000, concurrentRuns: 10000 },
        budget: { costUsd: 1000000, period: DAY } }) { ... on CreateApiKeyPayload { secret } ... on Error { code message } } }`,
    }),
  })
  const answer = (await response.json()) as { data?: { createApiKey?: { secret?: string } } }
  const data = answer.data
  if (!data) throw new Error(`the bench key was refused: ${JSON.stringify(answer)}`)
  if (!data?.createApiKey?.secret) throw new Error(`the bench key was refused: ${JSON.stringify(data)}`)
  return data.createApiKey.secret
}

export interface GatewayRow {
  stream: boolean
  clients: number
  directRps: number
  rps: number
  directP50: number
  addedP50: number
  addedP95: number
  addedP99: number
  p99: number
  headerOverheadP50: number | null
  cpuMsPerRequest: number
  refused: string
}

/** The gateway table: each level straight to the vendor, then through promptline, back to back. */
export async function gatewayBench(profileTo: string | null): Promise<GatewayRow[]> {
  const vendor = await startChild(path.join(ROOT, 'node_modules/.bin/tsx'), ['bench/fake-openai.ts', '0'], {}, /(http:\/\/\S+)\n/)
  const vendorUrl = vendor.match[1]!.replace(/\/v1$/, '')
  const catalog = mkdtempSync(path.join(tmpdir(), 'promptline-bench-gateway-'))
  writeFileSync(
    path.join(catalog, 'gateway.yaml'),
    `backends:\n  - { id: gw-openai, kind: OPENAI, baseUrl: "${vendor.match[1]}", credentialEnv: BENCH_KEY }\n` +
      `profiles:\n  - { id: gw, backendId: gw-openai, model: gpt-4o-mini }\n`,
  )
  const rows: GatewayRow[] = []
  let server: PromptlineProcess | null = null
  try {
    server = await PromptlineProcess.start(catalog, profileTo !== null, { PROMPTLINE_API_KEYS: `${ADMIN_SECRET}:default:admin` })
    const ours = { 'content-type': 'application/json', authorization: `Bearer ${await benchKey(server.url)}` }
    const direct = { 'content-type': 'application/json', authorization: 'Bearer bench-key' }
    for (const stream of [false, true]) {
      await level(server.url, ours, stream, 1, 200) // warm: the JIT, the SDK's connection pool
      for (const clients of GATEWAY_CLIENTS) {
        const total = requestsAt(clients)
        const floor = await level(vendorUrl, direct, stream, clients, total)
        // --profile: the non-streamed level at the most clients up to 50
        const profiled = profileTo !== null && !stream && clients === Math.max(...GATEWAY_CLIENTS.filter((c) => c <= 50))
        if (profiled) await server.startProfile()
        const cpuBefore = server.cpuMs()
        const through = await level(server.url, ours, stream, clients, total)
        const cpuMs = server.cpuMs() - cpuBefore
        if (profiled) await server.stopProfile(profileTo)
        rows.push({
          stream,
          clients,
          directRps: floor.rps,
          rps: through.rps,
          directP50: floor.p50,
          addedP50: round2(through.p50 - floor.p50),
          addedP95: round2(through.p95 - floor.p95),
          addedP99: round2(through.p99 - floor.p99),
          p99: through.p99,
          headerOverheadP50: through.overheadP50,
          cpuMsPerRequest: round2(cpuMs / Math.max(1, through.requests)),
          refused: Object.entries(through.refused)
            .map(([status, n]) => `${n}×${status}`)
            .join(' '),
        })
      }
    }
  } finally {
    await server?.close()
    await stop(vendor.child)
    rmSync(catalog, { recursive: true, force: true })
  }
  return rows
}
