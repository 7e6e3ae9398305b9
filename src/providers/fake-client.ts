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
 * The tools the fake calls for the last user message: with REQUIRED the first tool, with a
 * named choice that one, with AUTO each tool the message names; none once results came back.
 */
function toolsToCall(request: GenerateRequest, lastUser: string): string[] {
  const { tooling } = request
  if (!tooling || tooling.toolChoice === 'NONE' || request.messages.at(-1)?.role === 'tool') return []
  const { toolChoice, tools } = tooling
  if (typeof toolChoice === 'object') return [toolChoice.name]
  if (toolChoice === 'REQUIRED') return [tools[0]!.name]
  return tools.filter((t) => new RegExp(`\\b${t.name}\\b`).test(lastUser)).map((t) => t.name)
}

/** A call streamed as the vendors do: its name first, then its arguments in pieces. */
function* toolCallEvents(names: string[], args: string): Generator<GenerateEvent> {
  for (const [index, name] of names.entries()) {
    yield { type: 'tool_call', index, vendorId: `fake_call_${index + 1}`, name, arguments: '' }
    for (let at = 0; at < args.length; at += 8)
      yield { type: 'tool_call', index, vendorId: null, name: null, arguments: args.slice(at, at + 8) }
  }
}

/**
 * The built-in backend: model `echo` streams the last user message back token by token
 * (the tokens join to exactly the message). Extra params: `tokenDelayMs` (delay before each
 * token) and `repeat` (stream the message that many times). Usage counts words. Given tools,
 * it calls those the message names (or as toolChoice says), with `extra.toolArguments` (default
 * `{}`) as arguments; given their results, it echoes them, one per line.
 */
export class FakeModelClient implements ModelClient {
  async *generate(request: GenerateRequest, signal: AbortSignal): AsyncIterable<GenerateEvent> {
    if (request.model !== 'echo') throw new GenerationError(`fake backend has no model '${request.model}' (it has: echo)`)
    const delay = positiveInt(request.settings.extra.tokenDelayMs, 'tokenDelayMs', 60_000) ?? 0
    const repeat = positiveInt(request.settings.extra.repeat, 'repeat', 10_000) ?? 1
    const lastUser = request.messages.findLast((m) => m.role === 'user')?.content ?? ''
    const inputTokens = request.messages.reduce((n, m) => n + countWords(m.content), 0)
    const calls = toolsToCall(request, lastUser)
    if (calls.length > 0) {
      yield* toolCallEvents(calls, JSON.stringify(request.settings.extra.toolArguments ?? {}))
      const finish = { reason: 'TOOL_CALLS', vendorReason: 'tool_calls', refusal: null } as const
      yield { type: 'end', usage: usageOf({ inputTokens, outputTokens: calls.length }), finish, reasoning: null }
      return
    }
    const results = request.messages.slice(request.messages.findLastIndex((m) => m.role !== 'tool') + 1)
    const answer = results.length > 0 ? results.map((m) => m.content).join('\n') : lastUser
    const tokens = answer.match(TOKEN) ?? []
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
    yield {
      type: 'end',
      usage: usageOf({ inputTokens, outputTokens: emitted }),
      finish: { reason: 'STOP', vendorReason: 'stop', refusal: null },
      reasoning: null,
    }
  }
}
