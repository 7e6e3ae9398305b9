import type { Logger } from '../domain/logger.js'
import type { Metrics } from '../domain/metrics.js'
import { afterAttempt, type WebhookAttempt, type WebhookDelivery, type WebhookSigners } from '../domain/webhooks.js'
import type { WebhookStore } from '../store/webhook-store.js'

export interface WebhookDispatcherOptions {
  /** Delays between attempts; once all are waited, the delivery is FAILED. */
  retryDelaysMs: readonly number[]
  /**
   * The longest the dispatcher sleeps between looks at the store when nothing it knows of is due:
   * what another instance created or claimed and then left (it died) is found within this.
   */
  idleLookMs: number
  /** One POST's bound. */
  attemptTimeoutMs: number
}

export const DEFAULT_WEBHOOK_TIMES = { idleLookMs: 30_000, attemptTimeoutMs: 15_000 }

/** Due deliveries taken per poll. */
const BATCH = 32
/** The longest error text kept of a failed attempt. */
const MAX_ERROR = 200

/**
 * Posts webhook deliveries: those a run's end just committed at once, then every due retry,
 * including those of an instance that died (their claims lapse). Each attempt is claimed in the
 * store first, so with several instances exactly one posts it. Between looks it sleeps until the
 * next attempt falls due (at most `idleLookMs`), so an idle server does not ask the store every
 * second. It owns its timer and its in-flight requests; `close()` stops both and gives
 * unfinished attempts back.
 */
export class WebhookDispatcher {
  private timer: NodeJS.Timeout | null = null
  /** When the armed timer fires (ms since the epoch). */
  private wakeAt = Number.POSITIVE_INFINITY
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
    // a full batch leaves more due now; else sleep until the next one is
    const next = due.length === BATCH ? now : await this.store.nextAttemptAt()
    this.wakeBy(next === null ? now.getTime() + this.options.idleLookMs : next.getTime())
    for (const delivery of due) {
      if (this.stopping.signal.aborted) return
      // the claim outlives the attempt, so no other instance posts it meanwhile
      const until = new Date(now.getTime() + 2 * this.options.attemptTimeoutMs)
      if (!(await this.store.claim(delivery.id, now, until))) continue
      const attempt = this.attempt(delivery)
        .catch((error) => this.logger.error('webhook attempt not recorded', { deliveryId: delivery.id, error: (error as Error).message }))
        .finally(() => this.inFlight.delete(attempt))
      this.inFlight.add(attempt)
    }
  }

  /** Arms the timer to look again by `at` (never later than `idleLookMs` from now). */
  private wakeBy(at: number): void {
    if (this.stopping.signal.aborted) return
    const when = Math.min(at, Date.now() + this.options.idleLookMs)
    if (this.timer !== null && this.wakeAt <= when) return
    if (this.timer !== null) clearTimeout(this.timer)
    this.wakeAt = when
    this.timer = setTimeout(
      () => {
        this.timer = null
        this.wakeAt = Number.POSITIVE_INFINITY
        this.poll()
      },
      Math.max(0, when - Date.now()),
    )
    this.timer.unref()
  }

  private async attempt(delivery: WebhookDelivery): Promise<void> {
    const log = this.logger.child({
      tenantId: delivery.tenantId,
      ...(delivery.runId ? { runId: delivery.runId } : { experimentId: delivery.experimentId ?? undefined }),
    })
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
    if (outcome.nextAttemptAt !== null) this.wakeBy(Date.parse(outcome.nextAttemptAt))
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
    if (this.timer) clearTimeout(this.timer)
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
