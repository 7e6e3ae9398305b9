// npm run bench [-- --mode fake|provider]: promptline built and run in a process of its own on a
// fresh SQLite file, driven over graphql-ws by concurrent sessions (one socket each, like web
// clients). Mode fake: the built-in fake backend with 1, 10 and 100 sessions. Mode provider:
// the openai backend through the real SDK against a local fake OpenAI server, 0 and 5 ms per
// token, 1, 10 and 50 sessions, beside the floor (the same SDK calls straight to the fake
// server). Prints tables and writes bench/results.json. No test asserts on these figures.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { type Client, createClient } from 'graphql-ws'
import OpenAI from 'openai'
import WebSocket from 'ws'
import { drive, type LevelResult, round } from './percentiles.js'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const TOKENS_PER_RUN = 200
const PROMPT = Array.from({ length: TOKENS_PER_RUN }, (_, i) => `t${i}`).join(' ')
const BENCH_KEY = 'bench-key'
const mode = process.argv.includes('--mode') ? process.argv[process.argv.indexOf('--mode') + 1] : 'all'

function rssMiB(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return match ? round(Number(match[1]) / 1024) : Number.NaN
}

/** Starts a child and resolves with the first line matching `pattern`. */
function startChild(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  pattern: RegExp,
): Promise<{ child: ChildProcess; match: RegExpExecArray }> {
  const child = spawn(command, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] })
  return new Promise((resolve, reject) => {
    let out = ''
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk
      const match = pattern.exec(out)
      if (match) resolve({ child, match })
    })
    child.on('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${code}`)))
  })
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return
  child.kill('SIGTERM')
  await new Promise((r) => child.once('exit', r))
}

async function startPromptline(catalogDir: string | null) {
  const dir = mkdtempSync(path.join(tmpdir(), 'promptline-bench-'))
  const { child, match } = await startChild(
    process.execPath,
    // BENCH_SERVER_ARGS, e.g. --cpu-prof, profiles the server alone
    [...(process.env.BENCH_SERVER_ARGS?.split(' ').filter(Boolean) ?? []), 'dist/main.js'],
    {
      DATABASE_URL: `file:${path.join(dir, 'bench.db')}`,
      PORT: '0',
      LOG_LEVEL: 'error',
      PROMPTLINE_MAX_PENDING_ADMISSIONS: '100000',
      PROMPTLINE_MAX_PENDING_BYTES: String(1024 ** 3),
      BENCH_KEY,
      ...(catalogDir && { PROMPTLINE_CATALOG: catalogDir }),
    },
    /GraphiQL at (http:\/\/\S+)\/graphql/,
  )
  return {
    child,
    url: match[1]!,
    close: async () => {
      await stop(child)
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

function request<T>(client: Client, query: string, variables: Record<string, unknown>): Promise<T> {
  return new Promise((resolve, reject) => {
    let result: unknown
    client.subscribe({ query, variables }, { next: (r) => (result = r), error: reject, complete: () => resolve(result as T) })
  })
}

// sessions keep no history, so every run sends what the floor sends: one user message
const CREATE = 'mutation($id: ID!, $p: ID!) { createSession(input: { id: $id, defaultProfileId: $p, keepHistory: false }) { __typename } }'
const ENQUEUE = 'mutation($s: ID!, $input: String!) { enqueuePrompt(input: { sessionId: $s, input: $input }) { __typename } }'
const EVENTS =
  'subscription($s: ID!) { sessionEvents(sessionId: $s) { __typename ... on TokenDeltaEvent { text } ... on RunFinishedEvent { run { status errorMessage } } } }'

/** One level through promptline: a session and a socket per concurrent client. */
async function promptlineLevel(url: string, pid: number, profileId: string, sessions: number, runsPerSession: number, tag: string) {
  const clients: {
    client: Client
    sessionId: string
    onToken: (() => void) | null
    onFinished: ((status: string) => void) | null
    tokens: number
  }[] = []
  for (let i = 0; i < sessions; i++) {
    const client = createClient({ url: `${url.replace('http', 'ws')}/graphql`, webSocketImpl: WebSocket, retryAttempts: 0 })
    const state = {
      client,
      sessionId: `${tag}-${i}`,
      onToken: null as (() => void) | null,
      onFinished: null as ((status: string) => void) | null,
      tokens: 0,
    }
    await request(client, CREATE, { id: state.sessionId, p: profileId })
    client.subscribe<{ sessionEvents: { __typename: string; text?: string; run?: { status: string; errorMessage: string | null } } }>(
      { query: EVENTS, variables: { s: state.sessionId } },
      {
        next: ({ data }) => {
          const event = data!.sessionEvents
          if (event.__typename === 'TokenDeltaEvent') {
            state.tokens += event.text!.split(' ').filter(Boolean).length
            state.onToken?.()
            state.onToken = null
          } else if (event.__typename === 'RunFinishedEvent') {
            if (event.run!.status !== 'COMPLETED') console.error('run ended', event.run)
            state.onFinished?.(event.run!.status)
          }
        },
        error: (e) => console.error('subscription error', e),
        complete: () => {},
      },
    )
    clients.push(state)
  }
  await new Promise((r) => setTimeout(r, 100))
  let peakRss = rssMiB(pid)
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssMiB(pid))), 100)
  const result = await drive(sessions, runsPerSession, async (i) => {
    const state = clients[i]!
    const before = state.tokens
    const sent = performance.now()
    const firstToken = new Promise<number>((resolve) => (state.onToken = () => resolve(performance.now() - sent)))
    const finished = new Promise<string>((resolve) => (state.onFinished = resolve))
    await request(state.client, ENQUEUE, { s: state.sessionId, input: PROMPT })
    const firstTokenMs = await firstToken
    await finished
    return { firstTokenMs, tokens: state.tokens - before }
  })
  clearInterval(sampler)
  await Promise.all(clients.map((c) => c.client.dispose()))
  return { ...result, serverRssMiB: round(Math.max(peakRss, rssMiB(pid))) }
}

