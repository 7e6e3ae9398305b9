// npm run bench [-- --profile]: promptline built and run in a process of its own on a fresh
// SQLite file, the openai backend (real SDK) against a local fake OpenAI server, in both client
// shapes (bench/shapes.ts) beside the floor, at 0 and 5 ms per token and 1, 10 and 50 clients.
// First, `npm start` to healthy on a new SQLite file and again on it, then the gateway table
// (bench/gateway.ts: /v1/chat/completions beside the vendor direct). Prints the table (and a
// Markdown copy for the README), then the server's CPU over a minute with no traffic after the
// first delay's load, then the soak (bench/soak.ts: BENCH_SOAK_MINUTES, 30 by default), and
// writes bench/results.json.
// --profile writes CPU profiles of the server at each delay's busiest level to bench/profiles/ and
// prints its busy CPU there by package. BENCH_DELAYS, BENCH_CLIENTS
// and BENCH_SHAPES (comma lists) narrow the matrix, BENCH_GATEWAY_CLIENTS the gateway's (empty: none); BENCH_NODE_FLAGS passes flags to the server's
// node. No test asserts on these figures.
import { execFileSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import path from 'node:path'
import { round } from './drive.js'
import { GATEWAY_CLIENTS, gatewayBench } from './gateway.js'
import { benchServer, PROFILE_DIR, type PromptlineProcess, ROOT } from './processes.js'
import { busyByPackage, isDatabaseRuntime } from './profile-by-package.js'
import { floorLevel, promptlineLevel, type Shape, type Workload } from './shapes.js'
import { SOAK_MINUTES, soak } from './soak.js'
import { startTimes } from './start.js'

const TOKENS_PER_RUN = 200
const list = (name: string, fallback: string) => (process.env[name] ?? fallback).split(',')
const DELAYS = list('BENCH_DELAYS', '0,5').map(Number)
const CLIENTS = list('BENCH_CLIENTS', '1,10,50').map(Number)
const SHAPES = list('BENCH_SHAPES', 'long-lived,new-session') as Shape[]
const profile = process.argv.includes('--profile')
const IDLE_WINDOW_MS = 60_000
/** CPU over the first idle minute after the load (V8 still shrinking the heap the load grew), then over the next. */
let idleCpuPercent: { afterLoad: number; settled: number } | null = null
const profiles: ({ level: string } & ReturnType<typeof busyByPackage>)[] = []

const prompt = (tokens: number) => Array.from({ length: tokens }, (_, i) => `t${i}`).join(' ')
const workload = (clients: number, delayMs: number, tokens = TOKENS_PER_RUN): Workload => ({
  clients,
  runsPerClient: delayMs === 0 ? Math.max(3, Math.round(300 / clients)) : 3,
  prompt: prompt(tokens),
  tokensPerRun: tokens,
})

/** Runs one promptline level and adds what the server spent on it; `profileTo` writes its CPU profile there. */
async function measured(server: PromptlineProcess, shape: Shape, load: Workload, tag: string, profileTo?: string) {
  const [cpuBefore, sqlBefore] = [server.cpuMs(), await server.sqlStatements()]
  let peakRss = server.rssMiB()
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, server.rssMiB())), 50)
  if (profileTo) await server.startProfile()
  const result = await promptlineLevel(server.url, shape, load, tag)
  if (profileTo) await server.stopProfile(profileTo)
  clearInterval(sampler)
  const [cpuAfter, sqlAfter] = [server.cpuMs(), await server.sqlStatements()]
  return {
    ...result,
    cpuMsPerRun: round((cpuAfter - cpuBefore) / result.runs),
    sqlPerRun: round((sqlAfter.sql - sqlBefore.sql) / result.runs),
    writesPerRun: round((sqlAfter.writes - sqlBefore.writes) / result.runs),
    peakRssMiB: Math.round(Math.max(peakRss, server.rssMiB())),
  }
}

async function atDelay(delayMs: number) {
  const { server, vendorUrl, close } = await benchServer(delayMs, profile)
  const rows = []
  const tokenCounts = []
  try {
    const idleRssMiB = Math.round(server.rssMiB())
    // each delay has a server of its own: it is warmed as much at 5 ms a token as at 0 (30 runs of
    // each shape), as the floor's SDK is by then in this process
    const warm = delayMs === 0 ? { ...workload(1, 0), runsPerClient: 30 } : { ...workload(10, delayMs), runsPerClient: 3 }
    for (const shape of SHAPES) await promptlineLevel(server.url, shape, warm, `warm${delayMs}-${shape}`)
    for (const clients of CLIENTS) {
      const load = workload(clients, delayMs)
      const floor = await floorLevel(vendorUrl, load)
      for (const shape of SHAPES) {
        // --profile: the busiest level of each delay, each shape
        const profileTo =
          profile && clients === Math.max(...CLIENTS) ? path.join(PROFILE_DIR, `${shape}-${delayMs}ms-${clients}.cpuprofile`) : undefined
        const ours = await measured(server, shape, load, `${shape}-${delayMs}-${clients}`, profileTo)
        if (profileTo) profiles.push({ level: `${delayMs} ms × ${clients} ${shape}`, ...busyByPackage(profileTo) })
        rows.push({
          msPerToken: delayMs,
          clients,
          shape,
          runs: ours.runs,
          runsPerS: ours.runsPerSecond,
          floorRunsPerS: floor.runsPerSecond,
          ratio: Math.round((ours.runsPerSecond / floor.runsPerSecond) * 100) / 100,
          firstTokenP50: ours.firstTokenP50Ms,
          floorFirstTokenP50: floor.firstTokenP50Ms,
          firstTokenP99: ours.firstTokenP99Ms,
          floorFirstTokenP99: floor.firstTokenP99Ms,
          spreadP50: ours.spreadP50Ms,
          floorSpreadP50: floor.spreadP50Ms,
          cpuMsPerRun: ours.cpuMsPerRun,
          floorCpuMsPerRun: floor.cpuMsPerRun,
          sqlPerRun: ours.sqlPerRun,
          writesPerRun: ours.writesPerRun,
          eventsPerRun: ours.eventsPerRun,
          peakRssMiB: ours.peakRssMiB,
          idleRssMiB,
          lostTokens: ours.lostTokens,
          failedRuns: ours.failedRuns,
        })
      }
    }
    if (delayMs === DELAYS[0]) idleCpuPercent = await idleCpu(server)
    if (delayMs === 0)
      for (const tokens of [20, 2000]) {
        const ours = await measured(server, 'long-lived', { ...workload(1, 0, tokens), runsPerClient: 20 }, `tokens-${tokens}`)
        tokenCounts.push({
          tokensPerRun: tokens,
          sqlPerRun: ours.sqlPerRun,
          writesPerRun: ours.writesPerRun,
          eventsPerRun: ours.eventsPerRun,
          lostTokens: ours.lostTokens,
        })
      }
  } finally {
    await close()
  }
  return { rows, tokenCounts }
}

