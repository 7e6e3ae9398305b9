import type { PromptlineClient } from 'promptline/client'
import { describeError } from './api.js'
import { ConsoleBackendsDocument } from './generated/graphql.js'
import { usePolled } from './hooks.js'

/** Each backend's model calls in use against its live limit, and who waits, read every second. */
export function Backends({ client }: { client: PromptlineClient }) {
  const { value, error } = usePolled(() => client.query(ConsoleBackendsDocument, {}), 1_000, [client])
  return (
    <section class="backends">
      <h2>Backends</h2>
      {error ? <p class="error">{describeError(error)}</p> : null}
      <table data-testid="backends">
        <thead>
          <tr>
            <th>backend</th>
            <th>in use / limit</th>
            <th>waiting</th>
          </tr>
        </thead>
        <tbody>
          {value?.backends.map(({ id, kind, capacity: c }) => (
            <tr key={id}>
              <td title={kind}>{id}</td>
              <td>
                <meter min={0} max={c.activeLimit} value={c.active} /> {c.active} / {c.activeLimit}
                {c.activeLimit < c.maxActive && <small title="backed off after a 429"> (max {c.maxActive})</small>}
              </td>
              <td>
                {c.waiting} runs · {c.callsWaiting} calls
                {c.pausedUntil && <small> paused until {new Date(c.pausedUntil).toLocaleTimeString()}</small>}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  )
}
