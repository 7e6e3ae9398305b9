// The clients the bench drives: the floor (the openai SDK straight to the fake vendor) and
// promptline in the two shapes clients use it in.
import { type Client, createClient } from 'graphql-ws'
import OpenAI from 'openai'
import WebSocket from 'ws'
import { drive, type LevelResult, round } from './drive.js'
import { BENCH_KEY } from './processes.js'

/**
 * long-lived: each client keeps one session (no history) and one subscription, and enqueues run
 * after run. new-session: each run creates a session, subscribes with afterSequence 0 and
 * enqueues, like a client that opens a conversation per request. Mutations go over HTTP,
 * subscriptions over one graphql-ws socket per client.
 */
export type Shape = 'long-lived' | 'new-session'

export interface Workload {
  clients: number
  runsPerClient: number
  prompt: string
  tokensPerRun: number
}

const CREATE =
  'mutation($id: ID!) { createSession(input: { id: $id, defaultProfileId: "bench", keepHistory: false }) { __typename ... on Error { code message } } }'
const ENQUEUE =
  'mutation($s: ID!, $input: String!) { enqueuePrompt(input: { sessionId: $s, input: $input }) { __typename ... on Error { code message } } }'
const EVENTS = `subscription($s: ID!, $after: Int) {
  sessionEvents(sessionId: $s, afterSequence: $after) { __typename ... on TokenDeltaEvent { text } ... on RunFinishedEvent { run { status errorMessage } } }
}`

/** The run a session's subscription is reporting to. */
interface RunTracker {
  sentAt: number
  firstTokenMs: number
  lastTokenMs: number
  tokens: number
  events: number
  finished: (completed: boolean) => void
}

async function mutate(url: string, query: string, variables: Record<string, unknown>): Promise<void> {
  const response = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query, variables }),
  })
  const body = (await response.json()) as { data?: Record<string, { code?: string; message?: string }>; errors?: unknown }
  const payload = body.data && Object.values(body.data)[0]
  if (!payload || payload.code) throw new Error(`bench mutation failed: ${JSON.stringify(body)}`)
}

type EventPayload = { sessionEvents: { __typename: string; text?: string; run?: { status: string; errorMessage: string | null } } }

/** Subscribes to a session's events and reports them to its current run; returns the unsubscribe. */
function watch(socket: Client, sessionId: string, afterSequence: number | null, current: () => RunTracker | null): () => void {
  return socket.subscribe<EventPayload>(
    { query: EVENTS, variables: { s: sessionId, after: afterSequence } },
    {
      next: ({ data }) => {
        const run = current()
        if (!run) return
        const event = data!.sessionEvents
        run.events++
        if (event.__typename === 'TokenDeltaEvent') {
          run.lastTokenMs = performance.now() - run.sentAt
          if (run.tokens === 0) run.firstTokenMs = run.lastTokenMs
          run.tokens += event.text!.split(' ').filter(Boolean).length
        } else if (event.__typename === 'RunFinishedEvent') {
          if (event.run!.status !== 'COMPLETED') console.error('run ended', event.run)
          run.finished(event.run!.status === 'COMPLETED')
        }
      },
      error: (e) => console.error('subscription error', e),
      complete: () => {},
    },
  )
}

function tracker(): { run: RunTracker; done: Promise<boolean> } {
  let finished!: (completed: boolean) => void
  const done = new Promise<boolean>((resolve) => (finished = resolve))
  return { run: { sentAt: 0, firstTokenMs: Number.NaN, lastTokenMs: Number.NaN, tokens: 0, events: 0, finished }, done }
}

/** One level through promptline; `tag` keeps session ids unique across levels. */
export async function promptlineLevel(url: string, shape: Shape, load: Workload, tag: string): Promise<LevelResult> {
  const sockets = Array.from({ length: load.clients }, () =>
    createClient({ url: `${url.replace('http', 'ws')}/graphql`, webSocketImpl: WebSocket, retryAttempts: 0, lazy: false }),
  )
  const current: (RunTracker | null)[] = sockets.map(() => null)
  const unsubscribes: (() => void)[] = []
  if (shape === 'long-lived') {
    for (const [i, socket] of sockets.entries()) {
      await mutate(url, CREATE, { id: `${tag}-${i}` })
      unsubscribes.push(watch(socket, `${tag}-${i}`, null, () => current[i]!))
    }
    await new Promise((r) => setTimeout(r, 200)) // the subscriptions are live before the first enqueue
  }
  let sessionCount = 0
  try {
    return await drive(load.clients, load.runsPerClient, load.tokensPerRun, async (i) => {
      const { run, done } = tracker()
      current[i] = run
      let sessionId = `${tag}-${i}`
      let unsubscribe = () => {}
      if (shape === 'new-session') {
        sessionId = `${tag}-${sessionCount++}`
        await mutate(url, CREATE, { id: sessionId })
        unsubscribe = watch(sockets[i]!, sessionId, 0, () => current[i]!)
      }
      run.sentAt = performance.now()
      await mutate(url, ENQUEUE, { s: sessionId, input: load.prompt })
      const completed = await done
      unsubscribe()
      const spreadMs = run.lastTokenMs - run.firstTokenMs
      return { firstTokenMs: run.firstTokenMs, spreadMs, tokens: run.tokens, events: run.events, completed }
    })
  } finally {
    for (const unsubscribe of unsubscribes) unsubscribe()
    await Promise.all(sockets.map((s) => s.dispose()))
  }
}

/**
 * The same streamed chat completions, straight from the SDK to the fake server, with the CPU
 * this process spent on them: what reading the vendor's stream costs before promptline does
 * anything with it.
 */
export async function floorLevel(baseURL: string, load: Workload): Promise<LevelResult & { cpuMsPerRun: number }> {
  const clients = Array.from({ length: load.clients }, () => new OpenAI({ apiKey: BENCH_KEY, baseURL, maxRetries: 0 }))
  const cpuBefore = process.cpuUsage()
  const result = await drive(load.clients, load.runsPerClient, load.tokensPerRun, async (i) => {
    const sentAt = performance.now()
    let firstTokenMs = Number.NaN
    let lastTokenMs = Number.NaN
    let tokens = 0
    const stream = await clients[i]!.chat.completions.create({
      model: 'gpt-bench',
      messages: [{ role: 'user', content: load.prompt }],
      stream: true,
      stream_options: { include_usage: true },
    })
    for await (const chunk of stream) {
      const text = chunk.choices[0]?.delta?.content
      if (!text) continue
      lastTokenMs = performance.now() - sentAt
      if (tokens === 0) firstTokenMs = lastTokenMs
      tokens += text.split(' ').filter(Boolean).length
    }
    return { firstTokenMs, spreadMs: lastTokenMs - firstTokenMs, tokens, events: 0, completed: true }
  })
  const cpu = process.cpuUsage(cpuBefore)
  return { ...result, cpuMsPerRun: round((cpu.user + cpu.system) / 1000 / result.runs) }
}
