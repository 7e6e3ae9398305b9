import type { PromptlineClient } from 'promptline/client'
import { useEffect, useState } from 'preact/hooks'
import { describeError } from './api.js'
import { ConsolePromptDiffDocument, type ConsolePromptDiffQuery, ConsolePromptsDocument } from './generated/graphql.js'
import { usePolled } from './hooks.js'

type Diff = ConsolePromptDiffQuery['promptDiff']

const versionsUpTo = (newest: number) => Array.from({ length: newest }, (_, i) => newest - i)

/** One message of the diff: its role(s), then its text with insertions and deletions marked. */
function MessageDiff({ message }: { message: Diff['messages'][number] }) {
  const role = message.fromRole === message.toRole ? message.fromRole : `${message.fromRole ?? '—'} → ${message.toRole ?? '—'}`
  return (
    <li class={`message-diff ${message.change.toLowerCase()}`} data-testid="message-diff">
      <small>
        {message.change} · {role}
      </small>
      <p>
        {message.segments.map((s, i) =>
          s.op === 'INSERT' ? <ins key={i}>{s.text}</ins> : s.op === 'DELETE' ? <del key={i}>{s.text}</del> : <span key={i}>{s.text}</span>,
        )}
      </p>
    </li>
  )
}

/** A prompt's versions side by side: pick a prompt and two versions, see what changed (and where its labels point). */
export function PromptDiff({ client }: { client: PromptlineClient }) {
  const { value: listed, error: listError } = usePolled(() => client.query(ConsolePromptsDocument, {}), 5_000, [client])
  const prompts = listed?.prompts.edges.map((e) => e.node) ?? []
  const [promptId, setPromptId] = useState('')
  const [range, setRange] = useState<{ from: number; to: number } | null>(null)
  const [diff, setDiff] = useState<{ value: Diff | null; error: unknown }>({ value: null, error: null })
  const prompt = prompts.find((p) => p.id === promptId)

  useEffect(() => {
    if (!promptId || !range) return
    let live = true
    client.query(ConsolePromptDiffDocument, { id: promptId, ...range }).then(
      (data) => live && setDiff({ value: data.promptDiff, error: null }),
      (error: unknown) => live && setDiff({ value: null, error }),
    )
    return () => {
      live = false
    }
  }, [client, promptId, range?.from, range?.to])

  const choose = (id: string) => {
    const newest = prompts.find((p) => p.id === id)?.version ?? 1
    setPromptId(id)
    setRange({ from: Math.max(1, newest - 1), to: newest })
  }
  const versionSelect = (side: 'from' | 'to') => (
    <select
      name={side}
      value={String(range?.[side] ?? '')}
      onChange={(e) => range && setRange({ ...range, [side]: Number(e.currentTarget.value) })}
    >
      {versionsUpTo(prompt?.version ?? 0).map((v) => (
        <option key={v} value={String(v)}>
          v{v}
        </option>
      ))}
    </select>
  )
  return (
    <section class="prompt-diff" aria-label="Prompt versions">
      <h2>Prompt versions</h2>
      {listError ? <p class="error">{describeError(listError)}</p> : null}
      <select name="promptId" value={promptId} onChange={(e) => choose(e.currentTarget.value)}>
        <option value="">Pick a prompt</option>
        {prompts.map((p) => (
          <option key={p.id} value={p.id}>
            {p.id} (v{p.version})
          </option>
        ))}
      </select>
      {prompt && (
        <>
          <p>
            {versionSelect('from')} → {versionSelect('to')}{' '}
            <small data-testid="labels">{prompt.labels.map((l) => `${l.name}: v${l.version}`).join(' · ')}</small>
          </p>
          {diff.error ? <p class="error">{describeError(diff.error)}</p> : null}
          {diff.value?.identical && <p class="hint">The two versions are the same.</p>}
          <ol class="diff" data-testid="prompt-diff">
            {diff.value?.messages.map((m) => <MessageDiff key={`${m.fromIndex}-${m.toIndex}`} message={m} />)}
          </ol>
          {diff.value?.fields.map((f) => (
            <p key={f.path} data-testid="field-diff">
              <code>{f.path}</code>: <del>{JSON.stringify(f.before)}</del> → <ins>{JSON.stringify(f.after)}</ins>
            </p>
          ))}
        </>
      )}
    </section>
  )
}
