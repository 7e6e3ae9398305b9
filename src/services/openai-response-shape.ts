import { NotFoundError } from '../domain/errors.js'
import type { SessionEvent } from '../domain/events.js'
import type { RunRecord } from '../domain/records.js'
import type { ToolCall } from '../domain/tools.js'
import { failureOf } from './openai-chat-chunks.js'
import { usageOfRun } from './openai-shapes.js'

/**
 * What a response id names: a queue entry's run, from its start (segment 0) or from its n-th
 * round of tool results on (segment n), up to its next tool calls or its end.
 */
export interface ResponseRef {
  queueId: string
  segment: number
}

const responseIdOf = (ref: ResponseRef) => (ref.segment === 0 ? `resp_${ref.queueId}` : `resp_${ref.queueId}_${ref.segment}`)

export function parseResponseId(id: string): ResponseRef {
  const parsed = /^resp_([A-Za-z0-9-]{1,128}?)(?:_(\d{1,4}))?$/.exec(id)
  if (!parsed) throw new NotFoundError('response', id)
  return { queueId: parsed[1]!, segment: Number(parsed[2] ?? 0) }
}

/** A segment's message item: `msg_<runId>_<segment>`. */
const messageIdOf = (runId: string, segment: number) => `msg_${runId}_${segment}`

/** The text of the message item `id` names, from its run (`find`); null when it names none. */
export async function referencedText(id: string, find: (runId: string) => Promise<RunRecord | null>): Promise<string | null> {
  const parsed = /^msg_([0-9a-f-]{36})_(\d{1,4})$/.exec(id)
  if (!parsed) return null
  const run = await find(parsed[1]!)
  const segment = Number(parsed[2])
  if (!run || segment > run.toolRounds.length) return null
  return (segment < run.toolRounds.length ? run.toolRounds[segment]!.text : run.output) || null
}

const messageItem = (id: string, text: string, status: 'in_progress' | 'completed') => ({
  type: 'message',
  id,
  status,
  role: 'assistant',
  content: status === 'completed' ? [{ type: 'output_text', text, annotations: [], logprobs: [] }] : [],
})

const callItem = (call: ToolCall, status: 'in_progress' | 'completed') => ({
  type: 'function_call',
  id: `fc_${call.callId}`,
  call_id: call.callId,
  name: call.name,
  arguments: call.arguments,
  status,
})

function usageOf(run: RunRecord) {
  const usage = usageOfRun(run)
  return {
    input_tokens: usage.inputTokens,
    input_tokens_details: { cached_tokens: usage.cacheReadTokens },
    output_tokens: usage.outputTokens,
    output_tokens_details: { reasoning_tokens: usage.reasoningTokens },
    total_tokens: usage.inputTokens + usage.outputTokens,
    // what the run cost so far in USD, as OpenRouter reports it (null: unpriced)
    cost: run.costUsd,
  }
}

/** Where the segment's run is, as a response's status, output and the reason it ended short. */
function outcomeOf(ref: ResponseRef, run: RunRecord) {
  const messageId = messageIdOf(run.id, ref.segment)
  const round = run.toolRounds[ref.segment]
  // the segment ended asking for tool results: its response is complete
  if (round) {
    const said = round.text ? [messageItem(messageId, round.text, 'completed')] : []
    return { status: 'completed', output: [...said, ...round.calls.map((c) => callItem(c, 'completed'))] }
  }
  const output = run.output ? [messageItem(messageId, run.output, 'completed')] : []
  const failure = failureOf(run)
  if (failure) return { status: 'failed', output, error: failure }
  if (run.status === 'COMPLETED') {
    const reason =
      run.finishReason === 'LENGTH'
        ? 'max_output_tokens'
        : run.finishReason === 'CONTENT_FILTER' || run.finishReason === 'REFUSAL'
          ? 'content_filter'
          : null
    return reason ? { status: 'incomplete', output, incomplete_details: { reason } } : { status: 'completed', output }
  }
  if (run.status === 'ABORTED') return { status: 'cancelled', output }
  return { status: 'in_progress', output: [] }
}

/** The response object: a queued entry's (no run yet), or its run's segment as it is now. */
export function responseOf(ref: ResponseRef, run: RunRecord | null, createdAt = Date.now()) {
  const base = {
    id: responseIdOf(ref),
    object: 'response',
    created_at: Math.floor((run ? Date.parse(run.startedAt) : createdAt) / 1000),
    model: run ? (run.promptId ? `prompt:${run.promptId}` : (run.profileId ?? '')) : '',
    error: null,
    incomplete_details: null,
    instructions: null,
    metadata: {},
    parallel_tool_calls: true,
    tool_choice: 'auto',
    tools: [],
    text: { format: { type: 'text' } },
    store: true,
  }
  if (!run) return { ...base, status: 'queued', output: [], usage: null }
  return { ...base, ...outcomeOf(ref, run), usage: usageOf(run) }
}

type StreamEvent = { type: string } & Record<string, unknown>

