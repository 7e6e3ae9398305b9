import { MAX_QUEUE_LENGTH } from '@repeaterjs/repeater'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SubscriberTooSlowError } from '../../src/domain/errors.js'
import { createLogger } from '../../src/domain/logger.js'
import { DEFAULT_EVENT_BUS_OPTIONS, SessionEventBus } from '../../src/events/event-bus.js'
import type { SessionStream } from '../../src/events/session-stream.js'
import { openStore, type Store } from '../../src/store/store.js'
import { createTestDatabase, type TestDatabase } from '../helpers/databases.js'

const BUFFER = 4

describe('a subscriber that falls too far behind', () => {
  let database: TestDatabase
  let store: Store
  let bus: SessionEventBus
  let sessionStream: SessionStream
  beforeAll(async () => {
    database = await createTestDatabase('sqlite')
    store = await openStore(database.url)
    bus = new SessionEventBus(store.events, store.sessions, createLogger('silent'), {
      ...DEFAULT_EVENT_BUS_OPTIONS,
      subscriberBuffer: BUFFER,
    })
    const session = { title: null, defaultProfileId: null, metadata: null, keepHistory: true, webhookUrl: null, forkedFrom: null }
    await store.sessions.create({ ...session, tenantId: 't', id: 's', sequenceCeiling: bus.firstCeiling })
    sessionStream = bus.openCreated('t', 's')
  })
  afterAll(async () => {
    await bus?.close()
    await store?.close()
    await database?.drop()
  })

  it('gets what it was given, then SUBSCRIBER_TOO_SLOW with the last sequence delivered; the publisher never sees it', async () => {
    const unwrittenTail = async (after: number) => sessionStream.unwrittenAfter(after)
    const stream = bus.subscribe({ tenantId: 't', sessionId: 's', afterSequence: null, unwrittenTail })
    const first = stream.next() // the subscription is live once its first read is asked for
    await Promise.resolve()
    const published = BUFFER + MAX_QUEUE_LENGTH + 10
    for (let i = 0; i < published; i++) sessionStream.publish(null, { type: 'TOKEN_DELTA', text: `t${i}`, attempt: 0, candidate: null })
    const delivered = [(await first).value.sequence]
    let error: unknown = null
    try {
      for await (const event of stream) delivered.push(event.sequence)
    } catch (caught) {
      error = caught
    }
    expect(error).toBeInstanceOf(SubscriberTooSlowError)
    expect((error as SubscriberTooSlowError).code).toBe('SUBSCRIBER_TOO_SLOW')
    expect((error as SubscriberTooSlowError).lastSequence).toBe(delivered.at(-1))
    expect(delivered).toEqual(Array.from({ length: delivered.length }, (_, i) => i + 1))
    expect(delivered.length).toBeLessThan(published)
    // resuming after the last sequence it got replays the rest
    const resumed = bus.subscribe({ tenantId: 't', sessionId: 's', afterSequence: delivered.at(-1)!, replayOnly: true, unwrittenTail })
    const rest: number[] = []
    for await (const event of resumed) rest.push(event.sequence)
    expect([...delivered, ...rest]).toEqual(Array.from({ length: published }, (_, i) => i + 1))
  })
})
