import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { CoalescerPacing, MAX_WINDOW_MS, TokenCoalescer } from '../../src/runner/token-coalescer.js'

/** A coalescer recording each chunk it emits with the fake clock's time. */
function streaming(pacing: CoalescerPacing) {
  const chunks: { text: string; at: number }[] = []
  const coalescer = new TokenCoalescer((text) => chunks.push({ text, at: Date.now() }), pacing)
  return { chunks, coalescer }
}

/** Pushes one-letter deltas every `everyMs` for `durationMs`, then closes. */
function feed(coalescer: TokenCoalescer, everyMs: number, durationMs: number): string {
  let sent = ''
  for (let t = 0; t < durationMs; t += everyMs) {
    const letter = String.fromCharCode(97 + ((t / everyMs) % 26))
    coalescer.push(letter)
    sent += letter
    vi.advanceTimersByTime(everyMs)
  }
  coalescer.close()
  return sent
}

describe('the token coalescer', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 0 })
  })
  afterEach(() => {
    vi.useRealTimers()
  })

  it('sends the first delta at once, then a chunk per window, losing and reordering nothing', () => {
    const { chunks, coalescer } = streaming(new CoalescerPacing({ windowMs: 15, maxDeltas: 32, eventsPerSecond: 1000 }))
    const sent = feed(coalescer, 5, 1000)
    expect(chunks[0]).toEqual({ text: 'a', at: 0 })
    expect(chunks.map((c) => c.text).join('')).toBe(sent)
    // 199 deltas after the first, three to a 15 ms window
    expect(chunks.length).toBeGreaterThanOrEqual(60)
    expect(chunks.length).toBeLessThanOrEqual(70)
  })

  it('widens every window in proportion once more runs stream than the event budget allows, and narrows back', () => {
    const pacing = new CoalescerPacing({ windowMs: 15, maxDeltas: 32, eventsPerSecond: 1000 })
    // 49 other runs streaming: 50 × 1000/15 would be 3 333 events a second, so windows become 50 ms
    const others = Array.from({ length: 49 }, () => new TokenCoalescer(() => {}, pacing))
    const busy = streaming(pacing)
    expect(pacing.widening).toBeCloseTo(50 / 15)
    const sent = feed(busy.coalescer, 5, 1000)
    expect(busy.chunks.map((c) => c.text).join('')).toBe(sent)
    expect(busy.chunks.length).toBeGreaterThanOrEqual(18)
    expect(busy.chunks.length).toBeLessThanOrEqual(22)
    const gaps = busy.chunks.slice(2).map((c, i) => c.at - busy.chunks[i + 1]!.at)
    expect(Math.max(...gaps)).toBeLessThanOrEqual(50)

    for (const other of others) other.close()
    expect(pacing.widening).toBe(1)
    const quiet = streaming(pacing)
    feed(quiet.coalescer, 5, 1000)
    expect(quiet.chunks.length).toBeGreaterThanOrEqual(60)
  })

  it('never waits longer than the widest window, however many runs stream', () => {
    const pacing = new CoalescerPacing({ windowMs: 15, maxDeltas: 32, eventsPerSecond: 1000 })
    for (let i = 0; i < 10_000; i++) new TokenCoalescer(() => {}, pacing)
    const { chunks, coalescer } = streaming(pacing)
    feed(coalescer, 5, 2000)
    const gaps = chunks.slice(2).map((c, i) => c.at - chunks[i + 1]!.at)
    expect(Math.max(...gaps)).toBe(MAX_WINDOW_MS)
  })

  it('keeps the configured window when widening is off', () => {
    const pacing = new CoalescerPacing({ windowMs: 15, maxDeltas: 32, eventsPerSecond: 0 })
    for (let i = 0; i < 100; i++) new TokenCoalescer(() => {}, pacing)
    const { chunks, coalescer } = streaming(pacing)
    feed(coalescer, 5, 1000)
    expect(chunks.length).toBeGreaterThanOrEqual(60)
  })

  it('sends a chunk as soon as the chunk size has gathered, widened with the window', () => {
    const pacing = new CoalescerPacing({ windowMs: 15, maxDeltas: 4, eventsPerSecond: 1000 })
    const { chunks, coalescer } = streaming(pacing)
    for (let i = 0; i < 9; i++) coalescer.push('x')
    // the first at once, then two chunks of four, all before any timer fired
    expect(chunks.map((c) => c.text)).toEqual(['x', 'xxxx', 'xxxx'])
    coalescer.close()

    for (let i = 0; i < 29; i++) new TokenCoalescer(() => {}, pacing)
    const wide = streaming(pacing) // 30 streams: twice the window, twice the chunk
    for (let i = 0; i < 9; i++) wide.coalescer.push('x')
    expect(wide.chunks.map((c) => c.text)).toEqual(['x', 'xxxxxxxx'])
  })
})
