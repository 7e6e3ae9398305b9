import SqliteDatabase from 'better-sqlite3'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLogger } from '../../src/domain/logger.js'
import { type App, createApp } from '../../src/server/app.js'
import { DEFAULT_CATALOG } from '../helpers/app.js'
import { createTestDatabase, type TestDatabase } from '../helpers/databases.js'

// Random and hostile input at every mutation and query: never INTERNAL, never a 5xx, never a
// stack trace or a file path in a message, every INVALID_REQUEST names its field, and a refused
// mutation changes nothing.
const RUNS = Number(process.env.FUZZ_RUNS ?? 2000)
/** FUZZ_SEED replays the run a failure printed. */
const SEED = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED)

const hostileText = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.constantFrom(
    '',
    ' ',
    'bad id!',
    '../../etc/passwd',
    '__proto__',
    'constructor',
    '\'; DROP TABLE "Session"; --',
    '{{input}}',
    '{{',
    '\u0000',
    'a'.repeat(300),
  ),
  fc.constantFrom('s1', 's2', 'fake-echo', 'chat', 'json-extract', 'k1', 'steer-1', 'OPENAI_API_KEY', 'HOME'),
  fc.string({ minLength: 1000, maxLength: 5000 }),
)
const deepJson = fc.integer({ min: 30, max: 3000 }).map((depth) => JSON.parse(`${'['.repeat(depth)}1${']'.repeat(depth)}`))
const hostileJson = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }),
  deepJson,
  fc.dictionary(hostileText, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 5 }),
)
const hostileNumber = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(0, -1, 2 ** 31, 86_400_001),
)
const anything = fc.oneof(hostileText, hostileNumber, fc.boolean(), fc.constant(null), hostileJson)
const id = fc.oneof(fc.constantFrom('s1', 's2', 'fake-echo', 'chat', 'q-unknown'), hostileText)
const optional = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined })
const settings = fc.record(
  {
    temperature: optional(fc.oneof(hostileNumber, anything)),
    maxTokens: optional(hostileNumber),
    stop: optional(fc.array(hostileText, { maxLength: 20 })),
    reasoningEffort: optional(hostileText),
    extra: optional(hostileJson),
  },
  { requiredKeys: [] },
)
const runRequest = {
  sessionId: id,
  promptId: optional(id),
  input: optional(hostileText),
  variables: optional(hostileJson),
  profileId: optional(id),
  overrides: optional(fc.oneof(settings, anything)),
  credentialEnv: optional(hostileText),
  idempotencyKey: optional(hostileText),
}

