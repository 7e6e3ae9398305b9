import { describe, expect, it } from 'vitest'
import type { SessionEvent } from '../../src/domain/events.js'
import { createLogger } from '../../src/domain/logger.js'
import { DEFAULT_EVENT_BUS_OPTIONS, SessionEventBus } from '../../src/events/event-bus.js'
import type { SessionStream } from '../../src/events/session-stream.js'
import type { EventStore } from '../../src/store/event-store.js'
import type { SessionStore } from '../../src/store/session-store.js'

/** An event log whose writes land when the test says so. */
function heldLog() {
  const writes: { events: readonly SessionEvent[]; land: () => void }[] = []
  let asked: () => void = () => {}
  const store = {
    append: (events: readonly SessionEvent[]) =>
      new Promise<void>((resolve) => {
        writes.push({ events, land: resolve })
        asked()
      }),
    after: async () => [],
  }
  /** Resolves once a write has been asked for. */
  const nextWrite = () => (writes.length > 0 ? Promise.resolve() : new Promise<void>((resolve) => (asked = resolve)))
  return { writes, nextWrite, store: store as unknown as EventStore }
}

/** What a subscriber asks the session's owner for, here answered by its stream in this process. */
const tailOf = (session: SessionStream) => async (afterSequence: number) => session.unwrittenAfter(afterSequence)

const token = (text: string) => ({ type: 'TOKEN_DELTA' as const, text, attempt: 0, candidate: null })

describe('a session event stream and the bus', () => {
  it('delivers a lifecycle event once it is stored, and the tokens published after it behind it, in order', async () => {
    const log = heldLog()
    const bus = new SessionEventBus(log.store, {} as SessionStore, createLogger('silent'), DEFAULT_EVENT_BUS_OPTIONS)
    const session = bus.openCreated('t', 's')
    const subscription = bus.subscribe({ tenantId: 't', sessionId: 's', afterSequence: null, unwrittenTail: tailOf(session) })
    const delivered: number[] = []
    const reading = (async () => {
      for await (const event of subscription) {
        delivered.push(event.sequence)
        if (delivered.length === 4) return
      }
    })()
    await Promise.resolve()

    session.publish(null, token('before')) // nothing waits: live at once
    session.publish('r', { type: 'STEER_APPLIED', steerId: 'x' })
    session.publish('r', token('after 1'))
    session.publish('r', token('after 2'))
    await log.nextWrite()
    // the write holds the lifecycle event and the tokens behind it; none of those went out yet
    expect(log.writes[0]!.events.map((e) => e.sequence)).toEqual([1, 2, 3, 4])
    await new Promise<void>((resolve) => setImmediate(resolve))
    expect(delivered).toEqual([1])

    log.writes[0]!.land()
    await reading
    expect(delivered).toEqual([1, 2, 3, 4])
    expect(session.quiet).toBe(true)
  })

  it('replays to a subscriber on another instance every event the owner wrote while it was asked for its unwritten tail', async () => {
    const numbered = (sequence: number): SessionEvent => ({
      ...token(`t${sequence}`),
      tenantId: 't',
      sessionId: 's',
      runId: 'r',
      sequence,
      at: '',
    })
    // the owner writes 3 and 4 at the moment it is asked, so it answers with no unwritten tail
    let storedUpTo = 2
    const store = {
      after: async (_t: string, _s: string, after: number) =>
        [1, 2, 3, 4].filter((sequence) => sequence > after && sequence <= storedUpTo).map(numbered),
    }
    const bus = new SessionEventBus(store as unknown as EventStore, {} as SessionStore, createLogger('silent'), DEFAULT_EVENT_BUS_OPTIONS)
    const stream = bus.subscribe({
      tenantId: 't',
      sessionId: 's',
      afterSequence: 0,
      replayOnly: true,
      unwrittenTail: async () => {
        storedUpTo = 4
        return { events: [], anyStored: true }
      },
    })
    const replayed: number[] = []
    for await (const event of stream) replayed.push(event.sequence)
    expect(replayed).toEqual([1, 2, 3, 4])
  })

  it('delivers to a dozen subscribers of one session, with no listener-leak warning', async () => {
    const log = heldLog()
    const bus = new SessionEventBus(log.store, {} as SessionStore, createLogger('silent'), DEFAULT_EVENT_BUS_OPTIONS)
    const session = bus.openCreated('t', 's')
    const warnings: Error[] = []
    const onWarning = (warning: Error) => warnings.push(warning)
    process.on('warning', onWarning)
    try {
      const streams = Array.from({ length: 12 }, () =>
        bus.subscribe({ tenantId: 't', sessionId: 's', afterSequence: null, unwrittenTail: tailOf(session) }),
      )
      const firsts = streams.map((stream) => stream.next())
      await new Promise(setImmediate)
      session.publish(null, token('to all'))
      const received = await Promise.all(firsts)
      expect(received.map((r) => r.value.sequence)).toEqual(Array(12).fill(1))
      await Promise.all(streams.map((stream) => stream.return?.()))
      await new Promise(setImmediate)
      expect(warnings.map((w) => w.name)).toEqual([])
    } finally {
      process.off('warning', onWarning)
    }
  })
})
