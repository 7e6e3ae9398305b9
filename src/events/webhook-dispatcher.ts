import type { Logger } from '../domain/logger.js'
import type { Metrics } from '../domain/metrics.js'
import { afterAttempt, type WebhookAttempt, type WebhookDelivery, type WebhookSigners } from '../domain/webhooks.js'
import type { WebhookStore } from '../store/webhook-store.js'

export interface WebhookDispatcherOptions {
  /** Delays between attempts; once all are waited, the delivery is FAILED. */
  retryDelaysMs: readonly number[]
  /** How often the store is asked for due deliveries: retries, and those another instance left. */
  pollMs: number
  /** One POST's bound. */
  attemptTimeoutMs: number
}

export const DEFAULT_WEBHOOK_TIMES = { pollMs: 1_000, attemptTimeoutMs: 15_000 }

/** Due deliveries taken per poll. */
const BATCH = 32
/** The longest error text kept of a failed attempt. */
const MAX_ERROR = 200

/**
 * Posts webhook deliveries: those a run's end just committed at once, then every due retry,
 * including those of an instance that died (their claims lapse). Each attempt is claimed in the
 * store first, so with several instances exactly one posts it. It owns its poll timer and its
 * in-flight requests; `close()` stops both and gives unfinished attempts back.
 */
export class WebhookDispatcher {
  private timer: NodeJS.Timeout | null = null
  private polling: Promise<void> | null = null
  private again = false
  private readonly stopping = new AbortController()
  private readonly inFlight = new Set<Promise<void>>()
  private readonly unsubscribe: () => void

  constructor(
    private readonly store: WebhookStore,
    private readonly signers: WebhookSigners,
    private readonly options: WebhookDispatcherOptions,
    private readonly logger: Logger,
    private readonly metrics: Metrics,
  ) {
    this.unsubscribe = store.onCreated(() => this.poll())
  }

  start(): void {
    this.timer = setInterval(() => this.poll(), this.options.pollMs)
    this.timer.unref()
    this.poll()
  }

  /** Looks for due deliveries now (one look at a time; a call during one asks for another after it). */
  poll(): void {
    if (this.stopping.signal.aborted) return
    if (this.polling !== null) {
      this.again = true
      return
    }
    this.polling = this.pollOnce()
      .catch((error) => this.logger.error('webhook poll failed', { error: (error as Error).message }))
      .finally(() => {
        this.polling = null
        if (this.again) {
          this.again = false
          this.poll()
        }
      })
  }

  private async pollOnce(): Promise<void> {
    const now = new Date()
    const due = await this.store.due(now, BATCH)
    for (const delivery of due) {
      if (this.stopping.signal.aborted) return
      // the claim outlives the attempt, so no other instance posts it meanwhile
      const until = new Date(now.getTime() + this.options.attemptTimeoutMs + this.options.pollMs)
      if (!(await this.store.claim(delivery.id, now, until))) continue
      const attempt = this.attempt(delivery)
        .catch((error) => this.logger.error('webhook attempt not recorded', { deliveryId: delivery.id, error: (error as Error).message }))
        .finally(() => this.inFlight.delete(attempt))
      this.inFlight.add(attempt)
    }
  }

  private async attempt(delivery: WebhookDelivery): Promise<void> {
    const log = this.logger.child({ tenantId: delivery.tenantId, runId: delivery.runId })
    const at = new Date()
    const body = JSON.stringify(delivery.payload)
    let statusCode: number | null = null
    let error: string | null = null
    try {
      const headers = { 'content-type': 'application/json', ...this.signers.headers(delivery.tenantId, delivery.id, at, body) }
      const signal = AbortSignal.any([this.stopping.signal, AbortSignal.timeout(this.options.attemptTimeoutMs)])
      // a redirect is not followed: the receiver is the URL the client named
      const response = await fetch(delivery.url, { method: 'POST', headers, body, signal, redirect: 'manual' })
      statusCode = response.status
      await response.body?.cancel()
      if (statusCode < 200 || statusCode >= 300) error = `HTTP ${statusCode}${response.statusText ? ` ${response.statusText}` : ''}`
    } catch (caught) {
      if (this.stopping.signal.aborted) {
        await this.store.release(delivery.id, new Date())
        return
      }
      error = describe(caught)
    }
    const attempt: WebhookAttempt = { at: at.toISOString(), statusCode, error, durationMs: Date.now() - at.getTime() }
    const outcome = afterAttempt(delivery, attempt, this.options.retryDelaysMs)
    await this.store.settle(delivery.id, outcome)
    this.metrics.webhookAttempted(outcome.status === 'PENDING' ? 'retrying' : outcome.status === 'DELIVERED' ? 'delivered' : 'failed')
    // the URL's origin only: its path or query may carry the receiver's own token
    const where = { deliveryId: delivery.id, origin: new URL(delivery.url).origin, attempt: outcome.attempts.length, statusCode }
    if (outcome.status === 'DELIVERED') log.debug('webhook delivered', where)
    else if (outcome.status === 'PENDING')
      log.info('webhook attempt failed; retrying', { ...where, error, nextAttemptAt: outcome.nextAttemptAt })
    else log.warn('webhook delivery failed for good', { ...where, error })
  }

  /** Stops polling and posting; attempts under way are cut off and their deliveries given back, due now. */
  async close(): Promise<void> {
    this.unsubscribe()
    if (this.timer) clearInterval(this.timer)
    this.stopping.abort()
    await this.polling
    await Promise.all(this.inFlight)
  }
}

function describe(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause
  const text = cause?.code ?? cause?.message ?? (error as Error).message ?? String(error)
  return (error as Error).name === 'TimeoutError' ? 'timed out' : text.slice(0, MAX_ERROR)
}
