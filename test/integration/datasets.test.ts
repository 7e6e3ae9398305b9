import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  AddDatasetItemsDocument,
  AddRunToDatasetDocument,
  CreateDatasetDocument,
  DatasetItemsDocument,
  type DatasetItemsQuery,
  RemoveDatasetItemsDocument,
  RunPromptDocument,
} from '../generated/graphql.js'
import { providers } from '../helpers/databases.js'
import { createSession } from '../helpers/flow.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

type Item = NonNullable<DatasetItemsQuery['dataset']>['items']['edges'][number]['node']

const cities = (n: number, from = 0) =>
  Array.from({ length: n }, (_, i) => ({
    variables: { city: `city-${from + i}` },
    input: `weather in city-${from + i}?`,
    expected: { sky: i % 2 === 0 ? 'clear' : 'rain' },
    metadata: { row: from + i },
  }))

/** What an item holds, without what the store gave it. */
const contentOf = ({ variables, input, expected, metadata }: Item) => ({ variables, input, expected, metadata })

describe.each(providers)('datasets (%s)', (provider) => {
  let t: TestServer
  beforeAll(async () => {
    t = await startTestServer({ provider })
  })
  afterAll(async () => {
    await t?.stop({ dropDatabase: true })
  })

  const create = async (id: string) =>
    (await t.request(CreateDatasetDocument, { input: { id, description: 'cities' } })).data!.createDataset
  const add = async (datasetId: string, items: ReturnType<typeof cities>) =>
    (await t.request(AddDatasetItemsDocument, { input: { datasetId, items } })).data!.addDatasetItems
  /** Every item of a version, read a page of `first` at a time. */
  async function itemsOf(id: string, version: number | null, first = 50): Promise<Item[]> {
    const items: Item[] = []
    for (let after: string | null | undefined = null; ; ) {
      const page: NonNullable<DatasetItemsQuery['dataset']>['items'] = (
        await t.request(DatasetItemsDocument, { id, version, first, after })
      ).data!.dataset!.items
      items.push(...page.edges.map((e) => e.node))
      if (!page.pageInfo.hasNextPage) return items
      after = page.pageInfo.endCursor
    }
  }

  it('keeps each version as it was: 20 items in version 1, 18 in version 2 after two are removed', async () => {
    expect(await create('weather')).toMatchObject({ __typename: 'CreateDatasetPayload', dataset: { id: 'weather', version: 0 } })
    expect(await add('weather', cities(20))).toMatchObject({ version: { version: 1, itemCount: 20 } })
    const first = await itemsOf('weather', 1, 7)
    expect(first.map(contentOf)).toEqual(cities(20))
    const gone = [first[3]!.id, first[11]!.id]
    const removed = (await t.request(RemoveDatasetItemsDocument, { input: { datasetId: 'weather', itemIds: gone } })).data!
      .removeDatasetItems
    expect(removed).toMatchObject({ version: { version: 2, itemCount: 18 }, dataset: { version: 2 } })

    // version 1 still reads as it was written; version 2 is the same items but the two
    expect(await itemsOf('weather', 1, 7)).toEqual(first)
    const second = await itemsOf('weather', null)
    expect(second).toEqual(first.filter((item) => !gone.includes(item.id)))
    const dataset = (await t.request(DatasetItemsDocument, { id: 'weather', first: 0 })).data!.dataset!
    expect(dataset.versions).toEqual([
      { version: 1, itemCount: 20 },
      { version: 2, itemCount: 18 },
    ])
  })

  it('exports a version as JSON Lines and imports them into another dataset as new items of the same content', async () => {
    await create('exported')
    await add('exported', cities(3))
    await add('exported', cities(2, 3))
    const exported = await fetch(`${t.http.url}/datasets/exported/items?version=1`)
    expect(exported.headers.get('content-type')).toBe('application/x-ndjson')
    const lines = (await exported.text()).trimEnd().split('\n')
    expect(lines.map((line) => JSON.parse(line))).toMatchObject(cities(3))

    await create('imported')
    const imported = await fetch(`${t.http.url}/datasets/imported/items`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-ndjson' },
      body: `${lines.join('\n')}\n\n`,
    })
    expect(imported.status).toBe(201)
    expect(await imported.json()).toMatchObject({ datasetId: 'imported', version: { version: 1, itemCount: 3 } })
    const items = await itemsOf('imported', null)
    expect(items.map(contentOf)).toEqual(cities(3))
    expect(items.map((i) => i.id)).not.toEqual(lines.map((line) => JSON.parse(line).id))
  })

  it("takes a past run's variables and input as an item, with the answer it should have given", async () => {
    const sessionId = await createSession(t, `dataset-run-${provider}`)
    const ran = (await t.request(RunPromptDocument, { input: { sessionId, input: 'good morning', variables: { tone: 'dry' } } })).data!
      .runPrompt
    if (ran.__typename !== 'RunPromptPayload') throw new Error(JSON.stringify(ran))
    await create('from-runs')
    const added = (
      await t.request(AddRunToDatasetDocument, { input: { datasetId: 'from-runs', runId: ran.run!.id, expected: 'good morning' } })
    ).data!.addRunToDataset
    expect(added).toMatchObject({ version: { version: 1, itemCount: 1 } })
    expect(await itemsOf('from-runs', null)).toMatchObject([
      { variables: { tone: 'dry' }, input: 'good morning', expected: 'good morning', sourceRunId: ran.run!.id },
    ])
  })

  it('refuses bad input with a typed error and makes no version', async () => {
    await create('strict')
    await add('strict', cities(2))
    expect(await create('strict')).toMatchObject({ __typename: 'InvalidRequestError' })
    const notObject = await t.request(AddDatasetItemsDocument, { input: { datasetId: 'strict', items: [{ variables: [1, 2] }] } })
    expect(notObject.data!.addDatasetItems.__typename).toBe('InvalidRequestError')
    // a key named __proto__ (JSON.parse makes it an own key) is refused, not stored
    const polluting = await t.request(AddDatasetItemsDocument, {
      input: { datasetId: 'strict', items: [{ variables: {}, expected: JSON.parse('{"__proto__": null}') }] },
    })
    expect(polluting.data!.addDatasetItems).toMatchObject({
      __typename: 'InvalidRequestError',
      message: 'input.items[0].expected: holds a key named __proto__, which is not accepted',
    })
    const unknown = (await t.request(RemoveDatasetItemsDocument, { input: { datasetId: 'strict', itemIds: ['no-such-item'] } })).data!
      .removeDatasetItems
    expect(unknown).toMatchObject({ __typename: 'InvalidRequestError' })
    expect(JSON.stringify(unknown)).toContain('no-such-item')
    const badLine = await fetch(`${t.http.url}/datasets/strict/items`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-ndjson' },
      body: '{"variables": {}}\n{"variables": {}, "input": 3}\n',
    })
    expect(badLine.status).toBe(400)
    expect((await badLine.json()).error.message).toContain('line 2')
    expect((await add('nowhere', cities(1))).__typename).toBe('NotFoundError')
    expect((await fetch(`${t.http.url}/datasets/nowhere/items`)).status).toBe(404)
    expect((await t.request(DatasetItemsDocument, { id: 'strict', first: 0 })).data!.dataset!.versions).toEqual([
      { version: 1, itemCount: 2 },
    ])
  })
})
