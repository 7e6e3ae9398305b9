import type { PromptlineClient } from 'promptline/client'
import { useState } from 'preact/hooks'
import { describeError } from './api.js'
import { type ConsoleKeyFragment, ConsoleKeysDocument, ConsoleRevokeKeyDocument, ConsoleRotateKeyDocument } from './generated/graphql.js'
import { usePolled } from './hooks.js'
import { KeyForm, SecretOnce } from './key-form.js'

/** Days shown in each key's runs-per-day chart. */
const DAYS = 14
const DAY_MS = 86_400_000

/** The last DAYS UTC days, oldest first, as YYYY-MM-DD. */
const lastDays = (now = Date.now()) =>
  Array.from({ length: DAYS }, (_, i) => new Date(now - (DAYS - 1 - i) * DAY_MS).toISOString().slice(0, 10))

/** Runs per day as small bars, scaled to the busiest day. */
function RunsChart({ perDay }: { perDay: number[] }) {
  const most = Math.max(1, ...perDay)
  const total = perDay.reduce((a, b) => a + b, 0)
  return (
    <svg class="runs-chart" width={DAYS * 6} height={24} role="img" aria-label={`${total} runs in ${DAYS} days`}>
      {perDay.map((runs, i) => {
        const height = Math.round((runs / most) * 22)
        return <rect key={i} x={i * 6} y={24 - height - 1} width={5} height={Math.max(height, 1)} />
      })}
    </svg>
  )
}

/** USD as people read it: cents for larger sums, two significant digits for fractions of a cent. */
const usd = (value: number) => (value === 0 ? '$0' : value < 0.01 ? `$${value.toPrecision(2)}` : `$${value.toFixed(2)}`)

/** Spend against the budget: settled and reserved, as one bar. */
function BudgetBar({ budget }: { budget: NonNullable<ConsoleKeyFragment['budget']> }) {
  const spent = budget.usedUsd + budget.reservedUsd
  return (
    <span title={`${usd(budget.usedUsd)} spent, ${usd(budget.reservedUsd)} reserved by runs under way`}>
      <meter min={0} max={budget.costUsd} value={spent} /> {usd(spent)} of {usd(budget.costUsd)} / {budget.period.toLowerCase()}
    </span>
  )
}

const state = (key: ConsoleKeyFragment) =>
  key.revokedAt ? 'revoked' : key.expiresAt && Date.parse(key.expiresAt) <= Date.now() ? 'expired' : 'active'

/** One key: who it is, its state, its spend and runs, and what may be done to it while it works. */
function KeyRow({ apiKey: key, runs, onRotate, onRevoke }: { apiKey: ConsoleKeyFragment; runs: number[]; onRotate: () => void; onRevoke: () => void }) {
  return (
    <tr data-key={key.name}>
      <td title={key.id}>
        {key.name} <code>{key.prefix}…</code>
      </td>
      <td>{key.role.toLowerCase()}</td>
      <td>{state(key)}</td>
      <td>{key.budget ? <BudgetBar budget={key.budget} /> : '—'}</td>
      <td>
        <RunsChart perDay={runs} />
      </td>
      <td>{key.lastUsedAt ? new Date(key.lastUsedAt).toLocaleString() : 'never'}</td>
      <td>
        {state(key) === 'active' && (
          <>
            <button type="button" onClick={onRotate}>
              Rotate
            </button>{' '}
            <button type="button" onClick={onRevoke}>
              Revoke
            </button>
          </>
        )}
      </td>
    </tr>
  )
}

/** The tenant's keys (an admin key): create one (its secret shown once), rotate, revoke; each key's spend and runs per day. */
export function Keys({ client }: { client: PromptlineClient }) {
  const [secret, setSecret] = useState<string | null>(null)
  const [changed, setChanged] = useState(0)
  const [error, setError] = useState<string | null>(null)
  const { value, error: loadError } = usePolled(
    () => client.query(ConsoleKeysDocument, { from: new Date(Date.now() - DAYS * DAY_MS).toISOString(), to: new Date().toISOString() }),
    5_000,
    [client, changed],
  )
  const days = lastDays()
  const runsOf = (keyId: string) =>
    days.map((day) => value?.usageReport.groups.find((g) => g.key.keyId === keyId && g.key.day === day)?.runs ?? 0)
  const act = async (work: () => Promise<void>) => {
    setError(null)
    await work().catch((e: unknown) => setError(describeError(e)))
    setChanged((n) => n + 1)
  }
  const rotate = (id: string) =>
    act(async () => {
      const result = (await client.query(ConsoleRotateKeyDocument, { input: { id } })).rotateApiKey
      if (result.__typename !== 'RotateApiKeyPayload') throw new Error(`${result.code}: ${result.message}`)
      setSecret(result.secret)
    })
  const revoke = (id: string, name: string) =>
    confirm(`Revoke ${name}? Every instance refuses it within a second.`) &&
    act(async () => {
      await client.query(ConsoleRevokeKeyDocument, { input: { id } })
    })
  return (
    <section class="keys">
      <h2>API keys</h2>
      {value && !value.viewer.keysRequired ? (
        <p class="notice" data-testid="keys-open">
          This server is open: PROMPTLINE_API_KEYS is not set, so a caller without a key is the local admin. The keys made here
          limit only the callers that send them; set PROMPTLINE_API_KEYS to require one.
        </p>
      ) : null}
      {secret ? <SecretOnce secret={secret} onDone={() => setSecret(null)} /> : null}
      <KeyForm client={client} onCreated={(created) => act(async () => setSecret(created))} />
      {error || loadError ? <p class="error">{error ?? describeError(loadError)}</p> : null}
      <table data-testid="keys">
        <thead>
          <tr>
            <th>name</th>
            <th>role</th>
            <th>state</th>
            <th>spend</th>
            <th>runs / day</th>
            <th>last used</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {value?.apiKeys.edges.map(({ node: key }) => (
            <KeyRow key={key.id} apiKey={key} runs={runsOf(key.id)} onRotate={() => rotate(key.id)} onRevoke={() => revoke(key.id, key.name)} />
          ))}
        </tbody>
      </table>
    </section>
  )
}
