import type { PromptlineClient } from 'promptline/client'
import { useState } from 'preact/hooks'
import { ConsoleComparisonDocument, type ConsoleComparisonQuery, ConsoleExperimentDocument, ConsoleExperimentsDocument } from './generated/graphql.js'
import { usePolled } from './hooks.js'

const score = (value: number | null | undefined) => (value == null ? '–' : value.toFixed(2))
const text = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value))

/** The experiments, newest first, their status and progress kept live; two picked are compared. */
export function Experiments({ client }: { client: PromptlineClient }) {
  const { value } = usePolled(() => client.query(ConsoleExperimentsDocument, {}), 1_000, [client])
  const [picked, setPicked] = useState<string[]>([])
  const experiments = value?.experiments.edges.map((e) => e.node) ?? []
  const pick = (id: string) => setPicked((now) => (now.includes(id) ? now.filter((p) => p !== id) : [...now, id].slice(-2)))
  return (
    <section aria-label="Experiments">
      <h2>Experiments</h2>
      <table data-testid="experiments">
        <thead>
          <tr>
            <th>compare</th>
            <th>name</th>
            <th>prompt</th>
            <th>dataset</th>
            <th>status</th>
            <th>progress</th>
            <th>pass rate</th>
          </tr>
        </thead>
        <tbody>
          {experiments.map((e) => (
            <tr key={e.id}>
              <td>
                <input type="checkbox" aria-label={`compare ${e.name}`} checked={picked.includes(e.id)} onChange={() => pick(e.id)} />
              </td>
              <td>
                <a href={`#/experiments/${encodeURIComponent(e.id)}`}>{e.name}</a>
              </td>
              <td>
                {e.promptId} v{e.promptVersion}
              </td>
              <td>
                {e.datasetId} v{e.datasetVersion}
              </td>
              <td>{e.status}</td>
              <td>
                <meter min={0} max={e.progress.total} value={e.progress.done} /> {e.progress.done}/{e.progress.total}
              </td>
              <td>{score(e.summary.passRate)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {picked.length === 2 && (
        <a href={`#/experiments/compare/${picked.map(encodeURIComponent).join('/')}`} data-testid="compare-link">
          Compare the two (the first picked is the base)
        </a>
      )}
    </section>
  )
}

/** One experiment: its summary and each item with its expected answer, outputs and scores. */
export function ExperimentDetail({ client, id }: { client: PromptlineClient; id: string }) {
  const { value } = usePolled(() => client.query(ConsoleExperimentDocument, { id }), 1_000, [client, id])
  const e = value?.experiment
  if (!e) return <p class="hint">Loading the experiment…</p>
  return (
    <section aria-label="Experiment" data-testid="experiment">
      <h2>{e.name}</h2>
      <p>
        {e.status}
        {e.errorMessage && `: ${e.errorMessage}`} · {e.promptId} v{e.promptVersion} over {e.datasetId} v{e.datasetVersion} · {e.progress.done}/
        {e.progress.total} · pass rate {score(e.summary.passRate)} · {e.summary.meanScores.map((m) => `${m.scorer} ${score(m.mean)}`).join(', ')}
      </p>
      <table>
        <thead>
          <tr>
            <th>input</th>
            <th>expected</th>
            <th>outputs</th>
            <th>scores</th>
            <th>mean ± spread</th>
          </tr>
        </thead>
        <tbody>
          {e.items.edges.map(({ node }) => (
            <tr key={node.item.id}>
              <td>{node.item.input ?? text(node.item.variables)}</td>
              <td>{text(node.item.expected)}</td>
              <td>{node.runs.map((r) => r.run?.output ?? r.status).join(' | ')}</td>
              <td>{node.runs.map((r) => (r.scores ?? []).map((s) => `${s.scorer} ${score(s.value)}`).join(', ')).join(' | ')}</td>
              <td>
                {score(node.meanScore)} ± {score(node.spread)}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  )
}

type Comparison = ConsoleComparisonQuery

/** A bar for each side of a measure, scaled to the larger, with the values. */
function Bars({ label, base, candidate }: { label: string; base: number | null; candidate: number | null }) {
  const most = Math.max(base ?? 0, candidate ?? 0) || 1
  const width = (value: number | null) => Math.round(((value ?? 0) / most) * 160)
  return (
    <svg class="bars" width={380} height={44} role="img" aria-label={`${label}: base ${score(base)}, candidate ${score(candidate)}`} data-testid={`bars-${label}`}>
      <text x={0} y={26}>
        {label}
      </text>
      <rect class="base" x={120} y={4} height={16} width={width(base)} />
      <text x={126 + width(base)} y={17}>
        {score(base)}
      </text>
      <rect class="candidate" x={120} y={24} height={16} width={width(candidate)} />
      <text x={126 + width(candidate)} y={37}>
        {score(candidate)}
      </text>
    </svg>
  )
}

/** Each item's base score against its candidate score: above the diagonal improved, below regressed. */
function ItemChart({ items }: { items: Comparison['compareExperiments']['items'] }) {
  const size = 220
  const at = (value: number | null | undefined) => 10 + (value ?? 0) * (size - 20)
  return (
    <svg width={size} height={size} role="img" aria-label="base score (across) against candidate score (up), one dot per item" data-testid="item-chart">
      <line x1={10} y1={size - 10} x2={size - 10} y2={10} class="diagonal" />
      {items.map((i) => (
        <circle key={i.itemId} class={i.change.toLowerCase()} cx={at(i.base.meanScore)} cy={size - at(i.candidate.meanScore)} r={5}>
          <title>
            {i.itemId}: {score(i.base.meanScore)} → {score(i.candidate.meanScore)} ({i.change})
          </title>
        </circle>
      ))}
    </svg>
  )
}

/** Two experiments side by side: what improved and regressed, per item, and pass rate, cost and latency. */
export function ExperimentComparison({ client, baseId, candidateId }: { client: PromptlineClient; baseId: string; candidateId: string }) {
  const { value: c } = usePolled(() => client.query(ConsoleComparisonDocument, { baseId, candidateId }), 0, [client, baseId, candidateId])
  if (!c?.base || !c.candidate) return <p class="hint">Loading the comparison…</p>
  const { base, candidate, compareExperiments: compared } = c
  return (
    <section aria-label="Comparison" data-testid="comparison">
      <h2>
        {candidate.name} against {base.name}
      </h2>
      <p data-testid="counts">
        {compared.improvements} improved, {compared.regressions} regressed, {compared.unchanged} unchanged
      </p>
      <p class="hint">Each dot is an item: across, its base score; up, its candidate score (green improved, red regressed). Bars: grey the base, blue the candidate.</p>
      <ItemChart items={compared.items} />
      <Bars label="pass rate" base={base.summary.passRate} candidate={candidate.summary.passRate} />
      <Bars label="cost USD" base={base.summary.costUsd} candidate={candidate.summary.costUsd} />
      <Bars label="latency p50 ms" base={base.summary.latencyP50Ms} candidate={candidate.summary.latencyP50Ms} />
    </section>
  )
}

