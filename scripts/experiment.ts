// Runs an experiment against a promptline server and, given a baseline, compares them; for CI:
//   npm run experiment -- --dataset <id> --prompt <ref> [--profile <id>] [--repetitions N]
//     [--concurrency N] [--baseline <experimentId> | <ref>] [--fail-on-regression]
// A <ref> is <id>, <id>@<label> or <id>#<version>; a baseline given so is run first, on the same
// dataset. PROMPTLINE_URL (the GraphQL endpoint, default http://127.0.0.1:4000/graphql) and
// PROMPTLINE_API_KEY say where. The run uses a baseline experiment's scorers (else EXACT), prints
// the comparison item by item, and exits 1 on a regression when asked to; 2 on an error.
import { parseArgs } from 'node:util'
import { createPromptlineClient, type PromptlineClient } from 'promptline/client'

const { values } = parseArgs({
  options: {
    dataset: { type: 'string' },
    prompt: { type: 'string' },
    profile: { type: 'string' },
    repetitions: { type: 'string' },
    concurrency: { type: 'string' },
    baseline: { type: 'string' },
    'fail-on-regression': { type: 'boolean', default: false },
  },
})

/** A GraphQL document the client sends as it is, typed by its caller. */
const gql = <T, V>(text: string) => ({ toString: () => text }) as { toString(): string; __apiType?: (variables: V) => T }

interface Scorer {
  name: string
  kind: string
  pattern: string | null
  schema: unknown
  path: string | null
}
interface Ended {
  id: string
  status: string
  errorMessage: string | null
  summary: { passRate: number | null }
}
interface Comparison {
  improvements: number
  regressions: number
  unchanged: number
  deltas: { meanScore: number | null }
  items: { itemId: string; change: string; base: { meanScore: number | null }; candidate: { meanScore: number | null } }[]
}
type Payload<T> = T & { __typename: string; message?: string }

const SCORERS = gql<{ experiment: { scorers: Scorer[] } | null }, { id: string }>(
  'query($id: ID!) { experiment(id: $id) { scorers { name kind pattern schema path } } }',
)
const START = gql<{ startExperiment: Payload<{ experiment?: { id: string; promptVersion: number } }> }, { input: Record<string, unknown> }>(
  `mutation($input: StartExperimentInput!) { startExperiment(input: $input) {
    __typename ... on ExperimentPayload { experiment { id promptVersion } } ... on Error { message } } }`,
)
const PROGRESS = gql<{ experimentProgress: { status: string } }, { id: string }>(
  'subscription($id: ID!) { experimentProgress(id: $id) { status } }',
)
const ENDED = gql<{ experiment: Ended }, { id: string }>(
  'query($id: ID!) { experiment(id: $id) { id status errorMessage summary { passRate } } }',
)
const COMPARE = gql<{ compareExperiments: Comparison }, { baseId: string; candidateId: string }>(
  `query($baseId: ID!, $candidateId: ID!) { compareExperiments(baseId: $baseId, candidateId: $candidateId) {
    improvements regressions unchanged deltas { meanScore }
    items { itemId change base { meanScore } candidate { meanScore } } } }`,
)
interface Items {
  edges: { node: { id: string; input: string | null; variables: unknown } }[]
  pageInfo: { hasNextPage: boolean; endCursor: string | null }
}
const ITEMS = gql<{ dataset: { items: Items } | null }, { id: string; version: number; after: string | null }>(
  `query($id: ID!, $version: Int, $after: String) { dataset(id: $id) { items(version: $version, first: 100, after: $after) {
    edges { node { id input variables } } pageInfo { hasNextPage endCursor } } } }`,
)
const DATASET_VERSION = gql<{ experiment: { datasetVersion: number } }, { id: string }>(
  'query($id: ID!) { experiment(id: $id) { datasetVersion } }',
)

