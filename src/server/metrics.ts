import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client'
import type { CapacitySnapshot } from '../capacity/capacity-pool.js'
import type { Metrics } from '../domain/metrics.js'
import type { RunRecord } from '../domain/records.js'
import type { RequestStage } from '../domain/request-timing.js'

/** What the gauges read when Prometheus scrapes. */
export interface MetricSources {
  queueDepth(): number
  capacity(): { backendId: string; snapshot: CapacitySnapshot }[]
  openSubscriptions(): number
  /** Whether each dependency answers now (the database; Redis with several instances). */
  dependencies(): Promise<{ dependency: string; up: boolean }[]>
}

const seconds = (from: string, to: string) => (Date.parse(to) - Date.parse(from)) / 1000

/** The OpenAI API's requests: the server's own time on each, and its stages. */
function requestHistograms(registers: Registry[]): [Histogram, Histogram<'stage'>] {
  // sub-millisecond buckets: a gateway's own time is judged in them
  const buckets = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1]
  return [
    new Histogram({
      name: 'promptline_openai_overhead_seconds',
      help: 'The server’s own time on an OpenAI API (/v1) request: its total less its vendor calls’ (x-promptline-overhead-ms).',
      buckets,
      registers,
    }),
    new Histogram({
      name: 'promptline_openai_stage_seconds',
      help: 'An OpenAI API request’s stages (its Server-Timing): auth, admission, first-token, record.',
      labelNames: ['stage'],
      buckets,
      registers,
    }),
  ]
}

/** Ended runs: counts, tokens, cost and timings, by backend and model. */
function runSeries(registers: Registry[]) {
  return {
    runs: new Counter({
      name: 'promptline_runs_total',
      help: 'Runs ended, by status, backend and model.',
      labelNames: ['status', 'backend', 'model'],
      registers,
    }),
    tokens: new Counter({
      name: 'promptline_tokens_total',
      help: 'Tokens of ended runs, by direction (input, output), backend and model.',
      labelNames: ['direction', 'backend', 'model'],
      registers,
    }),
    cost: new Counter({
      name: 'promptline_cost_usd_total',
      help: 'USD of ended runs that had a price, by backend and model.',
      labelNames: ['backend', 'model'],
      registers,
    }),
    firstToken: new Histogram({
      name: 'promptline_first_token_seconds',
      help: 'From a run’s start to its first token.',
      labelNames: ['backend', 'model'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30],
      registers,
    }),
    duration: new Histogram({
      name: 'promptline_run_duration_seconds',
      help: 'From a run’s start to its end, by status.',
      labelNames: ['status', 'backend', 'model'],
      buckets: [0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300],
      registers,
    }),
  }
}

/** The server's own work: admission refusals, the event writer, webhook deliveries. */
function workSeries(registers: Registry[]) {
  return {
    refusals: new Counter({
      name: 'promptline_admission_refusals_total',
      help: 'Prompts refused at admission, by the limit that refused them (or sessionBusy, budget).',
      labelNames: ['reason'],
      registers,
    }),
    writeLag: new Histogram({
      name: 'promptline_event_write_lag_seconds',
      help: 'From publishing an event to its batch being written (the oldest event of each batch).',
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5],
      registers,
    }),
    eventsWrittenTotal: new Counter({
      name: 'promptline_events_written_total',
      help: 'Session events written by the batched writer (a run’s last events go in its end’s transaction).',
      registers,
    }),
    webhookAttempts: new Counter({
      name: 'promptline_webhook_attempts_total',
      help: 'Webhook POSTs made, by outcome: delivered, retrying (failed, another try is due) or failed (the schedule is spent).',
      labelNames: ['outcome'],
      registers,
    }),
  }
}

/** promptline's own series in one registry (Yoga's Prometheus plugin adds the GraphQL ones to it). */
export class PrometheusMetrics implements Metrics {
  readonly registry = new Registry()
  private readonly ended: ReturnType<typeof runSeries>
  private readonly work: ReturnType<typeof workSeries>
  private readonly overhead: Histogram
  private readonly stages: Histogram<'stage'>
  private sources: MetricSources | null = null