const ERROR = '__typename ... on Error { code message } ... on InvalidRequestError { field }'
const OPERATIONS: { name: string; source: string; variables: fc.Arbitrary<Record<string, unknown>>; mutation: boolean }[] = [
  {
    name: 'createSession',
    mutation: true,
    source: `mutation($input: CreateSessionInput!) { createSession(input: $input) { ${ERROR} } }`,
    variables: fc.record({
      input: fc.record(
        {
          id: optional(id),
          title: optional(hostileText),
          defaultProfileId: optional(id),
          metadata: optional(hostileJson),
          keepHistory: optional(anything),
        },
        { requiredKeys: [] },
      ),
    }),
  },
  {
    name: 'enqueuePrompt',
    mutation: true,
    source: `mutation($input: EnqueuePromptInput!) { enqueuePrompt(input: $input) { ${ERROR} } }`,
    variables: fc.record({
      input: fc.record(
        { ...runRequest, whenBusy: optional(fc.constantFrom('ENQUEUE', 'REJECT', 'INTERRUPT', 'ROLLBACK', 'BOGUS')) },
        { requiredKeys: [] },
      ),
    }),
  },
  {
    name: 'schedulePrompt',
    mutation: true,
    source: `mutation($input: SchedulePromptInput!) { schedulePrompt(input: $input) { ${ERROR} } }`,
    variables: fc.record({
      input: fc.record({ ...runRequest, scheduleKey: hostileText, debounceMs: optional(hostileNumber) }, { requiredKeys: [] }),
    }),
  },
  {
    name: 'steerPrompt',
    mutation: true,
    source: `mutation($input: SteerPromptInput!) { steerPrompt(input: $input) { ${ERROR} } }`,
    variables: fc.record({ input: fc.record({ sessionId: id, queueId: id, steerId: id, text: hostileText }, { requiredKeys: [] }) }),
  },
  {
    name: 'cancelPrompt',
    mutation: true,
    source: `mutation($s: ID!, $q: ID!) { cancelPrompt(sessionId: $s, queueId: $q) { ${ERROR} } }`,
    variables: fc.record({ s: id, q: id }),
  },
  {
    name: 'cancelScheduledPrompt',
    mutation: true,
    source: `mutation($s: ID!, $k: String!) { cancelScheduledPrompt(sessionId: $s, scheduleKey: $k) { ${ERROR} } }`,
    variables: fc.record({ s: id, k: anything }),
  },
  {
    name: 'abortRun',
    mutation: true,
    source: `mutation($r: ID!, $why: String) { abortRun(runId: $r, reason: $why) { ${ERROR} } }`,
    variables: fc.record({ r: id, why: optional(hostileText) }),
  },
  {
    name: 'deleteSession',
    mutation: true,
    source: `mutation($id: ID!) { deleteSession(id: $id) { ${ERROR} } }`,
    variables: fc.record({ id: fc.oneof(hostileText, fc.constant('s-deletable')) }),
  },
  {
    name: 'upsertPrompt',
    mutation: true,
    source: `mutation($input: UpsertPromptInput!) { upsertPrompt(input: $input) { ${ERROR} } }`,
    variables: fc.record({
      input: fc.record(
        {
          id,
          description: optional(hostileText),
          messages: fc.array(fc.record({ role: fc.constantFrom('SYSTEM', 'USER', 'ASSISTANT', 'NOPE'), content: hostileText }), {
            maxLength: 3,
          }),
          defaultProfileId: optional(id),
          output: optional(
            fc.record({ kind: fc.constantFrom('TEXT', 'JSON', 'JSON_SCHEMA'), schema: optional(hostileJson) }, { requiredKeys: ['kind'] }),
          ),
          maxRepairs: optional(hostileNumber),
        },
        { requiredKeys: [] },
      ),
    }),
  },
  {
    name: 'deletePrompt',
    mutation: true,
    source: `mutation($id: ID!) { deletePrompt(id: $id) { ${ERROR} } }`,
    variables: fc.record({ id }),
  },
  {
    name: 'upsertProfile',
    mutation: true,
    source: `mutation($input: UpsertProfileInput!) { upsertProfile(input: $input) { ${ERROR} } }`,
    variables: fc.record({
      input: fc.record(
        {
          id,
          backendId: fc.oneof(id, fc.constantFrom('fake', 'openai')),
          model: hostileText,
          endpoint: optional(hostileText),
          settings: optional(settings),
          credentialEnv: optional(hostileText),
          candidates: optional(fc.array(id, { maxLength: 4 })),
        },
        { requiredKeys: [] },
      ),
    }),
  },
  {
    name: 'deleteProfile',
    mutation: true,
    source: `mutation($id: ID!) { deleteProfile(id: $id) { ${ERROR} } }`,
    variables: fc.record({ id }),
  },
  {
    name: 'queries',
    mutation: false,
    source:
      'query($s: ID!, $q: ID!, $r: ID!, $first: Int, $after: String) { session(id: $s) { id } queueEntry(sessionId: $s, queueId: $q) { queueId } run(id: $r) { id } runs(first: $first, after: $after) { edges { cursor } } sessions(first: $first, after: $after) { edges { cursor } } prompt(id: $s) { id } }',
    variables: fc.record({
      s: id,
      q: id,
      r: id,
      first: optional(hostileNumber),
      after: optional(fc.oneof(hostileText, fc.base64String())),
    }),
  },
  {
    name: 'createDataset',
    mutation: true,
    source: `mutation($input: CreateDatasetInput!) { createDataset(input: $input) { ${ERROR} } }`,
    variables: fc.record({ input: fc.record({ id, description: optional(hostileText) }, { requiredKeys: ['id'] }) }),
  },
  {
    name: 'addDatasetItems',
    mutation: true,
    source: `mutation($input: AddDatasetItemsInput!) { addDatasetItems(input: $input) { ${ERROR} } }`,
    variables: fc.record({
      input: fc.record({
        datasetId: fc.oneof(fc.constant('ds1'), id),
        items: fc.array(
          fc.record(
            {
              variables: optional(hostileJson),
              input: optional(hostileText),
              expected: optional(hostileJson),
              metadata: optional(hostileJson),
            },
            { requiredKeys: [] },
          ),
          { maxLength: 3 },
        ),
      }),
    }),
  },
  {
    name: 'startExperiment',
    mutation: true,
    source: `mutation($input: StartExperimentInput!) { startExperiment(input: $input) { ${ERROR} } }`,
    variables: fc.record({
      input: fc.record(
        {
          name: hostileText,
          datasetId: fc.oneof(fc.constant('ds1'), id),
          promptRef: fc.record({ id, label: optional(hostileText), version: optional(hostileNumber) }, { requiredKeys: ['id'] }),
          profileId: optional(id),
          repetitions: optional(hostileNumber),
          concurrency: optional(hostileNumber),
          scorers: fc.array(
            fc.record(
              {
                name: hostileText,
                kind: fc.constantFrom('EXACT', 'CONTAINS', 'REGEX', 'JSON_SCHEMA', 'JSON_PATH_EQUALS', 'LLM_JUDGE'),
                pattern: optional(hostileText),
                schema: optional(hostileJson),
                path: optional(hostileText),
              },
              { requiredKeys: ['name', 'kind'] },
            ),
            { maxLength: 3 },
          ),
          idempotencyKey: optional(hostileText),
          webhookUrl: optional(hostileText),
        },
        { requiredKeys: ['name', 'datasetId', 'promptRef', 'scorers'] },
      ),
    }),
  },
  {
    name: 'compareExperiments',
    mutation: false,
    source: 'query($a: ID!, $b: ID!) { compareExperiments(baseId: $a, candidateId: $b) { items { change } } }',
    variables: fc.record({ a: id, b: id }),
  },
  {
    name: 'preparePrompt',
    mutation: false,
    source: 'query($input: PreparePromptInput!) { preparePrompt(input: $input) { renderedHash } }',
    variables: fc.record({ input: fc.record({ ...runRequest, sessionId: optional(id) }, { requiredKeys: [] }) }),
  },
]

