export const round = (n: number) => Math.round(n * 10) / 10

/** The p-th percentile of already sorted numbers. */
export const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN

/** What one run gave its client. */
export interface RunOutcome {
  firstTokenMs: number
  /** From the first token to the last, as the client saw them: whether they arrived as they streamed. */
  spreadMs: number
  tokens: number
  /** Events the client received for the run (promptline only). */
  events: number
  completed: boolean
}

export interface LevelResult {
  runs: number
  runsPerSecond: number
  firstTokenP50Ms: number
  firstTokenP99Ms: number
  spreadP50Ms: number
  eventsPerRun: number
  lostTokens: number
  failedRuns: number
}

/**
 * `clients` loops of `runsPerClient` runs each, all at once. `once` does one run of a client;
 * `tokensPerRun` is what every run should deliver, so a shortfall counts as lost tokens.
 */
export async function drive(
  clients: number,
  runsPerClient: number,
  tokensPerRun: number,
  once: (client: number) => Promise<RunOutcome>,
): Promise<LevelResult> {
  const latencies: number[] = []
  const spreads: number[] = []
  let events = 0
  let lostTokens = 0
  let failedRuns = 0
  const started = performance.now()
  await Promise.all(
    Array.from({ length: clients }, async (_, client) => {
      for (let r = 0; r < runsPerClient; r++) {
        const outcome = await once(client)
        latencies.push(outcome.firstTokenMs)
        spreads.push(outcome.spreadMs)
        events += outcome.events
        lostTokens += Math.max(0, tokensPerRun - outcome.tokens)
        if (!outcome.completed) failedRuns++
      }
    }),
  )
  const seconds = (performance.now() - started) / 1000
  latencies.sort((a, b) => a - b)
  spreads.sort((a, b) => a - b)
  const runs = clients * runsPerClient
  return {
    runs,
    runsPerSecond: round(runs / seconds),
    firstTokenP50Ms: round(percentile(latencies, 50)),
    firstTokenP99Ms: round(percentile(latencies, 99)),
    spreadP50Ms: round(percentile(spreads, 50)),
    eventsPerRun: round(events / runs),
    lostTokens,
    failedRuns,
  }
}
