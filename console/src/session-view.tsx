import type { PromptlineClient, SessionEvent } from 'promptline/client'
import { useCallback, useEffect, useRef, useState } from 'preact/hooks'
import { describeError } from './api.js'
import { EnqueueForm } from './enqueue-form.js'
import { type ConsoleSessionQuery, ConsoleSessionDocument } from './generated/graphql.js'
import { QueueTable } from './queue-table.js'

type Session = NonNullable<ConsoleSessionQuery['session']>

/**
 * A session: its queue, kept live from its event stream (which the client resumes after any
 * disconnect, without gap or repeat), the text of its runs as their tokens arrive, and the
 * form that enqueues into it.
 */
export function SessionView({ client, sessionId, onRunChanged }: { client: PromptlineClient; sessionId: string; onRunChanged: () => void }) {
  const [session, setSession] = useState<Session | null>(null)
  const [texts, setTexts] = useState<Record<string, string>>({})
  const [problem, setProblem] = useState<string | null>(null)
  const [live, setLive] = useState(false)
  const reloading = useRef<Promise<void> | null>(null)
  const again = useRef(false)

  const apply = useCallback((read: Session | null) => {
    setSession(read)
    // a run already going when the page opened: its text so far
    setTexts((known) => {
      const next = { ...known }
      for (const entry of read?.queue ?? []) if (entry.run && next[entry.run.id] === undefined) next[entry.run.id] = entry.run.output ?? ''
      return next
    })
  }, [])

  // one read of the queue at a time; events during one ask for one more after it
  const reload = useCallback((): void => {
    if (reloading.current) {
      again.current = true
      return
    }
    reloading.current = client
      .query(ConsoleSessionDocument, { id: sessionId })
      .then(({ session: read }) => apply(read))
      .catch((error: unknown) => setProblem(describeError(error)))
      .finally(() => {
        reloading.current = null
        if (again.current) {
          again.current = false
          reload()
        }
      })
  }, [client, sessionId, apply])

  useEffect(() => {
    const stop = new AbortController()
    const follow = async () => {
      const first = await client.query(ConsoleSessionDocument, { id: sessionId })
      if (!first.session) throw new Error(`no session ${sessionId}`)
      apply(first.session)
      setLive(true)
      const events = client.streamSession(sessionId, { afterSequence: first.session.lastSequence, signal: stop.signal })
      for await (const event of events) onEvent(event)
    }
    const onEvent = (event: SessionEvent) => {
      if (event.__typename === 'TokenDeltaEvent') {
        setTexts((known) => ({ ...known, [event.runId]: (known[event.runId] ?? '') + event.text }))
        return
      }
      if (event.__typename === 'RunStartedEvent') setTexts((known) => ({ ...known, [event.runId]: '' }))
      if (event.__typename === 'RunFinishedEvent') {
        const { output } = event.run
        if (output !== null) setTexts((known) => ({ ...known, [event.runId]: output }))
        onRunChanged()
      }
      // a run's detail shows the calls it now waits for
      if (event.__typename === 'ToolCallsRequestedEvent') onRunChanged()
      reload()
    }
    follow().catch((error: unknown) => !stop.signal.aborted && setProblem(describeError(error)))
    return () => stop.abort()
  }, [client, sessionId])

  if (!session) return <p class={problem ? 'error' : 'hint'}>{problem ?? 'Loading…'}</p>
  const running = session.queue.find((e) => e.status === 'RUNNING' || e.status === 'STARTING')
  return (
    <div class="session" data-testid="session">
      <h2>
        {session.title ?? session.id} <span class={`status ${session.status}`}>{session.status}</span>
        <span class={`live ${live ? 'on' : ''}`} title="following its event stream">
          {live ? '● live' : '○ connecting'}
        </span>
      </h2>
      {problem && <p class="error">{problem}</p>}
      <h3>Running</h3>
      <pre class="stream" data-testid="stream">
        {running?.run ? (texts[running.run.id] ?? '') : ''}
      </pre>
      <QueueTable client={client} sessionId={sessionId} entries={session.queue} texts={texts} onProblem={setProblem} />
      <EnqueueForm client={client} sessionId={sessionId} hasDefaultProfile={session.defaultProfileId !== null} />
    </div>
  )
}
