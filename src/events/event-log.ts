import type { SessionEvent } from '../domain/events.js'

/** Events read from the store at a time. */
export const LOG_PAGE = 500

/**
 * A session's log as a subscriber replays it after a sequence: the stored pages (`page(after)`,
 * up to `LOG_PAGE` in order) merged in sequence order with the tail its owner delivered and has
 * not written yet. The caller takes the tail before the first page is read, so an event written
 * in between is in the pages; each sequence comes out once, in order.
 */
export async function* replayLog(
  page: (after: number) => Promise<SessionEvent[]>,
  tail: readonly SessionEvent[],
  afterSequence: number,
): AsyncGenerator<SessionEvent> {
  const waiting = tail.filter((event) => event.sequence > afterSequence)
  let last = afterSequence
  for (let cursor = afterSequence; ; ) {
    const events = await page(cursor)
    for (const event of events) {
      while (waiting.length > 0 && waiting[0]!.sequence < event.sequence) {
        const unwritten = waiting.shift()!
        if (unwritten.sequence > last) {
          last = unwritten.sequence
          yield unwritten
        }
      }
      if (event.sequence > last) {
        last = event.sequence
        yield event
      }
    }
    if (events.length < LOG_PAGE) break
    cursor = events.at(-1)!.sequence
  }
  for (const unwritten of waiting) {
    if (unwritten.sequence <= last) continue
    last = unwritten.sequence
    yield unwritten
  }
}
