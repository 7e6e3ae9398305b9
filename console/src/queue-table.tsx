import type { PromptlineClient } from 'promptline/client'
import { useState } from 'preact/hooks'
import { describeError } from './api.js'
import type { ConsoleEntryFragment } from './generated/graphql.js'
import { runHref } from './hooks.js'

const WAITING = new Set(['QUEUED', 'SCHEDULED'])
const GOING = new Set(['STARTING', 'RUNNING'])

function Steer({ onSteer }: { onSteer: (text: string) => Promise<void> }) {
  const [text, setText] = useState('')
  return (
    <form
      class="steer"
      onSubmit={async (e) => {
        e.preventDefault()
        if (!text) return
        await onSteer(text)
        setText('')
      }}
    >
      <input placeholder="steer…" value={text} onInput={(e) => setText(e.currentTarget.value)} aria-label="steer text" />
      <button type="submit">Steer</button>
    </form>
  )
}

/** The session's queue, newest last: place in line, status, its run's status, and what can be done to each entry. */
export function QueueTable(props: {
  client: PromptlineClient
  sessionId: string
  entries: ConsoleEntryFragment[]
  texts: Record<string, string>
  onProblem: (problem: string | null) => void
}) {
  const { client, sessionId, entries, onProblem } = props
  const act = (action: () => Promise<unknown>) => action().then(() => onProblem(null), (error: unknown) => onProblem(describeError(error)))
  return (
    <table class="queue" data-testid="queue">
      <thead>
        <tr>
          <th>#</th>
          <th>place</th>
          <th>entry</th>
          <th>run</th>
          <th>prompt</th>
          <th />
        </tr>
      </thead>
      <tbody>
        {entries.map((entry) => (
          <tr key={entry.id} data-testid={`entry-${entry.queueSequence}`} class={entry.status}>
            <td>{entry.queueSequence}</td>
            <td>{entry.position ?? ''}</td>
            <td>
              <span class={`status ${entry.status}`}>{entry.status}</span>
              {entry.error && entry.error.code !== entry.status && <small title={entry.error.message}> {entry.error.code}</small>}
            </td>
            <td>
              {entry.run ? (
                <a href={runHref(sessionId, entry.run.id)} class={`status ${entry.run.status}`} data-testid="run-status">
                  {entry.run.status}
                </a>
              ) : (
                ''
              )}
            </td>
            <td class="text" title={entry.input ?? ''}>
              {entry.promptId ?? entry.input?.slice(0, 60)}
            </td>
            <td class="actions">
              {WAITING.has(entry.status) && (
                <button type="button" onClick={() => act(() => client.cancel(sessionId, entry.queueId))}>
                  Cancel
                </button>
              )}
              {GOING.has(entry.status) && entry.runId && (
                <button type="button" onClick={() => act(() => client.abort(entry.runId!, 'aborted from the console'))}>
                  Abort
                </button>
              )}
              {entry.status === 'RUNNING' && (
                <Steer onSteer={(text) => act(() => client.steer({ sessionId, queueId: entry.queueId, text }))} />
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  )
}
