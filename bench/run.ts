// npm run bench: the server (built, in its own process) on a fresh SQLite file with the fake
// backend, driven over graphql-ws by 1, 10 and 100 concurrent sessions. Prints a table and
// writes bench/results.json. Figures vary with the machine; no test asserts on them.
import { execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { createClient, type Client } from 'graphql-ws'
import WebSocket from 'ws'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const TOKENS_PER_RUN = 200
const LEVELS = (process.env.BENCH_SESSIONS ?? '1,10,100').split(',').map(Number)
const RUNS_PER_LEVEL = Number(process.env.BENCH_RUNS ?? 400)
const PROMPT = Array.from({ length: TOKENS_PER_RUN }, (_, i) => `t${i}`).join(' ')

interface LevelResult {
  sessions: number
  runs: number
  seconds: number
  runsPerSecond: number
  firstTokenP50Ms: number
  firstTokenP99Ms: number
  tokenEventsPerSecond: number
  tokensPerSecond: number
  serverRssMiB: number
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN

function rssMiB(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return match ? Number(match[1]) / 1024 : NaN
}

async function startServer(databaseUrl: string) {
  const child = spawn(process.execPath, ['dist/main.js'], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      PORT: '0',
      LOG_LEVEL: 'error',
      PROMPTLINE_MAX_PENDING_ADMISSIONS: '100000',
      PROMPTLINE_MAX_PENDING_BYTES: String(1024 ** 3),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const url = await new Promise<string>((resolve, reject) => {
    let out = ''
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk
      const match = /GraphiQL at (http:\/\/\S+)\/graphql/.exec(out)
      if (match) resolve(match[1]!)
    })
    child.on('exit', (code) => reject(new Error(`server exited with ${code}`)))
  })
  return { child, url }
}

function request<T>(client: Client, query: string, variables: Record<string, unknown>): Promise<T> {
  return new Promise((resolve, reject) => {
    let result: unknown
    client.subscribe({ query, variables }, { next: (r) => (result = r), error: reject, complete: () => resolve(result as T) })
  })
}

const CREATE = 'mutation($id: ID!) { createSession(input: { id: $id, defaultProfileId: "fake-echo" }) { __typename } }'
const ENQUEUE = 'mutation($s: ID!, $input: String!) { enqueuePrompt(input: { sessionId: $s, input: $input }) { __typename ... on EnqueuePromptPayload { entry { queueId } } } }'
const EVENTS = 'subscription($s: ID!) { sessionEvents(sessionId: $s) { __typename sequence ... on TokenDeltaEvent { text } ... on RunFinishedEvent { run { status } } } }'

async function runLevel(url: string, pid: number, sessions: number, level: number): Promise<LevelResult> {
  const runsPerSession = Math.max(1, Math.round(RUNS_PER_LEVEL / sessions))
  const latencies: number[] = []
  let tokenEvents = 0
  let tokens = 0
  let peakRss = 0
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssMiB(pid))), 100)
  const clients: Client[] = []
  const started = performance.now()
  await Promise.all(
    Array.from({ length: sessions }, async (_, i) => {
      const client = createClient({ url: `${url.replace('http', 'ws')}/graphql`, webSocketImpl: WebSocket, retryAttempts: 0 })
      clients.push(client)
      const sessionId = `bench-${level}-${i}`
      await request(client, CREATE, { id: sessionId })
      // one live subscription per session, like a web client: first token and end of each run
      let onToken: (() => void) | null = null
      let onFinished: (() => void) | null = null
      client.subscribe<{ sessionEvents: { __typename: string; text?: string } }>(
        { query: EVENTS, variables: { s: sessionId } },
        {
          next: ({ data }) => {
            const event = data!.sessionEvents
            if (event.__typename === 'TokenDeltaEvent') {
              tokenEvents++
              tokens += event.text!.split(' ').filter(Boolean).length
              onToken?.()
              onToken = null
            } else if (event.__typename === 'RunFinishedEvent') onFinished?.()
          },
          error: (e) => console.error('subscription error', e),
          complete: () => {},
        },
      )
      await new Promise((r) => setTimeout(r, 20))
      for (let r = 0; r < runsPerSession; r++) {
        const sent = performance.now()
        const firstToken = new Promise<void>((resolve) => (onToken = resolve))
        const finished = new Promise<void>((resolve) => (onFinished = resolve))
        await request(client, ENQUEUE, { s: sessionId, input: PROMPT })
        await firstToken
        latencies.push(performance.now() - sent)
        await finished
      }
    }),
  )
  const seconds = (performance.now() - started) / 1000
  clearInterval(sampler)
  peakRss = Math.max(peakRss, rssMiB(pid))
  await Promise.all(clients.map((c) => c.dispose()))
  latencies.sort((a, b) => a - b)
  const runs = runsPerSession * sessions
  return {
    sessions,
    runs,
    seconds: round(seconds),
    runsPerSecond: round(runs / seconds),
    firstTokenP50Ms: round(percentile(latencies, 50)),
    firstTokenP99Ms: round(percentile(latencies, 99)),
    tokenEventsPerSecond: Math.round(tokenEvents / seconds),
    tokensPerSecond: Math.round(tokens / seconds),
    serverRssMiB: round(peakRss),
  }
}

const round = (n: number) => Math.round(n * 10) / 10

async function main() {
  execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' })
  const dir = mkdtempSync(path.join(tmpdir(), 'promptline-bench-'))
  const { child, url } = await startServer(`file:${path.join(dir, 'bench.db')}`)
  const results: LevelResult[] = []
  try {
    for (const [i, sessions] of LEVELS.entries()) results.push(await runLevel(url, child.pid!, sessions, i))
  } finally {
    child.kill('SIGTERM')
    await new Promise((r) => child.once('exit', r))
    rmSync(dir, { recursive: true, force: true })
  }
  console.log(`\npromptline bench — fake backend, ${TOKENS_PER_RUN} tokens a run, SQLite, graphql-ws\n`)
  console.table(results)
  const file = path.join(ROOT, 'bench/results.json')
  writeFileSync(file, `${JSON.stringify({ at: new Date().toISOString(), node: process.version, tokensPerRun: TOKENS_PER_RUN, results }, null, 2)}\n`)
  console.log(`written to ${path.relative(process.cwd(), file)}`)
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
