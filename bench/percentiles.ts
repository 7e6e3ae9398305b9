export const round = (n: number) => Math.round(n * 10) / 10

/** The p-th percentile of already sorted numbers. */
export const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN

export interface LevelResult {
  sessions: number
  runs: number
  seconds: number
  runsPerSecond: number
  firstTokenP50Ms: number
  firstTokenP99Ms: number
  tokensPerSecond: number
}

/** Runs `sessions` loops of `runsPerSession` runs each; `once` returns first-token latency and tokens. */
export async function drive(
  sessions: number,
  runsPerSession: number,
  once: (session: number) => Promise<{ firstTokenMs: number; tokens: number }>,
): Promise<LevelResult> {
  const latencies: number[] = []
  let tokens = 0
  const started = performance.now()
  await Promise.all(
    Array.from({ length: sessions }, async (_, session) => {
      for (let r = 0; r < runsPerSession; r++) {
        const result = await once(session)
        latencies.push(result.firstTokenMs)
        tokens += result.tokens
      }
    }),
  )
  const seconds = (performance.now() - started) / 1000
  latencies.sort((a, b) => a - b)
  const runs = sessions * runsPerSession
  return {
    sessions,
    runs,
    seconds: round(seconds),
    runsPerSecond: round(runs / seconds),
    firstTokenP50Ms: round(percentile(latencies, 50)),
    firstTokenP99Ms: round(percentile(latencies, 99)),
    tokensPerSecond: Math.round(tokens / seconds),
  }
}
