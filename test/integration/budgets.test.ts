import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { EnqueuePromptDocument, SessionDocument } from '../generated/graphql.js'
import { providers } from '../helpers/databases.js'
import { createSession, waitForEntry } from '../helpers/flow.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

// A tenant over a budget is refused at admission, with nothing written, until its window ends.
describe.each(providers)('budgets (%s)', (provider) => {
  let t: TestServer
  beforeAll(async () => {
    t = await startTestServer({
      provider,
      app: {
        budgets: [
          { tenantId: 'local', metric: 'runs', limit: 3, windowMs: 3_600_000 },
          { tenantId: 'local', metric: 'tokens', limit: 1_000_000, windowMs: 86_400_000 },
        ],
      },
    })
  })
  afterAll(() => t?.stop({ dropDatabase: true }))

  /** A raw operation in process, for documents the typed operations do not hold. */
  const graphql = async (query: string, variables?: Record<string, unknown>) => {
    const response = await t.app.yoga.fetch('http://promptline.test/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query, variables }),
    })
    return response.json()
  }
  const budgets = () =>
    graphql('{ budgets { metric limit used windowMs resetsAt } }') as Promise<{
      data: { budgets: { metric: string; limit: number; used: number; resetsAt: string }[] }
    }>

  it('refuses the prompt past the runs budget with BudgetExceededError, names it and when it resets, and writes nothing', async () => {
    const s = await createSession(t, 'spender')
    for (const input of ['one', 'two', 'three']) {
      const { data } = await t.request(EnqueuePromptDocument, { input: { sessionId: s, input } })
      expect(data!.enqueuePrompt.__typename).toBe('EnqueuePromptPayload')
    }
    const refused = await graphql(
      'mutation($s: ID!) { enqueuePrompt(input: { sessionId: $s, input: "four" }) { __typename ... on BudgetExceededError { code budget resetsAt message } } }',
      { s },
    )
    expect(refused.data.enqueuePrompt).toMatchObject({ __typename: 'BudgetExceededError', code: 'BUDGET_EXCEEDED', budget: 'runs' })
    expect(Date.parse(refused.data.enqueuePrompt.resetsAt)).toBeGreaterThan(Date.now())
    const queue = (await t.request(SessionDocument, { id: s, includeTerminal: true })).data!.session!.queue
    expect(queue.map((e) => e.input)).toEqual(['one', 'two', 'three'])
    await Promise.all(queue.map((e) => waitForEntry(t, s, e.queueId, ['COMPLETED'])))
  })

  it('shows each budget with its use in the current window', async () => {
    const { data } = await budgets()
    expect(data.budgets).toEqual([
      expect.objectContaining({ metric: 'RUNS', limit: 3, used: 3 }),
      expect.objectContaining({ metric: 'TOKENS', limit: 1_000_000, used: expect.any(Number) }),
    ])
    expect(data.budgets[1]!.used).toBeGreaterThan(0)
  })
})