// a file name with a line (`queue.ts:12`); a client's own `.ts:0` that GraphQL quotes back in its own form is none
const LEAK = /\bat \S+ \(|node_modules|\/work\/|\/src\/|\w\.ts:\d+|Prisma|SQLITE|Unexpected error/

/**
 * The field a refusal's message names, or null: ours start with it (`input.items.0.variables: …`),
 * GraphQL's own coercion errors with the variable (`Variable "$input" got invalid value … at "input.x"`).
 */
function fieldOf(message: string): string | null {
  return /^[\w$.[\]-]+: |^Variable "\$\w+"/.exec(message)?.[0] ?? null
}

/** Every string the request carried: GraphQL quotes a refused value back, and that is no leak. */
function stringsOf(value: unknown, into: string[] = []): string[] {
  if (typeof value === 'string') into.push(value)
  else if (value !== null && typeof value === 'object') for (const child of Object.values(value)) stringsOf(child, into)
  return into
}

/** The answer with the request's own strings taken out, in each form an answer may quote them. */
function withoutEchoes(text: string, variables: unknown): string {
  const echoed = stringsOf(variables)
    .filter((s) => s.length >= 2)
    .sort((a, b) => b.length - a.length)
  let rest = text
  for (const s of echoed) {
    const once = JSON.stringify(s).slice(1, -1)
    for (const form of [JSON.stringify(once).slice(1, -1), once, s]) rest = rest.split(form).join('')
  }
  return rest
}

describe('fuzzing every operation with random and hostile input', () => {
  let database: TestDatabase
  let app: App
  let reader: SqliteDatabase.Database
  beforeAll(async () => {
    database = await createTestDatabase('sqlite')
    app = await createApp(
      { databaseUrl: database.url, catalogDir: DEFAULT_CATALOG, shutdownGraceMs: 0, limits: { retainedTerminalPerSession: 1_000_000 } },
      () => undefined,
      createLogger('silent'),
    )
    reader = new SqliteDatabase(database.url.slice('file:'.length), { readonly: true })
    for (const sessionId of ['s1', 's2', 's-deletable'])
      await send('mutation($id: ID!) { createSession(input: { id: $id, defaultProfileId: "fake-echo" }) { __typename } }', {
        id: sessionId,
      })
    await send('mutation { createDataset(input: { id: "ds1" }) { __typename } }', {})
    await send(
      'mutation { addDatasetItems(input: { datasetId: "ds1", items: [{ variables: { input: "hi" }, expected: "hi" }] }) { __typename } }',
      {},
    )
  })
  afterAll(async () => {
    reader?.close()
    await app?.close()
    await database?.drop()
  })

  async function send(source: string, variables: unknown) {
    const response = await app.yoga.fetch('http://promptline.test/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: source, variables }),
    })
    return { status: response.status, text: await response.text() }
  }

  /**
   * Rows a refused mutation must not have added or removed. Runs and events change in the
   * background, and so do the sessions an accepted experiment makes for its units and judges
   * (ids `exp-…`) while later cases run; its own rows count.
   */
  async function rows(): Promise<string> {
    await app.flush()
    return JSON.stringify(
      reader
        .prepare(
          `SELECT (SELECT COUNT(*) FROM "Session" WHERE id NOT LIKE 'exp-%') AS s,
            (SELECT COUNT(*) FROM "QueueEntry" WHERE "sessionId" NOT LIKE 'exp-%') AS q,
            (SELECT COUNT(*) FROM "Prompt") AS p, (SELECT COUNT(*) FROM "PromptVersion") AS v,
            (SELECT COUNT(*) FROM "Profile") AS f, (SELECT COUNT(*) FROM "Experiment") AS e,
            (SELECT COUNT(*) FROM "ExperimentUnit") AS u`,
        )
        .get(),
    )
  }

  it.each(OPERATIONS)(
    `$name: ${RUNS} cases, no INTERNAL, no leak, each refusal names its field, no partial write`,
    async ({ source, variables, mutation }) => {
      await fc.assert(
        fc.asyncProperty(variables, async (vars) => {
          const before = mutation ? await rows() : ''
          const { status, text } = await send(source, vars)
          expect(status).toBeLessThan(500)
          expect(text).not.toContain('"INTERNAL"')
          expect(withoutEchoes(text, vars)).not.toMatch(LEAK)
          const body = JSON.parse(text) as {
            data?: Record<string, { code?: string; field?: string | null; message?: string } | null> | null
            errors?: { message: string; extensions?: { code?: string } }[]
          }
          for (const answer of Object.values(body.data ?? {}))
            if (answer?.code === 'INVALID_REQUEST') expect(answer.field ?? fieldOf(answer.message!), answer.message).toBeTruthy()
          for (const error of body.errors ?? [])
            if (error.extensions?.code === 'INVALID_REQUEST') expect(fieldOf(error.message), error.message).toBeTruthy()
          const refused = body.errors !== undefined || Object.values(body.data ?? {}).some((v) => v === null || typeof v?.code === 'string')
          if (mutation && refused) expect(await rows()).toBe(before)
        }),
        { numRuns: RUNS, seed: SEED },
      )
    },
  )
})
