import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createSession, enqueue } from '../helpers/flow.js'
import { startTestServer, type TestServer } from '../helpers/server.js'
import { wsClient } from '../helpers/ws-client.js'

// Random and hostile operations on one graphql-ws socket: each gets its own answer (a result or
// an `error` message), none is INTERNAL, and the socket with its other subscriptions goes on.
const RUNS = Number(process.env.FUZZ_RUNS ?? 300)
const SEED = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED)

/** A selection nested `depth` deep through a run's session and queue, past the depth limit from 5 on. */
const nested = (depth: number, leaf: string) => {
  const steps = Array.from({ length: depth }, (_, i) => (i % 2 === 0 ? 'run { session { queue {' : '... on QueueEntry {'))
  return `${steps.join(' ')} ${leaf} ${steps.map((s) => '}'.repeat(s.split('{').length - 1)).join(' ')}`
}

const roots = [
  (sel: string) => `subscription ($id: ID!) { sessionEvents(sessionId: $id) { sequence ... on TokenDeltaEvent { ${sel} } } }`,
  (sel: string) => `subscription ($id: ID!) { runEvents(runId: $id) { sequence ... on TokenDeltaEvent { ${sel} } } }`,
  (sel: string) => `subscription ($id: ID!) { experimentProgress(id: $id) { __typename ${sel === 'sequence' ? '' : sel} } }`,
  (sel: string) => `query ($id: ID!) { session(id: $id) { id queue { ${sel} } } }`,
]

const operation = fc.record({
  root: fc.integer({ min: 0, max: roots.length - 1 }),
  depth: fc.integer({ min: 0, max: 12 }),
  aliases: fc.integer({ min: 1, max: 120 }),
  leaf: fc.constantFrom('sequence', 'id', 'nothingHere', '__schema { types { name } }', 'id @skip(if: true)'),
  id: fc.oneof(fc.string({ maxLength: 40 }), fc.constantFrom('', 'bad id!', '\u0000', 'a'.repeat(300)), fc.integer()),
})

describe('fuzzing operations over graphql-ws', () => {
  let t: TestServer
  beforeAll(async () => {
    t = await startTestServer({ provider: 'sqlite', app: { requestLimits: { publicSchema: false, maxDepth: 5, maxCost: 1000 } } })
  })
  afterAll(async () => {
    await t?.stop({ dropDatabase: true })
  })

  it(`${RUNS} hostile operations on one socket: each answered for its id, none INTERNAL, the socket never closed`, async () => {
    const client = wsClient(t.http.url)
    const closes: number[] = []
    client.on('closed', (event) => closes.push((event as { code: number }).code))
    const sessionId = await createSession(t, 'ws-fuzz-live')
    const live = client.iterate({
      query: 'subscription ($id: ID!) { sessionEvents(sessionId: $id) { sequence } }',
      variables: { id: sessionId },
    })
    try {
      await fc.assert(
        fc.asyncProperty(operation, async ({ root, depth, aliases, leaf, id }) => {
          const selection = Array.from({ length: aliases }, (_, i) => `a${i}: ${nested(depth, leaf)}`).join(' ')
          const query = roots[root]!(aliases === 1 && depth === 0 ? leaf : selection)
          const answer = await new Promise<string>((resolve) =>
            client.subscribe(
              { query, variables: { id } as never },
              {
                next: (result) => resolve(JSON.stringify(result)),
                error: (error) => resolve(JSON.stringify(error)),
                complete: () => resolve(''),
              },
            ),
          )
          expect(answer).not.toContain('"INTERNAL"')
          expect(closes).toEqual([])
        }),
        { numRuns: RUNS, seed: SEED },
      )
      await enqueue(t, { sessionId, input: 'still here', profileId: 'fake-echo' })
      expect((await live.next()).done).toBe(false)
    } finally {
      await live.return?.()
      await client.dispose()
    }
  })
})
