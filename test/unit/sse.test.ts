import { describe, expect, it } from 'vitest'
import { type ServerSentEvent, serverSentEvents } from '../../src/providers/sse.js'

/** A body that delivers `bytes` in the given pieces. */
function body(bytes: Uint8Array, cuts: number[]): ReadableStream<Uint8Array> {
  const edges = [0, ...cuts, bytes.length]
  let i = 0
  return new ReadableStream({
    pull(controller) {
      if (i + 1 >= edges.length) return controller.close()
      controller.enqueue(bytes.slice(edges[i], edges[i + 1]))
      i++
    },
  })
}

async function read(stream: ReadableStream<Uint8Array>): Promise<ServerSentEvent[]> {
  const events: ServerSentEvent[] = []
  for await (const read of serverSentEvents(stream)) events.push(...read)
  return events
}

const TEXT =
  ': a comment\r\n' +
  'data: {"a":"é"}\r\n\r\n' +
  'event: delta\n' +
  'data: line one\n' +
  'data:line two\n\n' +
  'data: 🙂 in\rdata: a CR-only event\r\r' +
  'id: 7\nretry: 10\n\n' +
  'data: [DONE]'
const EXPECTED: ServerSentEvent[] = [
  { event: null, data: '{"a":"é"}' },
  { event: 'delta', data: 'line one\nline two' },
  { event: null, data: '🙂 in\na CR-only event' },
  { event: null, data: '[DONE]' },
]

describe('serverSentEvents', () => {
  const bytes = new TextEncoder().encode(TEXT)

  it('reads every event whole, whatever the chunks: split at each byte, in one piece, byte by byte', async () => {
    expect(await read(body(bytes, []))).toEqual(EXPECTED)
    expect(
      await read(
        body(
          bytes,
          Array.from({ length: bytes.length - 1 }, (_, i) => i + 1),
        ),
      ),
    ).toEqual(EXPECTED)
    for (let cut = 1; cut < bytes.length; cut++) expect(await read(body(bytes, [cut]))).toEqual(EXPECTED)
  })

  it('reads a long run of events sent in one chunk, as a fast server on loopback sends them, in one step', async () => {
    const many = Array.from({ length: 5000 }, (_, i) => `data: {"i":${i}}\n\n`).join('')
    const reads: ServerSentEvent[][] = []
    for await (const read of serverSentEvents(body(new TextEncoder().encode(many), []))) reads.push(read)
    expect(reads).toHaveLength(1)
    expect(reads[0]).toHaveLength(5000)
    expect(reads[0]!.at(-1)).toEqual({ event: null, data: '{"i":4999}' })
  })

  it('cancels the body when the reader stops early', async () => {
    let cancelled = false
    const endless = new ReadableStream<Uint8Array>({
      pull: (controller) => controller.enqueue(new TextEncoder().encode('data: x\n\n')),
      cancel: () => {
        cancelled = true
      },
    })
    for await (const _ of serverSentEvents(endless)) break
    expect(cancelled).toBe(true)
  })
})