/** The server's CPU over a minute with no traffic, after the load (sessions loaded, runs ended), in % of a core. */
async function idleCpu(server: PromptlineProcess): Promise<{ afterLoad: number; settled: number }> {
  const minute = async () => {
    const before = server.cpuMs()
    await new Promise((resolve) => setTimeout(resolve, IDLE_WINDOW_MS))
    return round(((server.cpuMs() - before) / IDLE_WINDOW_MS) * 100)
  }
  return { afterLoad: await minute(), settled: await minute() }
}

function markdown(rows: Record<string, unknown>[]): string {
  const columns = Object.keys(rows[0] ?? {})
  return [
    `| ${columns.join(' | ')} |`,
    `| ${columns.map(() => '---').join(' | ')} |`,
    ...rows.map((r) => `| ${columns.map((c) => r[c]).join(' | ')} |`),
  ].join('\n')
}

async function main() {
  execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' })
  const start = await startTimes()
  console.log(
    `npm start to a healthy server: ${start.newDatabaseMs} ms on a new SQLite file (migrated), ${start.secondStartMs} ms again on it`,
  )
  const gateway = GATEWAY_CLIENTS.length > 0 ? await gatewayBench(profile ? path.join(PROFILE_DIR, 'gateway-50.cpuprofile') : null) : []
  if (gateway.length > 0) {
    console.log('\nPOST /v1/chat/completions (20 tokens) through promptline beside the fake vendor direct; times in ms\n')
    console.table(gateway)
    if (profile)
      profiles.push({ level: 'gateway, 50 clients, not streamed', ...busyByPackage(path.join(PROFILE_DIR, 'gateway-50.cpuprofile')) })
  }
  const rows = []
  const tokenCounts = []
  for (const delayMs of DELAYS) {
    const result = await atDelay(delayMs)
    rows.push(...result.rows)
    tokenCounts.push(...result.tokenCounts)
  }
  console.log(
    `\nopenai SDK against a local fake OpenAI server, ${TOKENS_PER_RUN} tokens a run; floor = the SDK alone; times in ms, memory in MiB\n`,
  )
  console.table(rows)
  if (tokenCounts.length > 0) {
    console.log('\nSQL statements (and writes among them) per run by token count (long-lived shape, 1 client)\n')
    console.table(tokenCounts)
  }
  if (idleCpuPercent)
    console.log(
      `\nidle server, no traffic: ${idleCpuPercent.afterLoad}% of a core over the first ${IDLE_WINDOW_MS / 1000} s after the load, ${idleCpuPercent.settled}% over the next ${IDLE_WINDOW_MS / 1000} s`,
    )
  const soaked = await soak()
  if (soaked) {
    console.log(`\nsoak: ${SOAK_MINUTES} min of the mix (bench/soak.ts) at half its measured capacity; MiB, per 10 min after minute 5\n`)
    console.table([soaked.summary])
    console.table(soaked.samples)
  }
  console.log(`\n${markdown(rows)}\n`)
  if (gateway.length > 0) console.log(`${markdown(gateway as unknown as Record<string, unknown>[])}\n`)
  const file = path.join(ROOT, 'bench/results.json')
  writeFileSync(
    file,
    `${JSON.stringify({ at: new Date().toISOString(), node: process.version, start, gateway, rows, tokenCounts, idleCpuPercent, soak: soaked }, null, 2)}\n`,
  )
  console.log(`written to ${path.relative(process.cwd(), file)}`)
  for (const { level, total, shares } of profiles) {
    const runtime = Math.round(shares.filter((s) => isDatabaseRuntime(s.name)).reduce((a, s) => a + s.percent, 0) * 10) / 10
    console.log(`\nthe server's busy CPU by package at ${level}: ${total} ms; Prisma's packages and the SQLite driver ${runtime} %\n`)
    console.table(shares.slice(0, 15))
  }
  if (profile) console.log(`server CPU profiles in ${path.relative(process.cwd(), PROFILE_DIR)}/ (open them in Chrome DevTools)`)
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
