import { GenerationError, ToolResultRejectedError } from '../domain/errors.js'
import type { ToolCallDecision } from '../domain/events.js'
import {
  awaitingApproval,
  callsToMake,
  decidedWith,
  pendingCalls,
  type RoundCall,
  type ToolResult,
  type ToolRound,
} from '../domain/tool-rounds.js'
import { approvalRequired } from '../domain/tool-servers.js'
import { parsedArguments, type ToolCall, type Tooling } from '../domain/tools.js'
import type { ToolServerClients } from '../providers/tool-server-clients.js'
import type { RunRecorder } from './run-recorder.js'

/** One decision as a client gives it. */
export interface SubmittedDecision {
  callId: string
  approve: boolean
  reason: string | null
}

/** A call as its round records it: an MCP server's tool names its server and whether it waits for an approval. */
export function roundCallOf(call: ToolCall, argumentErrors: string[], tooling: Tooling): RoundCall {
  const label = tooling.tools.find((t) => t.name === call.name)?.server
  const server = label === undefined ? undefined : tooling.mcpServers.find((s) => s.label === label)
  if (!server) return { ...call, argumentErrors }
  return { ...call, argumentErrors, server: server.label, approvalRequired: approvalRequired(server.requireApproval, call.name) }
}

/** The run's candidates with the tools of their MCP servers (as each server lists them now) among their tools. */
export async function withServerTools<
  R extends { candidates: { tooling: Tooling | null }[]; parallel: { tooling: Tooling | null }[][] | null },
>(resolution: R, clients: ToolServerClients, signal: AbortSignal): Promise<R> {
  const offer = async <C extends { tooling: Tooling | null }>(candidate: C): Promise<C> => {
    const { tooling } = candidate
    if (!tooling || tooling.mcpServers.length === 0) return candidate
    const listed = await Promise.all(
      tooling.mcpServers.map((server) =>
        clients.tools(server, signal).catch((error: Error) => {
          signal.throwIfAborted()
          throw new GenerationError(`MCP server '${server.label}' did not list its tools: ${error.message}`)
        }),
      ),
    )
    const tools = [...tooling.tools]
    for (const tool of listed.flat()) {
      const other = tools.find((t) => t.name === tool.name)
      if (other)
        throw new GenerationError(
          `tool '${tool.name}' of MCP server '${tool.server}' has the name of ${other.server ? `one of '${other.server}'` : 'a declared function'}`,
        )
      tools.push(tool)
    }
    const choice = tooling.toolChoice
    if (typeof choice === 'object' && !tools.some((t) => t.name === choice.name)) {
      throw new GenerationError(`toolChoice names tool '${choice.name}', which no function or MCP server offers`)
    }
    return { ...candidate, tooling: { ...tooling, tools } }
  }
  const candidates = await Promise.all(resolution.candidates.map(offer))
  const parallel = resolution.parallel && (await Promise.all(resolution.parallel.map((chain) => Promise.all(chain.map(offer)))))
  return { ...resolution, candidates, parallel }
}

const now = () => new Date().toISOString()

/** The round with `change` applied to the calls `ids` names and `results` added. */
function amended(round: ToolRound, ids: Set<string>, change: (call: RoundCall) => RoundCall, results: ToolResult[] = []): ToolRound {
  return { ...round, calls: round.calls.map((c) => (ids.has(c.callId) ? change(c) : c)), results: [...round.results, ...results] }
}

/**
 * The calls of a run's rounds that promptline makes itself, on MCP servers: each is marked begun
 * (durably) before it is made, so a call a crash cut is answered as cut and never made twice;
 * its result, with its server and duration, is written before the run goes on. Approvals and
 * declines are written here too: a declined call is answered to the model as an error and never made.
 */
export class ServerCalls {
  /** Calls begun by this process: any other begun call without a result was cut by a restart. */
  private readonly begunHere = new Set<string>()

  constructor(
    private readonly recorder: RunRecorder,
    private readonly clients: ToolServerClients,
  ) {}

  /** Answers the calls a restart cut, then makes every call that may be made now, in parallel. */
  async makeReady(round: () => ToolRound, tooling: Tooling, signal: AbortSignal): Promise<void> {
    const cut = pendingCalls(round()).filter((c) => c.startedAt !== undefined && !this.begunHere.has(c.callId))
    for (const call of cut) {
      const output = 'promptline restarted while this call was being made: its outcome is unknown, and it was not made again'
      await this.answer(round, call, { output, isError: true }, null)
    }
    const calls = callsToMake(round())
    if (calls.length === 0) return
    const ids = new Set(calls.map((c) => c.callId))
    for (const id of ids) this.begunHere.add(id)
    const at = now()
    await this.recorder.recordResults((rounds) =>
      rounds.map((r) => (r === round() ? amended(r, ids, (c) => ({ ...c, startedAt: at })) : r)),
    )
    await Promise.all(calls.map((call) => this.make(round, call, tooling, signal)))
  }

