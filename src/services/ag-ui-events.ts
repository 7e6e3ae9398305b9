import { type BaseEvent, EventType } from '@ag-ui/core'
import type { SessionEvent } from '../domain/events.js'
import type { RunRecord } from '../domain/records.js'
import { handsOver, type RoundCall } from '../domain/tool-rounds.js'

/**
 * An AG-UI event with its SSE `id:` (`<sequence>-<index>`: the session event it came from and its
 * place among the AG-UI events that one made, so ids are unique and increase); null for what a
 * stream repeats or frames itself.
 */
export interface SequencedEvent {
  id: string | null
  event: BaseEvent
}

/** The AG-UI run a stream answers. */
export interface AgUiRun {
  threadId: string
  runId: string
}

/** The last event a reconnecting client has: every AG-UI event up to `index` of session event `sequence`. */
export interface EventCursor {
  sequence: number
  index: number
}

/** Where a stream begins: after the run's first `rounds` tool rounds, and after `cursor` when a client reconnects. */
export interface StreamStart {
  rounds: number
  cursor: EventCursor | null
}

/** The text message and tool calls a segment has open, as its events build them. */
class SegmentState {
  private text: string | null = null
  private readonly calls = new Set<string>()
  private segment = 0

  constructor(private readonly runId: string) {}

  /** A promptline event as AG-UI events (which it also records as open or closed). */
  of(event: SessionEvent): BaseEvent[] {
    if (event.type === 'TOKEN_DELTA') {
      if (event.text === '') return []
      const opening = this.text ? [] : [this.openText()]
      return [...opening, { type: EventType.TEXT_MESSAGE_CONTENT, messageId: this.text!, delta: event.text } as BaseEvent]
    }
    if (event.type === 'TOOL_CALL_STARTED') {
      const closing = this.closeText()
      this.calls.add(event.callId)
      return [...closing, { type: EventType.TOOL_CALL_START, toolCallId: event.callId, toolCallName: event.name } as BaseEvent]
    }
    if (event.type === 'TOOL_CALL_DELTA' && event.argumentsDelta !== '') {
      return [{ type: EventType.TOOL_CALL_ARGS, toolCallId: event.callId, delta: event.argumentsDelta } as BaseEvent]
    }
    if (event.type === 'TOOL_CALL_RESULT') {
      const { callId, output } = event
      return [
        { type: EventType.TOOL_CALL_RESULT, messageId: `result_${callId}`, toolCallId: callId, content: output, role: 'tool' } as BaseEvent,
      ]
    }
    if (event.type === 'TOOL_CALLS_REQUESTED' || event.type === 'RUN_FINISHED') {
      const closing = [
        ...this.closeText(),
        ...[...this.calls].map((id) => ({ type: EventType.TOOL_CALL_END, toolCallId: id }) as BaseEvent),
      ]
      this.calls.clear()
      this.segment++
      return closing
    }
    return []
  }

  private openText(): BaseEvent {
    this.text = `msg_${this.runId}_${this.segment}`
    return { type: EventType.TEXT_MESSAGE_START, messageId: this.text, role: 'assistant' } as BaseEvent
  }

  private closeText(): BaseEvent[] {
    if (!this.text) return []
    const messageId = this.text
    this.text = null
    return [{ type: EventType.TEXT_MESSAGE_END, messageId } as BaseEvent]
  }
}

/** The key of what an AG-UI event opens or closes: a text message or a tool call. */
const framedBy = (event: BaseEvent) => {
  const e = event as BaseEvent & { messageId?: string; toolCallId?: string }
  if (event.type === EventType.TEXT_MESSAGE_START || event.type === EventType.TEXT_MESSAGE_END)
    return { key: e.messageId!, opens: event.type === EventType.TEXT_MESSAGE_START }
  if (event.type === EventType.TOOL_CALL_START || event.type === EventType.TOOL_CALL_END)
    return { key: e.toolCallId!, opens: event.type === EventType.TOOL_CALL_START }
  return null
}

/**
 * What is open in one HTTP stream: a stream that joins mid-run opens again what its client saw
 * opened before the cut, so each stream is well formed on its own (AG-UI clients verify it).
 */
class Reopening {
  private readonly open = new Map<string, { opener: BaseEvent; sent: boolean }>()

  /** An event the client already has (before its cursor). */
  skip(event: BaseEvent): void {
    this.track(event, false)
  }

