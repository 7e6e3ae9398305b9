import type { OutputContract } from '../domain/definitions.js'
import { repairInstruction, type ValidationResult, validateOutput } from '../domain/output-validation.js'
import type { ChatMessage, Finish } from '../domain/records.js'
import type { ToolCall } from '../domain/tools.js'
import { inSpan, inSpanSync } from '../domain/tracing.js'
import type { CallEnd, ModelCaller } from './model-caller.js'
import type { SteerInbox } from './steer-inbox.js'
import type { TokenCoalescer } from './token-coalescer.js'

/** Where an answer is as it is produced, so a stopped run still has its partial text. */
export interface AnswerProgress {
  /** The current attempt's text so far (all its steer segments). */
  text: string
  /** The current segment's text: what the model said since the last steer. */
  segment: string
  /** 0 for the first generation, 1 for the first repair, … */
  attempt: number
  /** Messages added to the conversation along the way (steer segments and steers). */
  transcript: ChatMessage[]
}

export interface AnswerHooks {
  coalescer: TokenCoalescer
  onFirstToken(): void
  onSteerApplied(steerId: string): void
  onStatus(status: 'GENERATING' | 'VALIDATING' | 'REPAIRING'): void
  /** A tool call's fragment: its first (`started`), then its argument text in pieces. */
  onToolCall(call: ToolCall, argumentsDelta: string, started: boolean): void
  /** A broken stream starts again on the next candidate as attempt `attempt`. */
  onRestart(attempt: number, reason: string, discardedChars: number): void
}

export interface Answer {
  text: string
  validation: ValidationResult
  attempts: number
  /** How the last model call of the last attempt ended, with its thinking; null when it was cut. */
  end: CallEnd | null
  /** The tools the model called instead of answering (its text is said with the calls); empty for an answer. */
  toolCalls: ToolCall[]
}

/**
 * The answer checked against its contract. A contract's answer cut off at the token limit is
 * invalid however it parses (repair may ask again); plain text may stop anywhere.
 */
function validated(output: OutputContract, text: string, finish: Finish | null): ValidationResult {
  const result = validateOutput(output, text)
  if (output.kind === 'TEXT' || finish?.reason !== 'LENGTH') return result
  const cut = `the answer was cut off at the model's token limit (finish reason LENGTH, vendor's ${finish.vendorReason ?? 'unknown'})`
  return { valid: false, errors: [cut, ...result.errors], parsed: result.parsed }
}

/**
 * One answer: model calls through `caller` until no steer is waiting (each accepted steer ends
 * the segment at the next token and is appended as user input), then validation against the
 * contract and up to `maxRepairs` repair generations with the errors fed back. A call that ends
 * with tool calls ends the answer at once, unvalidated: the run waits for their results (a
 * waiting steer is applied in the next round). `progress.attempt` goes on counting from where
 * it is, so each round's deltas have attempts of their own.
 */
export async function produceAnswer(options: {
  caller: ModelCaller
  messages: ChatMessage[]
  output: OutputContract
  maxRepairs: number
  /** Null when this answer takes no steers (a parallel candidate). */
  steers: SteerInbox | null
  progress: AnswerProgress
  hooks: AnswerHooks
}): Promise<Answer> {
  const { caller, output, maxRepairs, steers, progress, hooks } = options
  let messages = options.messages
  let firstToken = true
  let end = null as CallEnd | null // set by `generate`, which TypeScript does not follow
  let toolCalls: ToolCall[] = []
  const firstAttempt = progress.attempt
  // one attempt: model calls until no steer is waiting
  const generate = async () => {
    for (;;) {
      progress.segment = ''
      const call = await caller.call(messages, {
        onDelta: (text) => {
          if (firstToken) {
            firstToken = false
            hooks.onFirstToken()
          }
          progress.segment += text
          progress.text += text
          hooks.coalescer.push(text)
          return steers?.waiting ?? false
        },
        onToolCall: (toolCall, delta, started) => {
          // the text before a call goes out before it
          if (started) hooks.coalescer.flush()
          hooks.onToolCall(toolCall, delta.arguments, started)
        },
        onRestart: (reason, discardedChars) => {
          // the broken segment is dropped; the new attempt's tokens start with what is kept
          progress.text = progress.text.slice(0, progress.text.length - progress.segment.length)
          progress.segment = ''
          hooks.coalescer.restart()
          progress.attempt++
          hooks.onRestart(progress.attempt, reason, discardedChars)
          if (progress.text !== '') hooks.coalescer.push(progress.text)
        },
      })
      end = call.end
      toolCalls = call.toolCalls
      if (toolCalls.length > 0) return
      const applied = steers?.take() ?? []
      if (applied.length === 0 && !call.endedEarly) return
      hooks.coalescer.restart()
      if (progress.segment !== '') {
        messages = [...messages, { role: 'assistant', content: progress.segment }]
        progress.transcript.push({ role: 'assistant', content: progress.segment })
      }
      for (const steer of applied) {
        messages = [...messages, { role: 'user', content: steer.text }]
        progress.transcript.push({ role: 'user', content: steer.text })
        hooks.onSteerApplied(steer.steerId)
      }
    }
  }
  for (;;) {
    progress.text = ''
    const repair = progress.attempt - firstAttempt
    await (repair === 0 ? generate() : inSpan('promptline.repair', { 'promptline.repair.attempt': repair }, generate))
    hooks.coalescer.flush()
    const attempts = repair + 1
    if (toolCalls.length > 0)
      return { text: progress.text, validation: { valid: true, errors: [], parsed: undefined }, attempts, end, toolCalls }
    hooks.onStatus('VALIDATING')
    const validation = inSpanSync('promptline.validate', { 'promptline.output.kind': output.kind }, (span) => {
      const result = validated(output, progress.text, end?.finish ?? null)
      span.setAttribute('promptline.output.valid', result.valid)
      return result
    })
    // a refusal is the model's answer: asking again with the errors would not change its mind
    const final = validation.valid || repair >= maxRepairs || end?.finish.reason === 'REFUSAL'
    if (final) return { text: progress.text, validation, attempts, end, toolCalls }
    // a repair: the same lease, the answer and what was wrong with it, a fresh permit
    hooks.coalescer.restart()
    progress.attempt++
    hooks.onStatus('REPAIRING')
    messages = [
      ...messages,
      { role: 'assistant', content: progress.text },
      { role: 'user', content: repairInstruction(output, validation.errors) },
    ]
    hooks.onStatus('GENERATING')
  }
}