export interface StreamOptions {
  /** Reads the run once it waits for tool results. */
  now: () => Promise<RunRecord | null>
  /** The events up to this number are left out. */
  startingAfter: number
  /** The text comes whole at the end, as the run kept it (validated against its output contract). */
  holdText: boolean
}

/**
 * A run's events as the response stream of one segment, numbered from 0: the same events give the
 * same numbers, so a stream read again from the session's log resumes after `startingAfter` exactly.
 */
export async function* responseStream(
  events: AsyncIterator<SessionEvent>,
  ref: ResponseRef,
  run: RunRecord,
  options: StreamOptions,
): AsyncGenerator<StreamEvent> {
  const { now, startingAfter } = options
  let sequence = 0
  const numbered = function* (batch: StreamEvent[]) {
    for (const event of batch) {
      const number = sequence++
      if (number > startingAfter) yield { ...event, sequence_number: number }
    }
  }
  const start = { ...responseOf(ref, run), status: 'in_progress', output: [], usage: null }
  yield* numbered([
    { type: 'response.created', response: { ...start } },
    { type: 'response.in_progress', response: start },
  ])
  const items = new SegmentItems(messageIdOf(run.id, ref.segment), options.holdText)
  let segment = 0
  try {
    for (let next = await events.next(); !next.done; next = await events.next()) {
      const event = next.value
      const ends = event.type === 'RUN_FINISHED' || event.type === 'TOOL_CALLS_REQUESTED'
      if (segment < ref.segment) {
        if (event.type === 'TOOL_CALLS_REQUESTED') segment++
        if (event.type === 'RUN_FINISHED') return
        continue
      }
      yield* numbered(items.of(event))
      if (!ends) continue
      const ended = event.type === 'RUN_FINISHED' ? event.run : ((await now()) ?? run)
      const response = responseOf(ref, ended)
      const kind = response.status === 'completed' ? 'completed' : response.status === 'incomplete' ? 'incomplete' : 'failed'
      yield* numbered([{ type: `response.${kind}`, response }])
      return
    }
  } finally {
    await events.return?.()
  }
}

/** The output items of a segment as its events build them: its text, then its calls. */
class SegmentItems {
  private text: { index: number; text: string } | null = null
  private readonly calls = new Map<string, { index: number; call: ToolCall }>()
  private count = 0

  constructor(
    private readonly messageId: string,
    private readonly holdText: boolean,
  ) {}

  of(event: SessionEvent): StreamEvent[] {
    if (event.type === 'TOKEN_DELTA') return this.holdText ? [] : this.delta(event.text)
    if (event.type === 'RUN_FINISHED' && this.holdText && event.run.output) {
      return [...this.delta(event.run.output), ...this.closeText(), ...this.closeCalls()]
    }
    if (event.type === 'TOOL_CALL_STARTED') {
      const call = { callId: event.callId, name: event.name, arguments: '' }
      const index = this.count++
      this.calls.set(event.callId, { index, call })
      return [...this.closeText(), { type: 'response.output_item.added', output_index: index, item: callItem(call, 'in_progress') }]
    }
    if (event.type === 'TOOL_CALL_DELTA') {
      const open = this.calls.get(event.callId)
      if (!open) return []
      open.call.arguments += event.argumentsDelta
      const item_id = `fc_${event.callId}`
      return [{ type: 'response.function_call_arguments.delta', item_id, output_index: open.index, delta: event.argumentsDelta }]
    }
    if (event.type === 'TOOL_CALLS_REQUESTED' || event.type === 'RUN_FINISHED') return [...this.closeText(), ...this.closeCalls()]
    return []
  }

  private delta(delta: string): StreamEvent[] {
    const opening: StreamEvent[] = []
    if (!this.text) {
      this.text = { index: this.count++, text: '' }
      const at = { item_id: this.messageId, output_index: this.text.index }
      opening.push(
        { type: 'response.output_item.added', output_index: at.output_index, item: messageItem(this.messageId, '', 'in_progress') },
        { type: 'response.content_part.added', ...at, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } },
      )
    }
    this.text.text += delta
    return [
      ...opening,
      { type: 'response.output_text.delta', item_id: this.messageId, output_index: this.text.index, content_index: 0, delta, logprobs: [] },
    ]
  }

  private closeText(): StreamEvent[] {
    if (!this.text) return []
    const { index, text } = this.text
    this.text = null
    const at = { item_id: this.messageId, output_index: index, content_index: 0 }
    return [
      { type: 'response.output_text.done', ...at, text, logprobs: [] },
      { type: 'response.content_part.done', ...at, part: { type: 'output_text', text, annotations: [] } },
      { type: 'response.output_item.done', output_index: index, item: messageItem(this.messageId, text, 'completed') },
    ]
  }

  private closeCalls(): StreamEvent[] {
    const done = [...this.calls.values()].flatMap(({ index, call }) => [
      {
        type: 'response.function_call_arguments.done',
        item_id: `fc_${call.callId}`,
        output_index: index,
        name: call.name,
        arguments: call.arguments,
      },
      { type: 'response.output_item.done', output_index: index, item: callItem(call, 'completed') },
    ])
    this.calls.clear()
    return done
  }
}
