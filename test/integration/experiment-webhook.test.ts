import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AddDatasetItemsDocument, CreateDatasetDocument, StartExperimentDocument, UpsertPromptDocument } from '../generated/graphql.js'
import { providers } from '../helpers/databases.js'
import { startTestServer, type TestServer } from '../helpers/server.js'
import { newWebhookSecret, WebhookReceiver } from '../helpers/webhook-receiver.js'

const secret = newWebhookSecret()

describe.each(providers)('an experiment with a webhook (%s)', (provider) => {
  let t: TestServer
  let receiver: WebhookReceiver
  beforeAll(async () => {
    receiver = await WebhookReceiver.start(secret)
    t = await startTestServer({ provider, app: { webhooks: { secrets: new Map([['local', secret]]) } } })
    await t.request(UpsertPromptDocument, {
      input: { id: 'echo-word', messages: [{ role: 'USER', content: '{{word}}' }], defaultProfileId: 'fake-echo' },
    })
    await t.request(CreateDatasetDocument, { input: { id: 'hooked' } })
    const items = ['a', 'b', 'c'].map((word) => ({ variables: { word }, expected: word }))
    await t.request(AddDatasetItemsDocument, { input: { datasetId: 'hooked', items } })
  })
  afterAll(async () => {
    await t?.stop({ dropDatabase: true })
    await receiver?.close()
  })

  it('refuses a webhook it could not sign, and starts nothing', async () => {
    const unsigned = await startTestServer({ provider })
    try {
      const input = { name: 'x', datasetId: 'none', promptRef: { id: 'echo-word' }, scorers: [], webhookUrl: `${receiver.url}/x` }
      const refused = (await unsigned.request(StartExperimentDocument, { input })).data!.startExperiment
      expect(refused).toMatchObject({ __typename: 'InvalidRequestError' })
    } finally {
      await unsigned.stop({ dropDatabase: true })
    }
  })

  it('posts experiment.completed, signed, once it ends, with its status, progress and summary', async () => {
    const input = {
      name: 'hooked',
      datasetId: 'hooked',
      promptRef: { id: 'echo-word', version: 1 },
      scorers: [{ name: 'exact', kind: 'EXACT' as const }],
      webhookUrl: `${receiver.url}/experiments`,
    }
    const started = (await t.request(StartExperimentDocument, { input })).data!.startExperiment
    if (started.__typename !== 'ExperimentPayload') throw new Error(JSON.stringify(started))
    const before = receiver.received.length
    const [posted] = (await receiver.until(before + 1)).slice(before)
    expect(posted!.path).toBe('/experiments')
    expect(posted!.headers['webhook-id']).toBe(`experiment_${started.experiment.id}`)
    expect(posted!.verified).toMatchObject({
      type: 'experiment.completed',
      data: { experimentId: started.experiment.id, status: 'COMPLETED', name: 'hooked', done: 3, total: 3, passRate: 1 },
    })
  })
})