/** The same streamed chat completions, straight from the SDK to the fake server. */
async function floorLevel(baseURL: string, sessions: number, runsPerSession: number): Promise<LevelResult> {
  const clients = Array.from({ length: sessions }, () => new OpenAI({ apiKey: BENCH_KEY, baseURL, maxRetries: 0 }))
  return drive(sessions, runsPerSession, async (i) => {
    const sent = performance.now()
    let firstTokenMs = Number.NaN
    let tokens = 0
    const stream = await clients[i]!.chat.completions.create({
      model: 'gpt-bench',
      messages: [{ role: 'user', content: PROMPT }],
      stream: true,
      stream_options: { include_usage: true },
    })
    for await (const chunk of stream) {
      const text = chunk.choices[0]?.delta?.content
      if (!text) continue
      if (Number.isNaN(firstTokenMs)) firstTokenMs = performance.now() - sent
      tokens++
    }
    return { firstTokenMs, tokens }
  })
}

async function fakeMode() {
  const server = await startPromptline(null)
  const results = []
  try {
    for (const sessions of [1, 10, 100]) {
      results.push(
        await promptlineLevel(
          server.url,
          server.child.pid!,
          'fake-echo',
          sessions,
          Math.max(1, Math.round(400 / sessions)),
          `fake-${sessions}`,
        ),
      )
    }
  } finally {
    await server.close()
  }
  console.log(`\nfake backend — ${TOKENS_PER_RUN} tokens a run, SQLite, graphql-ws\n`)
  console.table(results)
  return results
}

async function providerMode() {
  const rows = []
  for (const delayMs of (process.env.BENCH_DELAYS ?? '0,5').split(',').map(Number)) {
    const vendor = await startChild(
      path.join(ROOT, 'node_modules/.bin/tsx'),
      ['bench/fake-openai.ts', String(delayMs)],
      {},
      /(http:\/\/\S+)\n/,
    )
    const baseUrl = vendor.match[1]!
    const catalog = mkdtempSync(path.join(tmpdir(), 'promptline-bench-catalog-'))
    writeFileSync(
      path.join(catalog, 'bench.yaml'),
      `backends:\n  - { id: bench-openai, kind: OPENAI, baseUrl: "${baseUrl}", credentialEnv: BENCH_KEY, capacity: { maxAccepted: 10000, maxActive: 10000 } }\n` +
        `profiles:\n  - { id: bench, backendId: bench-openai, model: gpt-bench }\n`,
    )
    const server = await startPromptline(catalog)
    try {
      for (const sessions of (process.env.BENCH_SESSIONS ?? '1,10,50').split(',').map(Number)) {
        const runsPerSession = delayMs === 0 ? Math.max(2, Math.round(300 / sessions)) : Math.max(2, Math.round(20 / sessions))
        const floor = await floorLevel(baseUrl, sessions, runsPerSession)
        const ours = await promptlineLevel(server.url, server.child.pid!, 'bench', sessions, runsPerSession, `p${delayMs}-${sessions}`)
        rows.push({
          tokenDelayMs: delayMs,
          sessions,
          runs: ours.runs,
          floorRunsPerSecond: floor.runsPerSecond,
          runsPerSecond: ours.runsPerSecond,
          runsRatio: Math.round((ours.runsPerSecond / floor.runsPerSecond) * 100) / 100,
          floorFirstTokenP50Ms: floor.firstTokenP50Ms,
          firstTokenP50Ms: ours.firstTokenP50Ms,
          floorFirstTokenP99Ms: floor.firstTokenP99Ms,
          firstTokenP99Ms: ours.firstTokenP99Ms,
          floorTokensPerSecond: floor.tokensPerSecond,
          tokensPerSecond: ours.tokensPerSecond,
          serverRssMiB: ours.serverRssMiB,
        })
      }
    } finally {
      await server.close()
      await stop(vendor.child)
      rmSync(catalog, { recursive: true, force: true })
    }
  }
  console.log(`\nprovider mode — openai SDK against a local fake OpenAI server, ${TOKENS_PER_RUN} tokens a run; floor = the SDK alone\n`)
  console.table(rows)
  return rows
}

async function main() {
  execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' })
  const file = path.join(ROOT, 'bench/results.json')
  const previous = (() => {
    try {
      return JSON.parse(readFileSync(file, 'utf8'))
    } catch {
      return {}
    }
  })()
  const results = { ...previous, at: new Date().toISOString(), node: process.version, tokensPerRun: TOKENS_PER_RUN }
  if (mode === 'all' || mode === 'fake') results.fake = await fakeMode()
  if (mode === 'all' || mode === 'provider') results.provider = await providerMode()
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`)
  console.log(`written to ${path.relative(process.cwd(), file)}`)
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
