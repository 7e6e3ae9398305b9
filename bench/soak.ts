// The soak of `npm run bench`: one server for BENCH_SOAK_MINUTES (30; 0: none) at half the rate
// the same mix reaches first with 10 clients back to back. The mix, in turn: a streamed
// /v1/chat/completions; a /v1 tool round (the model calls the client's tool, the client answers
// in a second request); a /v1 stream the client aborts after its first chunk; a GraphQL run in a
// new session on a new graphql-ws socket. Each minute it samples the server's RSS, its open file
// descriptors and its active handles (bench/handles.mjs); the slopes are least-squares fits
// over the samples after the first 5 minutes.
import { readdirSync } from 'node:fs'
import { round } from './drive.js'
import { benchServer, type PromptlineProcess } from './processes.js'
import { promptlineLevel } from './shapes.js'

export const SOAK_MINUTES = Number(process.env.BENCH_SOAK_MINUTES ?? 30)
const WARM_MINUTES = 5
const MAX_IN_FLIGHT = 64
const MESSAGE = Array.from({ length: 20 }, (_, i) => `w${i}`).join(' ')
const TOOLS = [
  { type: 'function', function: { name: 'weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } },
]

/** One op of the mix; `tag` keeps its session ids unique. */
type Mix = (url: string, tag: string) => Promise<void>

async function chat(url: string, body: object, signal?: AbortSignal): Promise<Response> {
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'bench', ...body }),
    signal,
  })
  if (response.status !== 200) throw new Error(`/v1 answered ${response.status}: ${await response.text()}`)
  return response
}

const user = [{ role: 'user', content: MESSAGE }]
const MIX: Mix[] = [
  async (url) => {
    const text = await (await chat(url, { messages: user, stream: true })).text()
    if (!text.includes('[DONE]')) throw new Error('a stream without its end')
  },
  async (url) => {
    const first = (await (await chat(url, { messages: user, tools: TOOLS })).json()) as {
      choices: { message: { tool_calls?: { id: string }[] } }[]
    }
    const message = first.choices[0]!.message
    const call = message.tool_calls?.[0]
    if (!call) throw new Error('no tool call in the first round')
    const tool = { role: 'tool', tool_call_id: call.id, content: 'sunny' }
    const second = await (await chat(url, { messages: [...user, message, tool], tools: TOOLS })).text()
    if (!second.includes('sunny')) throw new Error(`the second round did not answer from the tool: ${second.slice(0, 200)}`)
  },
  async (url) => {
    const controller = new AbortController()
    const response = await chat(url, { messages: user, stream: true }, controller.signal)
    await response.body!.getReader().read()
    controller.abort()
  },
  async (url, tag) => {
    const level = await promptlineLevel(url, 'new-session', { clients: 1, runsPerClient: 1, prompt: MESSAGE, tokensPerRun: 20 }, tag)
    if (level.failedRuns > 0 || level.lostTokens > 0) throw new Error('a GraphQL run failed or lost tokens')
  },
]

/** Ops of the mix per second, 10 clients back to back for 20 s. */
async function capacity(url: string): Promise<number> {
  let done = 0
  const until = performance.now() + 20_000
  await Promise.all(
    Array.from({ length: 10 }, async (_, client) => {
      // a failed op counts for nothing here; the soak counts its failures by message
      while (performance.now() < until) await MIX[(client + done) % MIX.length]!(url, `capacity-${done++}`).catch(() => done--)
    }),
  )
  return done / 20
}

interface Sample {
  minute: number
  rssMiB: number
  fds: number
  handles: number
}

/** Least-squares slope of `y` against the minute, per 10 minutes. */
function slopePer10Min(samples: Sample[], y: (s: Sample) => number): number {
  const n = samples.length
  const mx = samples.reduce((a, s) => a + s.minute, 0) / n
  const my = samples.reduce((a, s) => a + y(s), 0) / n
  const sxy = samples.reduce((a, s) => a + (s.minute - mx) * (y(s) - my), 0)
  const sxx = samples.reduce((a, s) => a + (s.minute - mx) ** 2, 0)
  return sxx === 0 ? Number.NaN : round((sxy / sxx) * 10)
}

async function sample(server: PromptlineProcess, minute: number): Promise<Sample> {
  const fds = readdirSync(`/proc/${server.child.pid}/fd`).length
  return { minute, rssMiB: round(server.rssMiB()), fds, handles: await server.activeHandles() }
}

/** The mix at `rate` ops a second for `minutes`, sampled each minute; errors counted by message. */
async function paced(server: PromptlineProcess, rate: number, minutes: number) {
  const samples = [await sample(server, 0)]
  const errors: Record<string, number> = {}
  let [started, finished, skipped, inFlight] = [0, 0, 0, 0]
  const begin = performance.now()
  const end = begin + minutes * 60_000
  while (performance.now() < end) {
    // open loop: the next op at its planned time, whatever the last ones are doing
    const due = begin + (started + skipped) * (1000 / rate)
    await new Promise((r) => setTimeout(r, Math.max(0, due - performance.now())))
    const minute = Math.floor((performance.now() - begin) / 60_000)
    if (minute > samples.at(-1)!.minute) samples.push(await sample(server, minute))
    if (inFlight >= MAX_IN_FLIGHT) {
      skipped++
      continue
    }
    inFlight++
    const n = started++
    MIX[n % MIX.length]!(server.url, `soak-${n}`)
      .catch((error: { message?: string }) => {
        // a socket's ErrorEvent is no Error: its message says what happened
        const message = String(error?.message ?? error).slice(0, 80)
        errors[message] = (errors[message] ?? 0) + 1
      })
      .finally(() => {
        inFlight--
        finished++
      })
  }
  while (inFlight > 0) await new Promise((r) => setTimeout(r, 50))
  if (samples.at(-1)!.minute === minutes) samples.pop()
  samples.push(await sample(server, minutes))
  return { samples, errors, finished, skipped, seconds: (performance.now() - begin) / 1000 }
}

/** The soak's summary and its samples; null when BENCH_SOAK_MINUTES is 0. */
export async function soak() {
  if (SOAK_MINUTES <= 0) return null
  const { server, close } = await benchServer(0, false)
  try {
    const capacityOpsPerS = round(await capacity(server.url))
    const targetOpsPerS = round(capacityOpsPerS / 2)
    const run = await paced(server, targetOpsPerS, SOAK_MINUTES)
    const settled = run.samples.filter((s) => s.minute >= Math.min(WARM_MINUTES, SOAK_MINUTES - 1))
    return {
      summary: {
        minutes: SOAK_MINUTES,
        capacityOpsPerS,
        targetOpsPerS,
        achievedOpsPerS: round(run.finished / run.seconds),
        skippedOps: run.skipped,
        errors: Object.entries(run.errors)
          .map(([message, n]) => `${n}× ${message}`)
          .join('; '),
        rssFirstMiB: run.samples[0]!.rssMiB,
        rssLastMiB: run.samples.at(-1)!.rssMiB,
        rssSlopeMiBPer10Min: slopePer10Min(settled, (s) => s.rssMiB),
        fdSlopePer10Min: slopePer10Min(settled, (s) => s.fds),
        handleSlopePer10Min: slopePer10Min(settled, (s) => s.handles),
      },
      samples: run.samples,
    }
  } finally {
    await close()
  }
}
