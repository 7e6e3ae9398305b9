// Runs an experiment against a promptline server and, given a baseline, compares them; for CI:
//   npm run experiment -- --dataset <id> --prompt <id>[@<label>|#<version>] [--profile <id>]
//     [--repetitions N] [--concurrency N] [--baseline <experimentId>] [--fail-on-regression]
// PROMPTLINE_URL (the GraphQL endpoint, default http://127.0.0.1:4000/graphql) and
// PROMPTLINE_API_KEY say where. With a baseline the run uses its scorers (else EXACT), prints
// the comparison as a table, and exits 1 on a regression when asked to; 2 on an error.
import { parseArgs } from 'node:util'
import { createPromptlineClient } from 'promptline/client'

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
interface Comparison {
  improvements: number
  regressions: number
  unchanged: number
  deltas: { passRate: number | null; meanScore: number | null }
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
const STATUS = gql<{ experiment: { status: string; errorMessage: string | null; summary: { passRate: number | null } } }, { id: string }>(
  'query($id: ID!) { experiment(id: $id) { status errorMessage summary { passRate } } }',
)
const COMPARE = gql<{ compareExperiments: Comparison }, { baseId: string; candidateId: string }>(
  `query($baseId: ID!, $candidateId: ID!) { compareExperiments(baseId: $baseId, candidateId: $candidateId) {
    improvements regressions unchanged deltas { passRate meanScore }
    items { itemId change base { meanScore } candidate { meanScore } } } }`,
)

/** `id`, `id@label` or `id#version` as a prompt reference. */
function promptRef(text: string): Record<string, unknown> {
  const [, id, mark, at] = /^([^@#]+)(?:([@#])(.+))?$/.exec(text) ?? []
  if (!id) throw new Error(`--prompt: not a prompt reference: ${text}`)
  if (mark === '#') return { id, version: Number(at) }
  return mark === '@' ? { id, label: at } : { id }
}

const number = (value: number | null) => (value === null ? '-' : value.toFixed(3))

async function main(): Promise<number> {
  if (!values.dataset || !values.prompt) throw new Error('give --dataset and --prompt')
  const client = createPromptlineClient({
    url: process.env.PROMPTLINE_URL ?? 'http://127.0.0.1:4000/graphql',
    apiKey: process.env.PROMPTLINE_API_KEY,
  })
  try {
    const baseline = values.baseline ? (await client.query(SCORERS, { id: values.baseline })).experiment : null
    if (values.baseline && !baseline) throw new Error(`no experiment ${values.baseline}`)
    const input = {
      name: `${values.prompt} on ${values.dataset}`,
      datasetId: values.dataset,
      promptRef: promptRef(values.prompt),
      ...(values.profile && { profileId: values.profile }),
      ...(values.repetitions && { repetitions: Number(values.repetitions) }),
      ...(values.concurrency && { concurrency: Number(values.concurrency) }),
      scorers: baseline?.scorers ?? [{ name: 'exact', kind: 'EXACT' }],
    }
    const started = (await client.query(START, { input })).startExperiment
    if (!started.experiment) throw new Error(`${started.__typename}: ${started.message}`)
    const { id } = started.experiment
    console.log(`experiment ${id} (prompt version ${started.experiment.promptVersion})`)
    let now = (await client.query(STATUS, { id })).experiment
    while (now.status === 'QUEUED' || now.status === 'RUNNING') {
      await new Promise((resolve) => setTimeout(resolve, 500))
      now = (await client.query(STATUS, { id })).experiment
    }
    console.log(`${now.status}${now.errorMessage ? `: ${now.errorMessage}` : ''}; pass rate ${number(now.summary.passRate)}`)
    if (now.status !== 'COMPLETED') return 2
    if (!values.baseline) return 0
    const compared = (await client.query(COMPARE, { baseId: values.baseline, candidateId: id })).compareExperiments
    console.table(
      compared.items.map((i) => ({
        item: i.itemId,
        base: number(i.base.meanScore),
        candidate: number(i.candidate.meanScore),
        change: i.change,
      })),
    )
    console.log(
      `improved ${compared.improvements}, regressed ${compared.regressions}, unchanged ${compared.unchanged}; pass rate ${number(compared.deltas.passRate)}, mean score ${number(compared.deltas.meanScore)}`,
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
