import { describe, expect, it } from 'vitest'
import type { SessionEvent } from '../../src/domain/events.js'
import { LOG_PAGE, replayLog } from '../../src/events/event-log.js'

const event = (sequence: number): SessionEvent => ({
  type: 'TOKEN_DELTA',
  text: `t${sequence}`,
  attempt: 0,
  candidate: null,
  tenantId: 't',
  sessionId: 's',
  runId: 'r',
  sequence,
  at: '',
})

/** A store holding `sequences`, read page by page; records where each read started. */
function storeOf(sequences: number[]) {
  const reads: number[] = []
  const page = async (after: number) => {
    reads.push(after)
    return sequences
      .filter((s) => s > after)
      .slice(0, LOG_PAGE)
      .map(event)
  }
  return { page, reads }
}

async function replayed(page: (after: number) => Promise<SessionEvent[]>, tail: number[], after: number) {
  const out: number[] = []
  for await (const e of replayLog(page, tail.map(event), after)) out.push(e.sequence)
  return out
}

describe("a session's log as it is replayed", () => {
  it('merges the stored pages with the unwritten tail in sequence order, each sequence once', async () => {
    // 4 is unwritten while 5 is stored (an earlier end's retry); 5 and 6 are in both
    const store = storeOf([1, 2, 3, 5, 6])
    expect(await replayed(store.page, [4, 5, 6, 7, 8], 0)).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
  })

  it('starts after the given sequence, in the pages and in the tail', async () => {
    const store = storeOf([1, 2, 3, 4])
    expect(await replayed(store.page, [2, 5, 6], 3)).toEqual([4, 5, 6])
    expect(store.reads).toEqual([3])
  })

  it('reads page after page from where the last one ended', async () => {
    const stored = Array.from({ length: LOG_PAGE * 2 + 3 }, (_, i) => i + 1)
    const store = storeOf(stored)
    const out = await replayed(store.page, [LOG_PAGE * 2 + 4], 0)
    expect(out).toEqual([...stored, LOG_PAGE * 2 + 4])
    expect(store.reads).toEqual([0, LOG_PAGE, LOG_PAGE * 2])
  })

  it('replays only the tail when nothing is stored', async () => {
    expect(await replayed(storeOf([]).page, [1, 2], 0)).toEqual([1, 2])
  })
})
