import { Repeater } from '@repeaterjs/repeater'
import { createSchema, createYoga } from 'graphql-yoga'
import { describe, expect, it } from 'vitest'
import { maskError } from '../../src/schema/errors.js'
import { useCompiledSubscriptions } from '../../src/server/compiled-subscriptions.js'

/** A subscription of `count` events from `from` on, that records when its source ends. */
function server(compiled = true) {
  const ended: string[] = []
  const schema = createSchema({
    typeDefs: /* GraphQL */ `
      type Query { ok: Boolean }
      type Tick { n: Int!, label(prefix: String!): String!, failing: String }
      type Subscription { ticks(from: Int!, count: Int!): Tick! }
    `,
    resolvers: {
      Tick: {
        label: (tick: { n: number }, { prefix }: { prefix: string }) => `${prefix}${tick.n}`,
        failing: () => {
          throw new Error('connection to db-7.internal refused')
        },
      },
      Subscription: {
        ticks: {
          subscribe: (_: unknown, { from, count }: { from: number; count: number }) =>
            new Repeater<{ n: number }>(async (push, stop) => {
              for (let n = from; n < from + count; n++) await push({ n })
              await stop // then quiet, as a session between runs, until the subscription ends
              ended.push(`from ${from}`)
            }),
          resolve: (tick: { n: number }) => tick,
        },
      },
    },
  })
  return {
    yoga: createYoga({ schema, plugins: compiled ? [useCompiledSubscriptions()] : [], maskedErrors: { maskError }, logging: false }),
    ended,
  }
}

async function subscribe(yoga: ReturnType<typeof server>['yoga'], query: string, variables: object, events: number) {
  const abort = new AbortController()
  const response = await yoga.fetch('http://yoga/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({ query, variables }),
    signal: abort.signal,
  })
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
  const data: unknown[] = []
  let text = ''
  while (data.length < events) {
    const { value } = await reader.read()
    text += value
    for (const line of text.split('\n').filter((l) => l.startsWith('data: '))) data.push(JSON.parse(line.slice(6)))
    text = text.slice(text.lastIndexOf('\n') + 1)
  }
  abort.abort()
  await reader.cancel().catch(() => {})
  return data
}

describe('subscription events resolved by their compiled selection', () => {
  it.each([
    ['compiled', ''],
    ['too long to compile, interpreted', `# ${'padding '.repeat(400)}\n`],
  ])('takes the field arguments written in the document as well as those in variables (%s)', async (_, padding) => {
    const { yoga } = server()
    const query = `${padding}subscription($count: Int!) { ticks(from: 7, count: $count) { n label(prefix: "#") } }`
    expect(await subscribe(yoga, query, { count: 2 }, 2)).toEqual([
      { data: { ticks: { n: 7, label: '#7' } } },
      { data: { ticks: { n: 8, label: '#8' } } },
    ])
  })

  it("masks an unexpected error of an event's field, as every other execution does", async () => {
    const query = 'subscription {\n  ticks(from: 1, count: 1) {\n    n\n    failing\n  }\n}'
    const [event] = await subscribe(server().yoga, query, {}, 1)
    expect(event).toMatchObject({ data: { ticks: { n: 1, failing: null } }, errors: [{ message: 'Unexpected error.' }] })
    expect(JSON.stringify(event)).not.toContain('db-7')
    expect(event).toEqual((await subscribe(server(false).yoga, query, {}, 1))[0])
  })

  it('ends the source at once when the client leaves while it waits for an event', async () => {
    const { yoga, ended } = server()
    await subscribe(yoga, 'subscription { ticks(from: 1, count: 1) { n } }', {}, 1)
    await expect.poll(() => ended).toEqual(['from 1'])
  })
})
