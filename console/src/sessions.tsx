import type { PromptlineClient } from 'promptline/client'
import { useEffect, useState } from 'preact/hooks'
import { describeError } from './api.js'
import { ConsoleSessionsDocument } from './generated/graphql.js'
import { sessionHref, usePolled } from './hooks.js'

/** The sessions list (refreshed every 2 s) and the form that creates one. */
export function Sessions({ client, selected, onError }: { client: PromptlineClient; selected: string | null; onError: (e: unknown) => void }) {
  const [reload, setReload] = useState(0)
  const { value, error } = usePolled(() => client.query(ConsoleSessionsDocument, {}), 2_000, [client, reload])
  useEffect(() => {
    if (error) onError(error)
  }, [error])
  const [form, setForm] = useState({ id: '', title: '', defaultProfileId: '', keepHistory: true })
  const [problem, setProblem] = useState<string | null>(null)
  const create = async (e: Event) => {
    e.preventDefault()
    try {
      const id = await client.createSession({
        id: form.id || null,
        title: form.title || null,
        defaultProfileId: form.defaultProfileId || null,
        keepHistory: form.keepHistory,
      })
      setProblem(null)
      setForm({ ...form, id: '', title: '' })
      setReload((n) => n + 1)
      location.hash = sessionHref(id)
    } catch (caught) {
      setProblem(describeError(caught))
    }
  }
  return (
    <nav>
      <h2>Sessions</h2>
      {error ? <p class="error">{describeError(error)}</p> : null}
      <ul data-testid="sessions">
        {value?.sessions.edges.map(({ node }) => (
          <li key={node.id} class={node.id === selected ? 'selected' : ''}>
            <a href={sessionHref(node.id)}>{node.title ?? node.id}</a> <span class={`status ${node.status}`}>{node.status}</span>
          </li>
        ))}
      </ul>
      <form onSubmit={create} aria-label="New session">
        <h3>New session</h3>
        <input placeholder="id (optional)" value={form.id} onInput={(e) => setForm({ ...form, id: e.currentTarget.value })} name="id" />
        <input placeholder="title (optional)" value={form.title} onInput={(e) => setForm({ ...form, title: e.currentTarget.value })} />
        <select
          name="defaultProfileId"
          value={form.defaultProfileId}
          onChange={(e) => setForm({ ...form, defaultProfileId: e.currentTarget.value })}
        >
          <option value="">no default profile</option>
          {value?.profiles.map((p) => (
            <option key={p.id} value={p.id}>
              {p.id} ({p.backendId} · {p.model})
            </option>
          ))}
        </select>
        <label>
          <input type="checkbox" checked={form.keepHistory} onChange={(e) => setForm({ ...form, keepHistory: e.currentTarget.checked })} />{' '}
          keep history
        </label>
        <button type="submit">Create session</button>
        {problem && <p class="error">{problem}</p>}
      </form>
    </nav>
  )
}
