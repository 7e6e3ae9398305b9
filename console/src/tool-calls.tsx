import type { PromptlineClient } from 'promptline/client'
import { useState } from 'preact/hooks'
import { describeError } from './api.js'
import type { ConsoleRunQuery } from './generated/graphql.js'

type Run = NonNullable<ConsoleRunQuery['run']>

/** A pending call with a form to answer it by hand: its output, whether the tool failed, and Submit. */
function PendingCall({ client, runId, call, onSubmitted }: {
  client: PromptlineClient
  runId: string
  call: Run['pendingToolCalls'][number]
  onSubmitted: () => void
}) {
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
    <li data-testid={`pending-${call.callId}`}>
      <strong>{call.name}</strong> <code>{call.callId}</code>
      <pre>{JSON.stringify(call.arguments, null, 2)}</pre>
      {call.argumentErrors.length > 0 && <p class="error">{call.argumentErrors.join('; ')}</p>}
      <form aria-label={`Result of ${call.callId}`} onSubmit={submit}>
        <textarea name="output" placeholder="what the tool returned (JSON or text)" required />
        <label>
          <input type="checkbox" name="isError" /> the tool failed
        </label>
        <button type="submit">Submit result</button>
      </form>
      {error && <p class="error">{error}</p>}
    </li>
  )
}

/** A run's tool calls: those it waits for, each to answer by hand, and its rounds so far. */
export function ToolCalls({ client, run, onSubmitted }: { client: PromptlineClient; run: Run; onSubmitted: () => void }) {
  if (run.toolRounds.length === 0) return null
  return (
    <>
      {run.pendingToolCalls.length > 0 && (
        <>
          <h3>Waiting for tool results</h3>
          <ul>
            {run.pendingToolCalls.map((call) => (
              <PendingCall key={call.callId} client={client} runId={run.id} call={call} onSubmitted={onSubmitted} />
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
                  <code>{call.name}({call.argumentsText})</code> → {result ? `${result.isError ? 'error: ' : ''}${result.output}` : 'pending'}
                </p>
              )
            })}
          </li>
        ))}
      </ol>
    </>
  )
}
