/** One server-sent event: its `event:` name (null when it had none) and its `data:` lines joined. */
export interface ServerSentEvent {
  event: string | null
  data: string
}

/**
 * The events of a `text/event-stream` body, in linear time: each byte is decoded and scanned
 * once. The SDKs' own readers copy the rest of their buffer after every event, which costs
 * quadratic time when a fast server sends many events in one chunk (a whole 200-token answer
 * arrives so on loopback). Yields the events each read of the body completed, together: the
 * caller pays one step of async iteration per read, not per event. Leaving early
 * (return/break) cancels the body.
 */
export async function* serverSentEvents(body: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>): AsyncGenerator<ServerSentEvent[]> {
  const decoder = new TextDecoder()
  let buffer = ''
  // Node's web streams are async iterable too; leaving the loop early (the caller's break, or
  // an error) cancels or destroys the body
  for await (const value of body as AsyncIterable<Uint8Array>) {
    const events: ServerSentEvent[] = []
    buffer = eventsOf(buffer + decoder.decode(value, { stream: true }), events)
    if (events.length > 0) yield events
  }
  const last = parse((buffer + decoder.decode()).replace(/\r\n?/g, '\n').trim())
  if (last) yield [last]
}

/** What `textDeltas` is told after a stream's last event (OpenAI's `[DONE]`). */
export const STREAM_END = Symbol('the end of the stream')

/**
 * The text of a vendor's event stream as the model client yields it: `read` makes of each event
 * its text (or null) and may throw the stream's own error or answer `STREAM_END`; the texts of one
 * network read go out as one delta, counted, followed by what `drain` gathered from the same
 * events (tool-call fragments). What came before an error or the end in the same read still goes
 * out first.
 */
export async function* textDeltas<E>(
  body: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>,
  read: (event: ServerSentEvent) => string | null | typeof STREAM_END,
  drain: () => readonly E[],
): AsyncGenerator<{ type: 'delta'; text: string; deltas: number } | E> {
  for await (const events of serverSentEvents(body)) {
    const delta = { type: 'delta' as const, text: '', deltas: 0 }
    let failed = false
    let failure: unknown
    let ended = false
    try {
      for (const event of events) {
        const text = read(event)
        if (text === STREAM_END) {
          ended = true
          break
        }
        if (text) {
          delta.text += text
          delta.deltas++
        }
      }
    } catch (error) {
      failed = true
      failure = error
    }
    if (delta.deltas > 0) yield delta
    const more = drain()
    if (more.length > 0) yield* more
    if (failed) throw failure
    if (ended) return
  }
}

/** Adds the complete events of `buffer` to `events` and returns what is left of it. */
function eventsOf(buffer: string, events: ServerSentEvent[]): string {
  // line ends may be \r\n, \r or \n; a \r at the end may be half of a \r\n, so it waits
  const held = buffer.endsWith('\r') ? '\r' : ''
  const whole = held ? buffer.slice(0, -1) : buffer
  // most servers end lines with \n alone: skip the replace then (it showed in profiles)
  const text = whole.includes('\r') ? whole.replace(/\r\n?/g, '\n') : whole
  let start = 0
  for (let end = text.indexOf('\n\n'); end !== -1; end = text.indexOf('\n\n', start)) {
    const event = parse(text.slice(start, end))
    start = end + 2
    if (event) events.push(event)
  }
  return text.slice(start) + held
}

function parse(block: string): ServerSentEvent | null {
  let event: string | null = null
  const data: string[] = []
  for (const line of block.split('\n')) {
    if (line === '' || line.startsWith(':')) continue
    const colon = line.indexOf(':')
    const field = colon === -1 ? line : line.slice(0, colon)
    const value = colon === -1 ? '' : line.slice(line[colon + 1] === ' ' ? colon + 2 : colon + 1)
    if (field === 'data') data.push(value)
    else if (field === 'event') event = value
  }
  return data.length > 0 || event !== null ? { event, data: data.join('\n') } : null
}
