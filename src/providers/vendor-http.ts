import type { Readable } from 'node:stream'
import type { ToolCallDelta } from './model-client.js'
import { type ServerSentEvent, type STREAM_END, textDeltas } from './sse.js'

type Undici = typeof import('undici')
let undici: Undici | null = null

/** Node bodies of the responses `vendorFetch` made, for `responseBody`. */
const nodeBodies = new WeakMap<Response, Readable>()

/** Statuses whose response has no body, which `new Response` refuses one for. */
const NULL_BODY = new Set([101, 103, 204, 205, 304])

/**
 * The `fetch` the vendor SDKs are given: undici's `request` (Node's own HTTP client, from the
 * npm package) behind the fetch signature. The platform fetch pipes every network read through
 * web streams, which costs about half again as much per read (measured: 40 000 reads of an SSE
 * body, 1 160 ms of CPU through fetch, 730 through `request`), and a streamed answer is one read
 * per token. The SDK still gets a standard `Response`: its body reads the same Node stream on
 * demand, for the SDK's own error handling; `responseBody` hands the Node stream to our reader.
 * What this does not carry (a request body other than text or bytes) goes to the platform fetch.
 */
export async function vendorFetch(input: string | URL | Request, init: RequestInit = {}): Promise<Response> {
  const { body, signal } = init
  if (input instanceof Request || (body != null && typeof body !== 'string' && !(body instanceof Uint8Array))) {
    return fetch(input, init)
  }
  undici ??= await import('undici')
  const response = await undici.request(input, {
    method: (init.method ?? 'GET') as 'GET',
    headers: Object.fromEntries(new Headers(init.headers)),
    body: body ?? null,
    signal: signal ?? undefined,
  })
  const headers = new Headers()
  for (const [name, value] of Object.entries(response.headers)) {
    for (const one of Array.isArray(value) ? value : [value ?? '']) headers.append(name, one)
  }
  if (NULL_BODY.has(response.statusCode)) {
    response.body.destroy()
    return new Response(null, { status: response.statusCode, headers })
  }
  const result = new Response(lazyWebStream(response.body), { status: response.statusCode, headers })
  nodeBodies.set(result, response.body)
  return result
}

/** A response's body as bytes: the Node stream when `vendorFetch` made it, else the web stream. */
function responseBody(response: Response): ReadableStream<Uint8Array> | AsyncIterable<Uint8Array> | null {
  return nodeBodies.get(response) ?? response.body
}

/** A web stream that reads `body` only when it is read itself (high-water mark 0), so a reader of the Node stream has it alone. */
function lazyWebStream(body: Readable): ReadableStream<Uint8Array> {
  let chunks: AsyncIterator<Uint8Array> | null = null
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        chunks ??= body[Symbol.asyncIterator]()
        const { done, value } = await chunks.next()
        if (done) controller.close()
        else controller.enqueue(value)
      },
      cancel() {
        body.destroy()
      },
    },
    { highWaterMark: 0 },
  )
}

/** How a client reads its vendor's answer: event by event, or whole. */
export interface AnswerReader {
  /** One event of the stream: its answer text, null, or the stream's end; throws the stream's own error. */
  read(event: ServerSentEvent): string | null | typeof STREAM_END
  /** A whole answer in one JSON document: its text. */
  readWhole(body: unknown): string
  /** The tool-call fragments read since the last call. */
  readonly toolCalls: ToolCallFragments
}

// what most reads drain: no tool call (one shared array, as this is asked once per network read)
const NONE: readonly ToolCallDelta[] = []

/**
 * The tool-call fragments of an answer as they are read, merged per call until they are
 * drained (once per network read), so arguments stream like text: one event per read and call.
 */
export class ToolCallFragments {
  private pending = new Map<number, ToolCallDelta>()

  add(index: number, vendorId: string | null, name: string | null, args: string): void {
    const known = this.pending.get(index)
    if (!known) this.pending.set(index, { type: 'tool_call', index, vendorId, name, arguments: args })
    else known.arguments += args
  }

  drain(): readonly ToolCallDelta[] {
    if (this.pending.size === 0) return NONE
    const drained = [...this.pending.values()]
    this.pending = new Map()
    return drained
  }
}

/**
 * The answer text of a response to a streaming request, as the model client yields it: its
 * events through `textDeltas`, or, from a server that ignored `stream: true` and sent one JSON
 * document (some proxies and compatible servers do), the whole answer as one delta.
 */
export async function* answerDeltas(
  response: Response,
  reader: AnswerReader,
): AsyncGenerator<{ type: 'delta'; text: string; deltas: number } | ToolCallDelta> {
  if (/^application\/json\b/i.test(response.headers.get('content-type') ?? '')) {
    const text = reader.readWhole(await response.json())
    if (text) yield { type: 'delta', text, deltas: 1 }
    yield* reader.toolCalls.drain()
    return
  }
  const body = responseBody(response)
  if (!body) throw new Error('the response has no body')
  yield* textDeltas(
    body,
    (event) => reader.read(event),
    () => reader.toolCalls.drain(),
  )
}