  constructor() {
    const registers = [this.registry]
    // the process's own: CPU, resident memory, heap, event-loop lag, open handles. The lag is
    // sampled every 100 ms, not prom-client's 10: its timer alone woke an idle server 100 times a second
    collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: 100 })
    this.ended = runSeries(registers)
    this.work = workSeries(registers)
    ;[this.overhead, this.stages] = requestHistograms(registers)
    this.registerGauges(registers)
  }

  /** The gauges, read from `sources` when Prometheus scrapes. */
  private registerGauges(registers: Registry[]): void {
    const self = this
    new Gauge({
      name: 'promptline_queue_depth',
      help: 'Entries queued, scheduled or running in the sessions this instance runs.',
      registers,
      collect() {
        this.set(self.sources?.queueDepth() ?? 0)
      },
    })
    new Gauge({
      name: 'promptline_open_subscriptions',
      help: 'GraphQL subscriptions open on this instance.',
      registers,
      collect() {
        this.set(self.sources?.openSubscriptions() ?? 0)
      },
    })
    new Gauge({
      name: 'promptline_dependency_up',
      help: 'Whether a dependency answers this instance: 1 up, 0 down (database; redis with several instances).',
      labelNames: ['dependency'],
      registers,
      async collect() {
        this.reset()
        for (const { dependency, up } of (await self.sources?.dependencies()) ?? []) this.set({ dependency }, up ? 1 : 0)
      },
    })
    const capacity = (name: string, help: string, read: (s: CapacitySnapshot) => number) =>
      new Gauge({
        name,
        help,
        labelNames: ['backend'],
        registers,
        collect() {
          this.reset()
          for (const { backendId, snapshot } of self.sources?.capacity() ?? []) this.set({ backend: backendId }, read(snapshot))
        },
      })
    capacity('promptline_capacity_active_limit', 'The adaptive limit of model calls in flight per backend.', (s) => s.activeLimit)
    capacity('promptline_capacity_active', 'Model calls in flight per backend.', (s) => s.active)
    capacity(
      'promptline_capacity_waiting',
      'Runs waiting for a lease, plus calls waiting for a permit, per backend.',
      (s) => s.waiting + s.callsWaiting,
    )
  }

  /** The gauges' readings, once the parts they read exist. */
  readFrom(sources: MetricSources): void {
    this.sources = sources
  }

  runFinished(run: RunRecord): void {
    const labels = { backend: run.backendId ?? 'none', model: run.model ?? 'none' }
    this.ended.runs.inc({ ...labels, status: run.status })
    if (run.finishedAt) this.ended.duration.observe({ ...labels, status: run.status }, seconds(run.startedAt, run.finishedAt))
    if (run.firstTokenAt) this.ended.firstToken.observe(labels, seconds(run.startedAt, run.firstTokenAt))
    if (run.usage) {
      this.ended.tokens.inc({ ...labels, direction: 'input' }, run.usage.inputTokens)
      this.ended.tokens.inc({ ...labels, direction: 'output' }, run.usage.outputTokens)
    }
    if (run.costUsd !== null) this.ended.cost.inc(labels, run.costUsd)
  }

  admissionRefused(reason: string): void {
    this.work.refusals.inc({ reason })
  }

  eventsWritten(count: number, lagMs: number): void {
    this.work.eventsWrittenTotal.inc(count)
    this.work.writeLag.observe(lagMs / 1000)
  }

  /** An OpenAI API request was answered (a stream: its headers sent). */
  requestTimed(overheadMs: number, stages: Partial<Record<RequestStage, number>>): void {
    this.overhead.observe(overheadMs / 1000)
    for (const [stage, ms] of Object.entries(stages)) this.stages.observe({ stage }, ms / 1000)
  }

  webhookAttempted(outcome: 'delivered' | 'retrying' | 'failed'): void {
    this.work.webhookAttempts.inc({ outcome })
  }
}
