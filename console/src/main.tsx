import type { PromptlineClient } from 'promptline/client'
import { render } from 'preact'
import { useMemo, useState } from 'preact/hooks'
import { connect, needsKey, storedKey, storeKey } from './api.js'
import { Backends } from './backends.js'
import { ExperimentComparison, ExperimentDetail, Experiments } from './experiments.js'
import { type Route, usePolled, useRoute } from './hooks.js'
import { Keys } from './keys.js'
import { PromptDiff } from './prompt-diff.js'
import { RunDetail } from './run-detail.js'
import { SessionView } from './session-view.js'
import { Sessions } from './sessions.js'
import './style.css'

function KeyForm({ onKey }: { onKey: (key: string) => void }) {
  const [key, setKey] = useState('')
  return (
    <form
      class="key"
      onSubmit={(e) => {
        e.preventDefault()
        onKey(key)
      }}
    >
      <label>
        This server needs an API key:{' '}
        <input type="password" value={key} onInput={(e) => setKey(e.currentTarget.value)} autocomplete="off" />
      </label>
      <button type="submit">Use key</button>
    </form>
  )
}

/** Why the server takes no new work now, as `/readyz` says (a dependency away, draining), or null while it is ready. */
async function unreadyReason(): Promise<string | null> {
  const response = await fetch('/readyz').catch(() => null)
  if (response === null) return 'the server does not answer'
  if (response.ok) return null
  const body = (await response.json().catch(() => ({}))) as { reason?: string }
  return body.reason ?? `the server answers ${response.status}`
}

/** A banner while the server is not ready: what the operator sees during a Redis or database outage. */
function ReadinessBanner() {
  const { value: reason } = usePolled(unreadyReason, 2_000, [])
  if (!reason) return null
  return (
    <p class="banner" role="alert">
      Not ready: {reason}. Streams of the sessions this server holds go on; other work may answer UNAVAILABLE until it is back.
    </p>
  )
}

/** The experiments list, one experiment, or a comparison of two. */
function ExperimentsPage({ client, page }: { client: PromptlineClient; page: NonNullable<Route['experiments']> }) {
  if (page.compare) return <ExperimentComparison client={client} baseId={page.compare[0]} candidateId={page.compare[1]} />
  if (page.id) return <ExperimentDetail client={client} id={page.id} />
  return <Experiments client={client} />
}

function App() {
  const [apiKey, setApiKey] = useState(storedKey)
  const [unauthenticated, setUnauthenticated] = useState(false)
  const client = useMemo(() => connect(apiKey), [apiKey])
  const route = useRoute()
  // a run's end bumps this, so the run detail reads the ended run
  const [runsChanged, setRunsChanged] = useState(0)
  const onError = (error: unknown) => needsKey(error) && setUnauthenticated(true)
  const useKey = (key: string) => {
    storeKey(key)
    setApiKey(key || undefined)
    setUnauthenticated(false)
  }
  return (
    <>
      <header>
        <h1>
          promptline <span>console</span>
        </h1>
        <div class="pages">
          <a href="#/">Sessions</a> <a href="#/keys">Keys</a> <a href="#/experiments">Experiments</a>
        </div>
        {apiKey && (
          <button type="button" onClick={() => useKey('')}>
            Forget key
          </button>
        )}
      </header>
      <ReadinessBanner />
      {unauthenticated && <KeyForm onKey={useKey} />}
      <main>
        <Sessions client={client} selected={route.sessionId} onError={onError} />
        <section class="center">
          {route.keys ? (
            <Keys client={client} />
          ) : route.experiments ? (
            <ExperimentsPage client={client} page={route.experiments} />
          ) : route.sessionId ? (
            <SessionView key={route.sessionId} client={client} sessionId={route.sessionId} onRunChanged={() => setRunsChanged((n) => n + 1)} />
          ) : (
            <p class="hint">Pick a session, or create one.</p>
          )}
        </section>
        <aside>
          <Backends client={client} />
          <PromptDiff client={client} />
          {route.runId && <RunDetail client={client} runId={route.runId} refresh={runsChanged} />}
        </aside>
      </main>
    </>
  )
}

render(<App />, document.getElementById('app')!)
