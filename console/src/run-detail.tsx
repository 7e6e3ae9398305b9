import type { PromptlineClient } from 'promptline/client'
import type { ComponentChildren } from 'preact'
import { useState } from 'preact/hooks'
import { describeError } from './api.js'
import { ConsoleAddRunToDatasetDocument, ConsoleRunDocument, type ConsoleRunQuery } from './generated/graphql.js'
import { usePolled } from './hooks.js'
import { ToolCalls } from './tool-calls.js'

type Run = NonNullable<ConsoleRunQuery['run']>

const Row = ({ label, children }: { label: string; children: ComponentChildren }) => (
  <>
    <dt>{label}</dt>
    <dd>{children ?? '—'}</dd>
  </>
)
const time = (iso: string | null) => (iso ? new Date(iso).toLocaleTimeString() : null)
const json = (value: unknown) => <pre>{JSON.stringify(value, null, 2)}</pre>

/** Everything recorded of one run; read again when a run ends. */
/** Keeps the run's variables and input as an item of a dataset, with the answer it should give (its output by default). */
function AddToDataset({ client, runId, output }: { client: PromptlineClient; runId: string; output: string | null }) {
  const [said, setSaid] = useState<string | null>(null)
  const add = async (event: SubmitEvent) => {
    event.preventDefault()
    const form = new FormData(event.currentTarget as HTMLFormElement)
    const input = { datasetId: String(form.get('datasetId')), runId, expected: String(form.get('expected')) }
    const added = (await client.query(ConsoleAddRunToDatasetDocument, { input }).catch((error: unknown) => ({ error }))) as Record<string, unknown>
    const payload = added.addRunToDataset as { __typename: string; version?: { version: number }; message?: string } | undefined
    if (payload?.version) setSaid(`added: version ${payload.version.version}`)
    else setSaid(payload?.message ?? describeError(added.error))
  }
  return (
    <form aria-label="Add to dataset" onSubmit={add}>
      <input name="datasetId" placeholder="dataset id" required />
      <input name="expected" placeholder="expected answer" defaultValue={output ?? ''} />
      <button type="submit">Add to dataset</button>
      {said && <span data-testid="added">{said}</span>}
    </form>
  )
}

/** What the run was, used, cost and how it ended, as a list of facts. */
function RunFacts({ run }: { run: Run }) {
  return (
  <dl>
    <Row label="id">{run.id}</Row>
    <Row label="prompt">{run.promptId ? `${run.promptId} v${run.promptVersion}` : 'plain input'}</Row>
    <Row label="definition hash">{run.definitionHash?.slice(0, 16)}</Row>
    <Row label="rendered hash">{run.renderedHash?.slice(0, 16)}</Row>
    <Row label="profile · backend · model">{[run.profileId, run.backendId, run.model].filter(Boolean).join(' · ')}</Row>
    <Row label="usage">
      {run.usage &&
        `${run.usage.inputTokens} in (${run.usage.cacheReadTokens} cache read, ${run.usage.cacheWriteTokens} written) · ${run.usage.outputTokens} out (${run.usage.reasoningTokens} reasoning)`}
    </Row>
    <Row label="cost">{run.cost === null ? null : `$${run.cost.toFixed(6)} (${run.priceTable})`}</Row>
    <Row label="started · first token · finished">
      {[time(run.startedAt), time(run.firstTokenAt), time(run.finishedAt)].map((t) => t ?? '—').join(' · ')}
    </Row>
    <Row label="duration">{run.durationMs === null ? null : `${run.durationMs} ms`}</Row>
    <Row label="finish reason">{run.finishReason && `${run.finishReason} (${run.vendorFinishReason ?? 'none sent'})`}</Row>
    {run.refusal !== null && <Row label="refusal">{run.refusal}</Row>}
    {run.errorCode && <Row label="error">{`${run.errorCode}: ${run.errorMessage}`}</Row>}
    {run.validation && (
      <Row label="validation">
        {run.validation.valid ? 'valid' : 'invalid'} after {run.validation.attempts} attempt(s) {run.validation.errors.join('; ')}
      </Row>
    )}
  </dl>
  )
}

/** Each webhook post of the run's end, with its attempts. */
function WebhookDeliveries({ run }: { run: Run }) {
  return (
    <>
    {run.webhookDeliveries.map((d) => (
      <div key={d.id}>
        <h3>Webhook {d.status}</h3>
        <p>
          {new URL(d.url).origin} · {d.attempts.length} attempt(s)
          {d.nextAttemptAt && ` · next at ${time(d.nextAttemptAt)}`}
        </p>
        <ol>
          {d.attempts.map((a) => (
            <li key={a.at}>
              {time(a.at)}: {a.statusCode ?? '—'} {a.error}
            </li>
          ))}
        </ol>
      </div>
    ))}
    </>
  )
}

export function RunDetail({ client, runId, refresh }: { client: PromptlineClient; runId: string; refresh: number }) {
  // read again after a result is submitted here, as well as when a run ends
  const [submitted, setSubmitted] = useState(0)
  const { value, error } = usePolled(() => client.query(ConsoleRunDocument, { id: runId }), 0, [client, runId, refresh, submitted])
  const run = value?.run
  if (error) return <p class="error">{describeError(error)}</p>
  if (!run) return <p class="hint">{value ? `No run ${runId}.` : 'Loading…'}</p>
  return (
    <section class="run" data-testid="run-detail">
      <h2>
        Run <span class={`status ${run.status}`}>{run.status}</span>
        {run.terminalReason && <small> {run.terminalReason}</small>}
      </h2>
      <RunFacts run={run} />
      <ToolCalls client={client} run={run} onSubmitted={() => setSubmitted((n) => n + 1)} />
      <h3>Output</h3>
      <pre class="output">{run.output}</pre>
      <AddToDataset client={client} runId={run.id} output={run.output} />
      {run.parsedOutput != null && json(run.parsedOutput)}
      <h3>Settings</h3>
      {json(run.settings)}
      {run.failoverAttempts.length > 0 && (
        <>
          <h3>Failover attempts</h3>
          <ol>
            {run.failoverAttempts.map((a) => (
              <li key={a.attempt}>
                {a.profileId} · {a.backendId} · {a.model}: {a.outcome} {a.errorCode} ({a.durationMs} ms)
              </li>
            ))}
          </ol>
        </>
      )}
      {run.alternatives.length > 0 && (
        <>
          <h3>Alternatives</h3>
          <ol>
            {run.alternatives.map((a) => (
              <li key={a.profileId}>
                {a.profileId} · {a.model}: {a.status}
                {a.valid === false && ' (invalid)'} <pre>{a.output}</pre>
              </li>
            ))}
          </ol>
        </>
      )}
      <WebhookDeliveries run={run} />
    </section>
  )
}
