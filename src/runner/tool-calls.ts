import { ToolTimeoutError } from '../domain/errors.js'
import { normalisedCallId, type ToolCall } from '../domain/tools.js'
import type { ToolCallDelta } from '../providers/model-client.js'

/**
 * The tool calls of one model call, put together from their fragments: each gets its id (the
 * vendor's, normalised) when its first fragment arrives, so its events carry the id it keeps.
 */
export class ToolCallAssembler {
  private readonly byIndex = new Map<number, ToolCall>()
  private readonly taken = new Set<string>()

  /** Adds a fragment; says which call it belongs to and whether it is that call's first. */
  add(delta: ToolCallDelta): { call: ToolCall; started: boolean } {
    let call = this.byIndex.get(delta.index)
    const started = call === undefined
    if (!call) {
      call = { callId: normalisedCallId(delta.vendorId, this.taken), name: delta.name ?? '', arguments: '' }
      this.byIndex.set(delta.index, call)
    } else if (delta.name) call.name = delta.name
    call.arguments += delta.arguments
    return { call, started }
  }

  /** The calls in the order the model made them. */
  calls(): ToolCall[] {
    return [...this.byIndex.entries()].sort(([a], [b]) => a - b).map(([, call]) => ({ ...call }))
  }
}

/**
 * Where a run waits on a round: `wait` resolves once `ready` says so (every call answered, or an
 * MCP call may now be made), and rejects with the stop when the run is stopped, or with
 * TOOL_TIMEOUT at the round's deadline. Owns its timer.
 */
export class ToolResultsGate {
  private wake: (() => void) | null = null

  constructor(
    private readonly ready: () => boolean,
    private readonly deadline: string,
  ) {}

  /** Called after the round changed (results added, calls decided). */
  changed(): void {
    if (this.ready()) this.wake?.()
  }

  wait(signal: AbortSignal): Promise<void> {
    if (this.ready()) return Promise.resolve()
    return new Promise<void>((resolve, reject) => {
      const finish = (error?: unknown) => {
        clearTimeout(timer)
        signal.removeEventListener('abort', onAbort)
        this.wake = null
        if (error === undefined) resolve()
        else reject(error)
      }
      const onAbort = () => finish(signal.reason)
      const waited = Math.max(0, Date.parse(this.deadline) - Date.now())
      const timer = setTimeout(() => finish(new ToolTimeoutError('no result came for every tool call within the tool timeout')), waited)
      this.wake = () => finish()
      if (signal.aborted) onAbort()
      else signal.addEventListener('abort', onAbort, { once: true })
    })
  }
}