  /** The openers to send before `event`, which it then records as sent. */
  before(event: BaseEvent): BaseEvent[] {
    const again: BaseEvent[] = []
    for (const entry of this.open.values()) {
      if (entry.sent) continue
      entry.sent = true
      again.push(entry.opener)
    }
    this.track(event, true)
    return again
  }

  private track(event: BaseEvent, sent: boolean): void {
    const framed = framedBy(event)
    if (framed?.opens) this.open.set(framed.key, { opener: event, sent })
    else if (framed) this.open.delete(framed.key)
  }
}

/** An MCP call waiting for its approval, as the interrupt a `resume` entry answers (by the call's id). */
const approvalInterrupt = (call: RoundCall) => ({
  id: call.callId,
  reason: 'tool_approval',
  message: `approve calling ${call.name} on MCP server ${call.server}`,
  toolCallId: call.callId,
  responseSchema: { type: 'object', properties: { approve: { type: 'boolean' }, reason: { type: 'string' } } },
})

/**
 * How a segment ends: RUN_FINISHED (its outcome: the client tools' calls it waits for, or an
 * interrupt for each call awaiting approval) or RUN_ERROR.
 */
function ending(run: AgUiRun, event: SessionEvent & { type: 'TOOL_CALLS_REQUESTED' | 'RUN_FINISHED' }): BaseEvent {
  if (event.type === 'TOOL_CALLS_REQUESTED') {
    const approvals = event.calls.filter((c) => c.approvalRequired === true)
    const outcome =
      approvals.length > 0
        ? { type: 'interrupt', interrupts: approvals.map(approvalInterrupt) }
        : { type: 'success', pendingToolCallIds: event.calls.filter((c) => c.server === undefined).map((c) => c.callId) }
    return { type: EventType.RUN_FINISHED, ...run, outcome } as BaseEvent
  }
  const ended: RunRecord = event.run
  if (ended.status === 'FAILED')
    return { type: EventType.RUN_ERROR, message: ended.errorMessage ?? 'the run failed', code: ended.errorCode ?? 'INTERNAL' } as BaseEvent
  const outcome = ended.status === 'ABORTED' ? { type: 'cancelled' } : { type: 'success' }
  return { type: EventType.RUN_FINISHED, ...run, outcome, result: ended.output } as BaseEvent
}

/** Whether the AG-UI event `index` of session event `sequence` is one the client already has. */
const hasIt = (cursor: EventCursor | null, sequence: number, index: number) =>
  cursor !== null && (sequence < cursor.sequence || (sequence === cursor.sequence && index <= cursor.index))

/**
 * A promptline run's events (from its start) as one AG-UI run: RUN_STARTED, then the text and tool
 * calls of the first segment after `from.rounds` rounds that ends after `from.cursor`, then
 * RUN_FINISHED or RUN_ERROR. Events the client has are left out, but what they left open is
 * opened again (without an id), so the stream stays well formed.
 */
export async function* agUiStream(
  events: AsyncIterator<SessionEvent>,
  run: AgUiRun,
  runId: string,
  from: StreamStart,
): AsyncGenerator<SequencedEvent> {
  const state = new SegmentState(runId)
  const reopening = new Reopening()
  let rounds = 0
  try {
    // the promptline run it streams, for clients that read it through GraphQL
    yield { id: null, event: { type: EventType.RUN_STARTED, ...run, metadata: { promptlineRunId: runId } } as BaseEvent }
    for (let next = await events.next(); !next.done; next = await events.next()) {
      const event = next.value
      const earlier = rounds < from.rounds
      // a round promptline answers itself (MCP calls needing no approval) goes on in the same stream
      const ends = (event.type === 'TOOL_CALLS_REQUESTED' && handsOver(event.calls)) || event.type === 'RUN_FINISHED'
      const out = state.of(event)
      if (ends) out.push(ending(run, event))
      if (event.type === 'TOOL_CALLS_REQUESTED') rounds++
      let sent = false
      for (const [index, agUi] of out.entries()) {
        if (earlier || hasIt(from.cursor, event.sequence, index)) {
          reopening.skip(agUi)
          continue
        }
        for (const opener of reopening.before(agUi)) yield { id: null, event: opener }
        yield { id: `${event.sequence}-${index}`, event: agUi }
        sent = true
      }
      if (event.type === 'RUN_FINISHED' || (ends && sent)) return
    }
  } finally {
    await events.return?.()
  }
}
