import { type BaseEvent, EventType } from '@ag-ui/core'
import type { SessionEvent } from '../domain/events.js'
import type { RunRecord } from '../domain/records.js'
import { handsOver, type RoundCall } from '../domain/tool-rounds.js'

/** An AG-UI event with the session sequence it came from (its SSE `id:`); null for a stream's own framing. */
export interface SequencedEvent {
  id: number | null
  event: BaseEvent
}

/** The AG-UI run a stream answers. */
export interface AgUiRun {
  threadId: string
  runId: string
}

/** The text message and tool calls a segment has open, as its events build them. */
class SegmentState {
  text: { messageId: string; announced: boolean } | null = null
  readonly calls = new Map<string, { name: string; announced: boolean }>()
  private segment = 0

  constructor(private readonly runId: string) {}

  /** A promptline event as AG-UI events (which it also records as open or closed). */
  of(event: SessionEvent): BaseEvent[] {
    if (event.type === 'TOKEN_DELTA') {
      if (event.text === '') return []
      const opening = this.text ? [] : [this.openText()]
      return [...opening, { type: EventType.TEXT_MESSAGE_CONTENT, messageId: this.text!.messageId, delta: event.text } as BaseEvent]
    }
    if (event.type === 'TOOL_CALL_STARTED') {
      const closing = this.closeText()
      this.calls.set(event.callId, { name: event.name, announced: true })
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
        ...[...this.calls.keys()].map((id) => ({ type: EventType.TOOL_CALL_END, toolCallId: id }) as BaseEvent),
      ]
      this.calls.clear()
      this.segment++
      return closing
    }
    return []
  }

  /** The openers of what is open, for a stream that joins in the middle: they were sent before its cursor. */
  reannounce(): BaseEvent[] {
    const again: BaseEvent[] = []
    if (this.text && !this.text.announced) {
      this.text.announced = true
      again.push({ type: EventType.TEXT_MESSAGE_START, messageId: this.text.messageId, role: 'assistant' } as BaseEvent)
    }
    for (const [id, call] of this.calls) {
      if (call.announced) continue
      call.announced = true
      again.push({ type: EventType.TOOL_CALL_START, toolCallId: id, toolCallName: call.name } as BaseEvent)
    }
    return again
  }

  /** What was sent before the cursor counts as not sent in this stream. */
  forget(): void {
    if (this.text) this.text.announced = false
    for (const call of this.calls.values()) call.announced = false
  }

  private openText(): BaseEvent {
    this.text = { messageId: `msg_${this.runId}_${this.segment}`, announced: true }
    return { type: EventType.TEXT_MESSAGE_START, messageId: this.text.messageId, role: 'assistant' } as BaseEvent
  }

  private closeText(): BaseEvent[] {
    if (!this.text) return []
    const { messageId } = this.text
    this.text = null
    return [{ type: EventType.TEXT_MESSAGE_END, messageId } as BaseEvent]
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

/**
 * A promptline run's events (from its start) as one AG-UI run: RUN_STARTED, then the text and tool
 * calls of the first segment ending after `after`, then RUN_FINISHED or RUN_ERROR. Events from
 * session sequences up to `after` are left out (a client reconnecting with Last-Event-ID has them),
 * but what they left open is opened again, so the stream stays well formed.
 */
export async function* agUiStream(
  events: AsyncIterator<SessionEvent>,
  run: AgUiRun,
  runId: string,
  after: number,
): AsyncGenerator<SequencedEvent> {
  const state = new SegmentState(runId)
  try {
    // the promptline run it streams, for clients that read it through GraphQL
    yield { id: null, event: { type: EventType.RUN_STARTED, ...run, metadata: { promptlineRunId: runId } } as BaseEvent }
    for (let next = await events.next(); !next.done; next = await events.next()) {
      const event = next.value
      if (event.sequence <= after) {
        state.of(event)
        if (event.type === 'RUN_FINISHED') return
        state.forget()
        continue
      }
      for (const opener of state.reannounce()) yield { id: null, event: opener }
      for (const out of state.of(event)) yield { id: event.sequence, event: out }
      // a round promptline answers itself (MCP calls needing no approval) goes on in the same stream
      const ends = (event.type === 'TOOL_CALLS_REQUESTED' && handsOver(event.calls)) || event.type === 'RUN_FINISHED'
      if (ends) {
        yield { id: event.sequence, event: ending(run, event) }
        return
      }
    }
  } finally {
    await events.return?.()
  }
}
