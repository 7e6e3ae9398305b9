import { describe, expect, it } from 'vitest'
import type { SessionEvent } from '../../src/domain/events.js'
import { createLogger } from '../../src/domain/logger.js'
import { NO_METRICS } from '../../src/domain/metrics.js'
import { EventWriter, type EventWriterOutcomes } from '../../src/events/event-writer.js'
import type { EventStore } from '../../src/store/event-store.js'

const event = (sessionId: string, sequence: number): SessionEvent => ({
  type: 'TOKEN_DELTA',
  text: 't',
  attempt: 0,
  candidate: null,
  tenantId: 't',
  sessionId,
  runId: 'r',
  sequence,
  at: new Date(0).toISOString(),
})

/** A store that refuses every batch holding an event of session `bad`, like a row the database rejects. */
function refusingStore() {
  const stored: SessionEvent[] = []
  const store = {
    async append(events: readonly SessionEvent[]) {
      if (events.some((e) => e.sessionId === 'bad')) throw new Error('duplicate key')
      stored.push(...events)
    },
  }
  return { stored, store: store as unknown as EventStore }
}

/** A writer whose timer never fires within a test: it writes when flushed or handed a transaction. */
const writerOver = (store: EventStore, outcomes: EventWriterOutcomes) =>
  new EventWriter(store, createLogger('silent'), { flushIntervalMs: 60_000, batchSize: 500 }, outcomes, NO_METRICS)

describe('the event writer', () => {
  it("keeps writing every other session's events when the database refuses one session's rows", async () => {
    const { stored, store } = refusingStore()
    const written: SessionEvent[] = []
    const refused: SessionEvent[] = []
    const writer = writerOver(store, { written: (e) => written.push(e), refused: (events) => refused.push(...events) })
    const batch = [event('good', 1), event('bad', 1), event('other', 1), event('good', 2)]
    for (const e of batch) writer.enqueue(e)
    // the first failures leave the batch queued for a retry (the database may come back)
    await writer.flush()
    await writer.flush()
    expect(stored).toEqual([])
    await writer.flush()
    expect(stored.map((e) => `${e.sessionId}#${e.sequence}`).sort()).toEqual(['good#1', 'good#2', 'other#1'])
    // each event is told about once: stored, or refused for good
    expect(written.map((e) => `${e.sessionId}#${e.sequence}`).sort()).toEqual(['good#1', 'good#2', 'other#1'])
    expect(refused).toEqual([batch[1]])
    // and later events go through as a batch again
    writer.enqueue(event('good', 3))
    await writer.close()
    expect(stored.at(-1)).toMatchObject({ sessionId: 'good', sequence: 3 })
  })

  it("hands the queued events to a caller's transaction, and queues them again, in order, when it fails", async () => {
    const stored: SessionEvent[] = []
    const written: SessionEvent[] = []
    const store = { append: async (events: readonly SessionEvent[]) => void stored.push(...events) }
    const writer = writerOver(store as unknown as EventStore, { written: (e) => written.push(e), refused: () => {} })
    writer.enqueue(event('s', 1))
    writer.enqueue(event('s', 2))
    await expect(
      writer.writeWith('t', 's', async (queued) => {
        expect(queued.map((e) => e.sequence)).toEqual([1, 2])
        throw new Error('database down')
      }),
    ).rejects.toThrow('database down')
    expect(written).toEqual([])
    writer.enqueue(event('s', 3))
    // a flush asked for meanwhile waits for the caller's write
    let flushed = false
    const taken = writer.writeWith('t', 's', async (queued) => {
      await new Promise((r) => setTimeout(r, 20))
      expect(flushed).toBe(false)
      stored.push(...queued)
      return 'ended'
    })
    const flushing = writer.flush().then(() => (flushed = true))
    expect(await taken).toBe('ended')
    await flushing
    expect(stored.map((e) => e.sequence)).toEqual([1, 2, 3])
    expect(written.map((e) => e.sequence)).toEqual([1, 2, 3])
  })

  it("hands a session's transaction only that session's events, and never makes it wait for another session's", async () => {
    const stored: SessionEvent[] = []
    const store = { append: async (events: readonly SessionEvent[]) => void stored.push(...events) }
    const writer = writerOver(store as unknown as EventStore, { written: () => {}, refused: () => {} })
    for (const e of [event('slow', 1), event('quick', 1), event('slow', 2), event('quick', 2)]) writer.enqueue(e)
    let release!: () => void
    const held = new Promise<void>((resolve) => {
      release = resolve
    })
    const handed: Record<string, string[]> = {}
    const slow = writer.writeWith('t', 'slow', async (queued) => {
      handed.slow = queued.map((e) => `${e.sessionId}#${e.sequence}`)
      await held
    })
    await writer.writeWith('t', 'quick', async (queued) => {
      handed.quick = queued.map((e) => `${e.sessionId}#${e.sequence}`)
    })
    // the quick session's transaction ended while the slow one's is still open
    expect(handed).toEqual({ slow: ['slow#1', 'slow#2'], quick: ['quick#1', 'quick#2'] })
    release()
    await slow
    await writer.close()
    expect(stored).toEqual([])
  })
})
