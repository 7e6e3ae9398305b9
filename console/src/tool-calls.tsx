import type { PromptlineClient } from 'promptline/client'
import { useState } from 'preact/hooks'
import { describeError } from './api.js'
import type { ConsoleRunQuery } from './generated/graphql.js'

type Run = NonNullable<ConsoleRunQuery['run']>

type PendingCall = Run['pendingToolCalls'][number]

/** A pending call with a form to answer it by hand: its output, whether the tool failed, and Submit. */
function ResultForm({ client, runId, call, onSubmitted }: { client: PromptlineClient; runId: string; call: PendingCall; onSubmitted: () => void }) {
  const [error, setError] = useState<string | null>(null)
  const submit = async (event: SubmitEvent) => {
    event.preventDefault()
    const form = new FormData(event.currentTarget as HTMLFormElement)
    try {
      await client.submitToolResults(runId, [{ callId: call.callId, output: String(form.get('output')), isError: form.get('isError') === 'on' }])
      onSubmitted()
    } catch (failure) {
      setError(describeError(failure))
    }
  }
  return (
    <>
      <form aria-label={`Result of ${call.callId}`} onSubmit={submit}>
        <textarea name="output" placeholder="what the tool returned (JSON or text)" required />
        <label>
          <input type="checkbox" name="isError" /> the tool failed
        </label>
        <button type="submit">Submit result</button>
      </form>
      {error && <p class="error">{error}</p>}
    </>
  )
}

/** An MCP call awaiting approval: Approve makes it, Decline tells the model the reason and never makes it. */
function ApprovalForm({ client, runId, call, onSubmitted }: { client: PromptlineClient; runId: string; call: PendingCall; onSubmitted: () => void }) {
  const [error, setError] = useState<string | null>(null)
  const decide = async (event: SubmitEvent) => {
    event.preventDefault()
    const form = new FormData(event.currentTarget as HTMLFormElement)
    const approve = (event.submitter as HTMLButtonElement | null)?.value === 'approve'
    try {
      await client.approveToolCalls(runId, [{ callId: call.callId, approve, reason: String(form.get('reason') ?? '') || null }])
      onSubmitted()
    } catch (failure) {
      setError(describeError(failure))
    }
  }
  return (
    <>
      <form aria-label={`Approval of ${call.callId}`} onSubmit={decide}>
        <input name="reason" placeholder="reason (a decline tells the model)" />
        <button type="submit" value="approve">
          Approve
        </button>
        <button type="submit" value="decline">
          Decline
        </button>
      </form>
      {error && <p class="error">{error}</p>}
    </>
  )
}

/** A call the run waits on: answered by hand, approved or declined, or being made by promptline on its MCP server. */
function Pending({ client, runId, call, onSubmitted }: { client: PromptlineClient; runId: string; call: PendingCall; onSubmitted: () => void }) {
  const props = { client, runId, call, onSubmitted }
  return (
    <li data-testid={`pending-${call.callId}`}>
      <strong>{call.name}</strong> <code>{call.callId}</code> {call.server ? `on MCP server ${call.server}` : 'run by the application'}
      <pre>{JSON.stringify(call.arguments, null, 2)}</pre>
      {call.argumentErrors.length > 0 && <p class="error">{call.argumentErrors.join('; ')}</p>}
      {call.server === null && <ResultForm {...props} />}
      {call.approvalRequired && <ApprovalForm {...props} />}
      {call.server !== null && !call.approvalRequired && <p>promptline is making this call</p>}
    </li>
  )
}

type RoundCall = Run['toolRounds'][number]['calls'][number]

/** Who ran a call of a round, and who approved it. */
const callSource = (call: RoundCall, durationMs: number | null | undefined) => {
  const where = call.server ? `MCP ${call.server}${durationMs != null ? `, ${durationMs} ms` : ''}` : 'application'
  const decided = call.decision && `${call.decision.approve ? 'approved' : 'declined'} by ${call.decision.keyId ?? 'local'}${call.decision.reason ? `: ${call.decision.reason}` : ''}`
  return decided ? `${where}; ${decided}` : where
}

/** A run's tool calls: those it waits for, each to answer by hand, and its rounds so far. */
export function ToolCalls({ client, run, onSubmitted }: { client: PromptlineClient; run: Run; onSubmitted: () => void }) {
  if (run.toolRounds.length === 0) return null
  return (
    <>
      {run.pendingToolCalls.length > 0 && (
        <>
          <h3>Waiting for tool calls</h3>
          <ul>
            {run.pendingToolCalls.map((call) => (
              <Pending key={call.callId} client={client} runId={run.id} call={call} onSubmitted={onSubmitted} />
            ))}
          </ul>
        </>
      )}
      <h3>Tool rounds</h3>
      <ol>
        {run.toolRounds.map((round, i) => (
          // biome-ignore lint/suspicious/noArrayIndexKey: rounds are only appended
          <li key={i}>
            {round.text && <p>{round.text}</p>}
            {round.calls.map((call) => {
              const result = round.results.find((r) => r.callId === call.callId)
              return (
                <p key={call.callId}>
                  <code>{call.name}({call.argumentsText})</code> [{callSource(call, result?.durationMs)}] →{' '}
                  {result ? `${result.isError ? 'error: ' : ''}${result.output}` : 'pending'}
                </p>
              )
            })}
          </li>
        ))}
      </ol>
    </>
  )
}
