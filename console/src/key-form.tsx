import type { PromptlineClient } from 'promptline/client'
import { useState } from 'preact/hooks'
import { describeError } from './api.js'
import { type ApiKeyRole, type BudgetPeriod, ConsoleCreateKeyDocument, type CreateApiKeyInput } from './generated/graphql.js'

/** A whole number from a form field, or null when it is blank. */
const count = (form: FormData, name: string): number | null => {
  const text = String(form.get(name) ?? '').trim()
  return text === '' ? null : Number(text)
}

/** The create-key input a submitted form describes. */
function keyInput(form: FormData): CreateApiKeyInput {
  const limits = {
    requestsPerMinute: count(form, 'requestsPerMinute'),
    tokensPerMinute: count(form, 'tokensPerMinute'),
    concurrentRuns: count(form, 'concurrentRuns'),
  }
  const costUsd = String(form.get('costUsd') ?? '').trim()
  const expiresAt = String(form.get('expiresAt') ?? '').trim()
  return {
    name: String(form.get('name')),
    role: form.get('role') as ApiKeyRole,
    ...(Object.values(limits).some((v) => v !== null) && { limits }),
    ...(costUsd !== '' && { budget: { costUsd: Number(costUsd), period: form.get('period') as BudgetPeriod } }),
    ...(expiresAt !== '' && { expiresAt: new Date(expiresAt).toISOString() }),
  }
}

/** A secret shown once, with a button that copies it. */
export function SecretOnce({ secret, onDone }: { secret: string; onDone: () => void }) {
  const [copied, setCopied] = useState(false)
  return (
    <div class="secret" role="status" aria-label="New secret">
      <p>This secret is shown once: copy it now. The server keeps only its hash.</p>
      <code data-testid="secret">{secret}</code>{' '}
      <button type="button" onClick={() => navigator.clipboard.writeText(secret).then(() => setCopied(true))}>
        {copied ? 'Copied' : 'Copy'}
      </button>{' '}
      <button type="button" onClick={onDone}>
        Done
      </button>
    </div>
  )
}

/** Creates a key of the tenant: name, role, limits, budget, expiry. */
export function KeyForm({ client, onCreated }: { client: PromptlineClient; onCreated: (secret: string) => void }) {
  const [error, setError] = useState<string | null>(null)
  const submit = async (event: Event) => {
    event.preventDefault()
    const form = event.currentTarget as HTMLFormElement
    setError(null)
    try {
      const result = (await client.query(ConsoleCreateKeyDocument, { input: keyInput(new FormData(form)) })).createApiKey
      if (result.__typename !== 'CreateApiKeyPayload') throw new Error(`${result.code}: ${result.message}`)
      form.reset()
      onCreated(result.secret)
    } catch (e) {
      setError(describeError(e))
    }
  }
  return (
    <form aria-label="New key" class="key-form" onSubmit={submit}>
      <label>
        name <input name="name" required />
      </label>
      <label>
        role{' '}
        <select name="role">
          <option value="WRITE">write</option>
          <option value="READ">read</option>
          <option value="ADMIN">admin</option>
        </select>
      </label>
      <label>
        requests/min <input name="requestsPerMinute" type="number" min="1" />
      </label>
      <label>
        tokens/min <input name="tokensPerMinute" type="number" min="1" />
      </label>
      <label>
        concurrent runs <input name="concurrentRuns" type="number" min="1" />
      </label>
      <label>
        budget USD <input name="costUsd" type="number" min="0" step="any" />
      </label>
      <label>
        per{' '}
        <select name="period">
          <option value="DAY">day</option>
          <option value="WEEK">week</option>
          <option value="MONTH">month</option>
          <option value="TOTAL">ever</option>
        </select>
      </label>
      <label>
        expires <input name="expiresAt" type="datetime-local" />
      </label>
      <button type="submit">Create key</button>
      {error && <p class="error">{error}</p>}
    </form>
  )
}
