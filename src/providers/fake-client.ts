import { GenerationError } from '../domain/errors.js'
import { usageOf } from '../domain/records.js'
import { sleep } from '../domain/sleep.js'
import type { GenerateEvent, GenerateRequest, ModelClient } from './model-client.js'

/** A word with its following whitespace (leading whitespace is a token of its own). */
const TOKEN = /^\s+|\S+\s*/g

/** Tokens streamed without a delay before the event loop gets a turn. */
const YIELD_EVERY = 256

const countWords = (text: string): number => text.split(/\s+/).filter(Boolean).length

function positiveInt(value: unknown, name: string, max: number): number | null {
  if (value === undefined || value === null) return null
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > max) {
    throw new GenerationError(`fake backend: extra.${name} must be an integer from 0 to ${max}`)
  }
  return value
}

/**
 * The built-in backend: model `echo` streams the last user message back token by token
 * (the tokens join to exactly the message). Extra params: `tokenDelayMs` (delay before each
 * token) and `repeat` (stream the message that many times). Usage counts words.
 */
export class FakeModelClient implements ModelClient {
  async *generate(request: GenerateRequest, signal: AbortSignal): AsyncIterable<GenerateEvent> {
    if (request.model !== 'echo') throw new GenerationError(`fake backend has no model '${request.model}' (it has: echo)`)
    const delay = positiveInt(request.settings.extra.tokenDelayMs, 'tokenDelayMs', 60_000) ?? 0
    const repeat = positiveInt(request.settings.extra.repeat, 'repeat', 10_000) ?? 1
    const lastUser = request.messages.findLast((m) => m.role === 'user')?.content ?? ''
    const tokens = lastUser.match(TOKEN) ?? []
    let emitted = 0
    for (let r = 0; r < repeat; r++) {
      for (const text of tokens) {
        if (delay > 0) await sleep(delay, signal)
        // a real stream arrives from a socket; without a delay, give other work its turn now and then
        else if (emitted % YIELD_EVERY === YIELD_EVERY - 1) await new Promise<void>((resolve) => setImmediate(resolve))
        if (signal.aborted) throw signal.reason
        emitted++
        yield { type: 'delta', text, deltas: 1 }
      }
    }
    const inputTokens = request.messages.reduce((n, m) => n + countWords(m.content), 0)
    yield {
      type: 'end',
      usage: usageOf({ inputTokens, outputTokens: emitted }),
      finish: { reason: 'STOP', vendorReason: 'stop', refusal: null },
      reasoning: null,
    }
  }
}
