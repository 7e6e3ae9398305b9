import { GenerationError, ToolResultRejectedError } from '../domain/errors.js'
import type { ChatMessage } from '../domain/records.js'
import { callsToMake, pendingCalls, submittedWith, type ToolRound } from '../domain/tool-rounds.js'
import { argumentErrors, type Tooling } from '../domain/tools.js'
import type { ToolServerClients } from '../providers/tool-server-clients.js'
import type { Answer } from './answer.js'
import type { RunRecorder } from './run-recorder.js'
import { roundCallOf, ServerCalls, type SubmittedDecision } from './server-calls.js'
import { ToolResultsGate } from './tool-calls.js'

/** One result as a client submits it. */
export interface SubmittedResult {
  callId: string
  output: string
  isError: boolean
}

/** What a round adds to the conversation: the assistant's calls, then each call's result, in call order. */
function roundMessages(round: ToolRound): ChatMessage[] {
  const toolCalls = round.calls.map(({ callId, name, arguments: args }) => ({ callId, name, arguments: args }))
  const call: ChatMessage = { role: 'assistant', content: round.text, toolCalls, reasoning: round.reasoning }
  const results = round.calls.flatMap((c) => {
    const result = round.results.find((r) => r.callId === c.callId)
    return result ? [{ role: 'tool' as const, content: result.output, toolCallId: c.callId, isError: result.isError }] : []
  })
  return [...round.preamble, call, ...results]
}

/**
 * A run's rounds of tool calls (kept on its record, so a restarted server picks them up): opening
 * a round when the model calls tools, waiting for its results without holding capacity, making
 * the calls of MCP servers' tools as they may be made, and taking results and approvals as
 * clients submit them — durably, before they are acknowledged.
 */
export class ToolRounds {
  private gate: ToolResultsGate | null = null
  /** Settles once the waiting round's results are all in and the run generates again (or stopped waiting). */
  private goingOn: Promise<void> | null = null
  private readonly serverCalls: ServerCalls
  /** What the rounds whose results came added to the conversation (for a resumed run, those before its waiting one). */
  readonly added: ChatMessage[]

  constructor(
    private readonly recorder: RunRecorder,
    clients: ToolServerClients,
  ) {
    this.serverCalls = new ServerCalls(recorder, clients)
    this.added = this.rounds.filter((r) => r !== this.waiting).flatMap(roundMessages)
  }

  private get rounds(): ToolRound[] {
    return this.recorder.run.toolRounds
  }

  /** The round waiting for results; null when none is. */
  get waiting(): ToolRound | null {
    const last = this.rounds.at(-1)
    return last && this.recorder.run.status === 'REQUIRES_ACTION' ? last : null
  }

  /** The model answered with calls: a new round, written and announced, that waits for its results. */
  async open(answer: Answer, of: Pick<ToolRound, 'preamble' | 'text' | 'usage' | 'attempt'>, tooling: Tooling): Promise<ToolRound> {
    if (this.rounds.length >= tooling.maxToolRounds) {
      throw new GenerationError(`the model asked for more than ${tooling.maxToolRounds} rounds of tool calls (maxToolRounds)`)
    }
    const round: ToolRound = {
      ...of,
      calls: answer.toolCalls.map((call) => roundCallOf(call, argumentErrors(call, tooling.tools), tooling)),
      results: [],
      deadline: new Date(Date.now() + tooling.toolTimeoutMs).toISOString(),
      reasoning: answer.end?.reasoning ?? null,
    }
    await this.recorder.requireAction(round)
    return round
  }

  /**
   * Waits until every call of the waiting round has a result, making the MCP calls as they may be
   * made (at once, or once approved); the round's messages join `added` and the run generates again.
   */
  async results(tooling: Tooling, signal: AbortSignal): Promise<void> {
    const round = () => this.waiting!
    this.gate = new ToolResultsGate(() => pendingCalls(round()).length === 0 || callsToMake(round()).length > 0, round().deadline)
    let wentOn = () => {}
    this.goingOn = new Promise((resolve) => {
      wentOn = resolve
    })
    try {
      for (;;) {
        await this.serverCalls.makeReady(round, tooling, signal)
        if (pendingCalls(round()).length === 0) break
        await this.gate.wait(signal)
      }
      this.added.push(...roundMessages(round()))
      this.recorder.resumeGenerating()
    } finally {
      this.gate = null
      this.goingOn = null
      wentOn()
    }
  }

  /** The whole exchange so far: `added`, and the waiting round's calls with the results it has (for a run stopped while it waits). */
  exchange(): ChatMessage[] {
    return this.waiting ? [...this.added, ...roundMessages(this.waiting)] : this.added
  }

  /**
   * Takes results for the waiting round: all or none, checked and written in turn with the run's
   * other writes (so two submissions never both answer a call), and visible once written. A
   * repeat of a submission (the same idempotency key) takes nothing and resolves as the first did.
   */
  async submit(results: SubmittedResult[], idempotencyKey: string | null): Promise<void> {
    const at = new Date().toISOString()
    const taken = await this.recorder.recordResults((rounds) => {
      if (submittedWith(rounds, idempotencyKey)) return null
      const round = this.waiting
      if (!round) throw new ToolResultRejectedError('the run is not waiting for tool results', 'NOT_WAITING')
      rejectBadSubmission(round, results)
      const answered = { ...round, results: [...round.results, ...results.map((r) => ({ ...r, idempotencyKey, at }))] }
      return rounds.map((r) => (r === round ? answered : r))
    })
    if (!taken) return
    const { goingOn, waiting } = this
    this.gate?.changed()
    // the last results answer with the run going on, not with the round they just completed
    if (goingOn && waiting && pendingCalls(waiting).length === 0) await goingOn
  }

  /** Approves or declines MCP calls of the waiting round, durably; an approved call is made once the run sees it. */
  async decide(decisions: SubmittedDecision[], idempotencyKey: string | null, keyId: string | null): Promise<void> {
    if (await this.serverCalls.decide(() => this.waiting, decisions, idempotencyKey, keyId)) this.gate?.changed()
  }
}

function rejectBadSubmission(round: ToolRound, results: SubmittedResult[]): void {
  if (results.length === 0) throw new ToolResultRejectedError('results: give at least one result', 'INVALID')
  const ids = results.map((r) => r.callId)
  const twice = ids.find((id, i) => ids.indexOf(id) !== i)
  if (twice) throw new ToolResultRejectedError(`call '${twice}' has two results in this submission`, 'INVALID')
  const pending = new Set(pendingCalls(round).map((c) => c.callId))
  for (const id of ids) {
    const server = round.calls.find((c) => c.callId === id)?.server
    if (pending.has(id) && server !== undefined) {
      throw new ToolResultRejectedError(`call '${id}' is made by promptline on MCP server '${server}'`, 'SERVER_CALL')
    }
    if (pending.has(id)) continue
    if (round.calls.some((c) => c.callId === id))
      throw new ToolResultRejectedError(`call '${id}' already has its result`, 'ALREADY_ANSWERED')
    throw new ToolResultRejectedError(`the run is waiting for no call '${id}'`, 'UNKNOWN_CALL')
  }
}