/** `id`, `id@label` or `id#version` as a prompt reference; null for anything else. */
function promptRef(text: string): Record<string, unknown> | null {
  const [, id, mark, at] = /^([A-Za-z0-9_.-]+)(?:([@#])(.+))?$/.exec(text) ?? []
  if (!id) return null
  if (mark === '#') return { id, version: Number(at) }
  return mark === '@' ? { id, label: at } : { id }
}

const percent = (rate: number | null) => (rate === null ? '-' : `${Math.round(rate * 100)} %`)
const score = (value: number | null) => (value === null ? '-' : value.toFixed(2))
/** A change in points, signed as people write it: +5 pts, −33 pts. */
const points = (from: number | null, to: number | null) => {
  if (from === null || to === null) return ''
  const delta = Math.round((to - from) * 100)
  return ` (${delta > 0 ? '+' : delta < 0 ? '−' : '±'}${Math.abs(delta)} pts)`
}
const excerpt = (text: string) => (text.length > 40 ? `${text.slice(0, 39)}…` : text)

/** Starts an experiment of `ref` on the dataset and waits for its end. */
async function runExperiment(client: PromptlineClient, ref: string, scorers: Scorer[] | { name: string; kind: string }[]): Promise<Ended> {
  const reference = promptRef(ref)
  if (!reference) throw new Error(`not a prompt reference (id, id@label or id#version): ${ref}`)
  const input = {
    name: `${ref} on ${values.dataset}`,
    datasetId: values.dataset,
    promptRef: reference,
    ...(values.profile && { profileId: values.profile }),
    ...(values.repetitions && { repetitions: Number(values.repetitions) }),
    ...(values.concurrency && { concurrency: Number(values.concurrency) }),
    scorers,
  }
  const started = (await client.query(START, { input })).startExperiment
  if (!started.experiment) throw new Error(`${ref}: ${started.__typename}: ${started.message}`)
  const { id } = started.experiment
  console.log(`${ref}: experiment ${id} (prompt version ${started.experiment.promptVersion})`)
  for await (const { experimentProgress } of client.subscribe(PROGRESS, { id }))
    if (experimentProgress.status !== 'QUEUED' && experimentProgress.status !== 'RUNNING') break
  const ended = (await client.query(ENDED, { id })).experiment
  console.log(`${ref}: ${ended.status}${ended.errorMessage ? `: ${ended.errorMessage}` : ''}; pass rate ${percent(ended.summary.passRate)}`)
  return ended
}

/** Each item's input (or variables) cut short, by item id. */
async function inputsOf(client: PromptlineClient, experimentId: string): Promise<Map<string, string>> {
  const { datasetVersion } = (await client.query(DATASET_VERSION, { id: experimentId })).experiment
  const inputs = new Map<string, string>()
  for (let after: string | null = null, more = true; more; ) {
    const page: Items | undefined = (await client.query(ITEMS, { id: values.dataset!, version: datasetVersion, after })).dataset?.items
    for (const { node } of page?.edges ?? []) inputs.set(node.id, excerpt(node.input ?? JSON.stringify(node.variables)))
    more = page?.pageInfo.hasNextPage ?? false
    after = page?.pageInfo.endCursor ?? null
  }
  return inputs
}

async function main(): Promise<number> {
  if (!values.dataset || !values.prompt) throw new Error('give --dataset and --prompt')
  const client = createPromptlineClient({
    url: process.env.PROMPTLINE_URL ?? 'http://127.0.0.1:4000/graphql',
    apiKey: process.env.PROMPTLINE_API_KEY,
  })
  try {
    // a baseline is an experiment that ran, or a prompt reference to run now
    const stored =
      values.baseline && !/[@#]/.test(values.baseline) ? (await client.query(SCORERS, { id: values.baseline })).experiment : null
    if (values.baseline && !stored && !/[@#]/.test(values.baseline)) throw new Error(`--baseline: no experiment '${values.baseline}'`)
    const scorers = stored?.scorers ?? [{ name: 'exact', kind: 'EXACT' }]
    const base = stored
      ? (await client.query(ENDED, { id: values.baseline! })).experiment
      : values.baseline
        ? await runExperiment(client, values.baseline, scorers)
        : null
    if (base && base.status !== 'COMPLETED') return 2
    const candidate = await runExperiment(client, values.prompt, scorers)
    if (candidate.status !== 'COMPLETED') return 2
    if (!base) return 0
    const compared = (await client.query(COMPARE, { baseId: base.id, candidateId: candidate.id })).compareExperiments
    const inputs = await inputsOf(client, candidate.id)
    console.table(
      compared.items.map((i) => ({
        input: inputs.get(i.itemId) ?? i.itemId,
        base: score(i.base.meanScore),
        candidate: score(i.candidate.meanScore),
        change: i.change,
      })),
    )
    const { passRate: from } = base.summary
    const { passRate: to } = candidate.summary
    const meanDelta = compared.deltas.meanScore
    console.log(`improved ${compared.improvements}, regressed ${compared.regressions}, unchanged ${compared.unchanged}`)
    console.log(
      `pass rate ${percent(from)} → ${percent(to)}${points(from, to)}; mean score ${meanDelta === null ? '-' : `${meanDelta < 0 ? '−' : '+'}${Math.abs(meanDelta).toFixed(2)}`} over the items both ran`,
    )
    return values['fail-on-regression'] && compared.regressions > 0 ? 1 : 0
  } finally {
    await client.close()
  }
}

main().then(
  (code) => process.exit(code),
  (error: Error) => {
    console.error(error.message)
    process.exit(2)
  },
)