  private async make(round: () => ToolRound, call: RoundCall, tooling: Tooling, signal: AbortSignal): Promise<void> {
    const server = tooling.mcpServers.find((s) => s.label === call.server)
    const started = performance.now()
    let result = { output: `the run no longer declares MCP server '${call.server}'`, isError: true }
    if (call.argumentErrors.length > 0) result = { output: `not called: ${call.argumentErrors.join('; ')}`, isError: true }
    else if (server)
      result = await this.clients.call(server, call.name, parsedArguments(call.arguments), { signal, timeoutMs: tooling.toolTimeoutMs })
    await this.answer(round, call, result, Math.round(performance.now() - started))
  }

  private async answer(round: () => ToolRound, call: RoundCall, result: { output: string; isError: boolean }, durationMs: number | null) {
    const answer: ToolResult = { callId: call.callId, ...result, idempotencyKey: null, at: now(), server: call.server! }
    if (durationMs !== null) answer.durationMs = durationMs
    await this.recorder.recordResults((rounds) => rounds.map((r) => (r === round() ? { ...r, results: [...r.results, answer] } : r)))
    const index = this.recorder.run.toolRounds.length - 1
    this.recorder.publish({ type: 'TOOL_CALL_RESULT', round: index, callId: call.callId, server: call.server!, ...result, durationMs })
  }

  /**
   * Approves or declines calls of the waiting round, all or none, written in turn with the run's
   * other writes; a repeat (same key) takes nothing. Resolves to whether it changed the round.
   */
  async decide(round: () => ToolRound | null, decisions: SubmittedDecision[], idempotencyKey: string | null, keyId: string | null) {
    const at = now()
    let declined: ToolResult[] = []
    const taken = await this.recorder.recordResults((rounds) => {
      if (decidedWith(rounds, idempotencyKey)) return null
      const waiting = round()
      if (!waiting) throw new ToolResultRejectedError('the run is not waiting for tool calls', 'NOT_WAITING')
      rejectBadDecisions(waiting, decisions)
      const byId = new Map(decisions.map((d) => [d.callId, d]))
      declined = decisions
        .filter((d) => !d.approve)
        .map((d) => ({
          callId: d.callId,
          output: `the call was declined${d.reason ? `: ${d.reason}` : ''}; it was not made`,
          isError: true,
          idempotencyKey,
          at,
          server: waiting.calls.find((c) => c.callId === d.callId)!.server!,
        }))
      const decided = (c: RoundCall): RoundCall => {
        const { approve, reason } = byId.get(c.callId)!
        return { ...c, decision: { approve, reason, keyId, idempotencyKey, at } }
      }
      return rounds.map((r) => (r === waiting ? amended(r, new Set(byId.keys()), decided, declined) : r))
    })
    if (taken) {
      const round = this.recorder.run.toolRounds.length - 1
      const published: ToolCallDecision[] = decisions.map(({ callId, approve, reason }) => ({ callId, approve, reason, keyId }))
      this.recorder.publish({ type: 'TOOL_CALLS_DECIDED', round, decisions: published })
      for (const { callId, server, output, isError } of declined) {
        this.recorder.publish({ type: 'TOOL_CALL_RESULT', round, callId, server: server!, output, isError, durationMs: null })
      }
    }
    return taken
  }
}

function rejectBadDecisions(round: ToolRound, decisions: SubmittedDecision[]): void {
  if (decisions.length === 0) throw new ToolResultRejectedError('decisions: give at least one decision', 'INVALID')
  const ids = decisions.map((d) => d.callId)
  const twice = ids.find((id, i) => ids.indexOf(id) !== i)
  if (twice) throw new ToolResultRejectedError(`call '${twice}' has two decisions in this request`, 'INVALID')
  const awaiting = new Set(awaitingApproval(round).map((c) => c.callId))
  for (const id of ids) {
    if (awaiting.has(id)) continue
    const call = round.calls.find((c) => c.callId === id)
    if (!call) throw new ToolResultRejectedError(`the run is waiting for no call '${id}'`, 'UNKNOWN_CALL')
    if (call.decision) throw new ToolResultRejectedError(`call '${id}' was already decided`, 'ALREADY_ANSWERED')
    throw new ToolResultRejectedError(`call '${id}' waits for no approval`, 'NO_APPROVAL_NEEDED')
  }
}
