import { describe, expect, it } from 'vitest'
import type { SessionEvent } from '../../src/domain/events.js'
import { createLogger } from '../../src/domain/logger.js'
import { SessionEventBus } from '../../src/events/event-bus.js'
import type { EventStore } from '../../src/store/event-store.js'
import type { SessionStore } from '../../src/store/session-store.js'

const token = { type: 'TOKEN_DELTA' as const, text: 't', attempt: 0, candidate: null }
const named = (events: readonly SessionEvent[]) => events.map((e) => `${e.sessionId}#${e.sequence}`)

/** A bus whose batcher's timer never fires within a test: events are written when flushed or handed to a transaction. */
const busOver = (store: Partial<EventStore>) =>
  new SessionEventBus(store as EventStore, {} as SessionStore, createLogger('silent'), {
    flushIntervalMs: 60_000,
    batchSize: 500,
    sequenceBlock: 1000,
    subscriberBuffer: 100,
  })

describe('the event batcher and the streams it writes for', () => {
  it("keeps writing every other session's events when the database refuses one session's rows", async () => {
    const stored: SessionEvent[] = []
    const bus = busOver({
      async append(events) {
        if (events.some((e) => e.sessionId === 'bad')) throw new Error('duplicate key')
        stored.push(...events)
      },
    })
    const [good, bad, other] = ['good', 'bad', 'other'].map((id) => bus.openCreated('t', id))
    good!.publish('r', token)
    bad!.publish('r', token)
    other!.publish('r', token)
    good!.publish('r', token)
    // the first failures leave the batch queued for a retry (the database may come back)
    await bus.flush()
    await bus.flush()
    expect(stored).toEqual([])
    expect(named(good!.unwrittenAfter(0).events)).toEqual(['good#1', 'good#2'])
    await bus.flush()
    expect(named(stored).sort()).toEqual(['good#1', 'good#2', 'other#1'])
    // every stream is told: stored, or refused for good; nothing waits any more
    for (const stream of [good, bad, other]) expect(stream!.unwrittenAfter(0).events).toEqual([])
    // and later events go through as a batch again
    good!.publish('r', token)
    await bus.close()
    expect(stored.at(-1)).toMatchObject({ sessionId: 'good', sequence: 3 })
  })

  it("hands a stream's queued events to its transaction, and queues them again, in order, when it fails", async () => {
    const stored: SessionEvent[] = []
    const bus = busOver({ append: async (events) => void stored.push(...events) })
    const stream = bus.openCreated('t', 's')
    stream.publish('r', token)
    stream.publish('r', token)
    await expect(
      stream.commit('r', [], async (_events, earlier) => {
        expect(earlier.map((e) => e.sequence)).toEqual([1, 2])
        throw new Error('database down')
      }),
    ).rejects.toThrow('database down')
    expect(stream.unwrittenAfter(0).events.map((e) => e.sequence)).toEqual([1, 2])
    stream.publish('r', token)
    // a flush asked for meanwhile waits for the transaction
    let flushed = false
    const committed = stream.commit('r', [{ type: 'STEER_APPLIED', steerId: 'x' }], async (events, earlier) => {
      await new Promise((r) => setTimeout(r, 20))
      expect(flushed).toBe(false)
      stored.push(...earlier, ...events)
      return true
    })
    const flushing = bus.flush().then(() => (flushed = true))
    expect(await committed).toBe(true)
    await flushing
    expect(stored.map((e) => e.sequence)).toEqual([1, 2, 3, 4])
    expect(stream.quiet).toBe(true)
  })

  it("hands a session's transaction only that session's events, and never makes it wait for another session's", async () => {
    const stored: SessionEvent[] = []
    const bus = busOver({ append: async (events) => void stored.push(...events) })
    const slow = bus.openCreated('t', 'slow')
    const quick = bus.openCreated('t', 'quick')
    for (const stream of [slow, quick, slow, quick]) stream.publish('r', token)
    let release!: () => void
    const held = new Promise<void>((resolve) => {
      release = resolve
    })
    const handed: Record<string, string[]> = {}
    const slowEnd = slow.commit('r', [], async (_events, earlier) => {
      handed.slow = named(earlier)
      await held
      return true
    })
    await quick.commit('r', [], async (_events, earlier) => {
      handed.quick = named(earlier)
      return true
    })
    // the quick session's transaction ended while the slow one's is still open
    expect(handed).toEqual({ slow: ['slow#1', 'slow#2'], quick: ['quick#1', 'quick#2'] })
    release()
    await slowEnd
    await bus.close()
    expect(stored).toEqual([])
  })
})
