import type { EnqueuePromptInput, PromptlineClient } from 'promptline/client'
import { useState } from 'preact/hooks'
import { describeError, jsonField } from './api.js'

const EMPTY = { input: '', promptId: '', variables: '', profileId: '', overrides: '', whenBusy: 'ENQUEUE' }

/** Enqueues a plain input or a catalog prompt, with optional variables, profile and setting overrides. */
export function EnqueueForm({ client, sessionId, hasDefaultProfile }: { client: PromptlineClient; sessionId: string; hasDefaultProfile: boolean }) {
  const [form, setForm] = useState(EMPTY)
  const [problem, setProblem] = useState<string | null>(null)
  const field = (name: keyof typeof EMPTY) => ({
    name,
    value: form[name],
    onInput: (e: { currentTarget: { value: string } }) => setForm({ ...form, [name]: e.currentTarget.value }),
  })
  const submit = async (e: Event) => {
    e.preventDefault()
    try {
      const input: EnqueuePromptInput = {
        sessionId,
        input: form.input || null,
        promptId: form.promptId || null,
        variables: jsonField('variables', form.variables) as EnqueuePromptInput['variables'],
        profileId: form.profileId || null,
        overrides: jsonField('overrides', form.overrides) as EnqueuePromptInput['overrides'],
        whenBusy: form.whenBusy as EnqueuePromptInput['whenBusy'],
      }
      await client.enqueue(input)
      setProblem(null)
      setForm({ ...form, input: '' })
    } catch (caught) {
      setProblem(describeError(caught))
    }
  }
  return (
    <form class="enqueue" onSubmit={submit} aria-label="Enqueue">
      <h3>Enqueue</h3>
      <textarea placeholder="input text" rows={3} {...field('input')} />
      <div class="row">
        <input placeholder="promptId (optional)" {...field('promptId')} />
        <input placeholder={hasDefaultProfile ? 'profileId (session default)' : 'profileId'} {...field('profileId')} />
        <select {...field('whenBusy')} onChange={(e) => setForm({ ...form, whenBusy: e.currentTarget.value })}>
          <option value="ENQUEUE">when busy: enqueue</option>
          <option value="REJECT">when busy: reject</option>
          <option value="INTERRUPT">when busy: interrupt</option>
          <option value="ROLLBACK">when busy: roll back</option>
        </select>
      </div>
      <div class="row">
        <textarea placeholder='variables, e.g. {"topic": "tea"}' rows={2} {...field('variables')} />
        <textarea placeholder='overrides, e.g. {"temperature": 0.2, "extra": {"tokenDelayMs": 30}}' rows={2} {...field('overrides')} />
      </div>
      <button type="submit">Enqueue</button>
      {problem && <p class="error">{problem}</p>}
    </form>
  )
}
