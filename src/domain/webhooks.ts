import { Webhook } from 'standardwebhooks'
import { z } from 'zod'
import { ID_PATTERN } from './definitions.js'
import { InvalidRequestError } from './errors.js'
import type { RunRecord } from './records.js'

/** Where a run's end is posted: an absolute http(s) URL. */
export const webhookUrlSchema = z
  .url({ protocol: /^https?$/, error: 'must be an absolute http:// or https:// URL' })
  .max(2048, 'must be at most 2048 characters')

/** A run ended. */
const RUN_FINISHED_EVENT = 'run.finished'
/** A run waits for tool results. */
const RUN_REQUIRES_ACTION_EVENT = 'run.requires_action'

/** A delivery's status: PENDING until one attempt lands (DELIVERED) or the retry schedule is spent (FAILED). */
const DELIVERY_STATUSES = ['PENDING', 'DELIVERED', 'FAILED'] as const
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number]

/** One POST of a delivery. */
export interface WebhookAttempt {
  at: string
  /** The receiver's HTTP status; null when none came (refused, timed out). */
  statusCode: number | null
  /** Why no 2xx came: the status line or the network error; null on success. */
  error: string | null
  durationMs: number
}

/** One event for one run or experiment, posted until it lands or the schedule is spent. Its id is the `webhook-id`. */
export interface WebhookDelivery {
  id: string
  tenantId: string
  /** The run whose end or wait it tells; null for an experiment's end. */
  runId: string | null
  /** The experiment whose end it tells; null for a run's. */
  experimentId: string | null
  url: string
  event: string
  /** The body every attempt posts (Standard Webhooks: `type`, `timestamp`, `data`). */
  payload: Record<string, unknown>
  status: DeliveryStatus
  attempts: WebhookAttempt[]
  /** When the next attempt is due (or, while one is under way, when its claim lapses); null once ended. */
  nextAttemptAt: string | null
  createdAt: string
}

/** The `webhook-id` of a run's end: stable, so a receiver drops a repeat (Standard Webhooks is at-least-once). */
const deliveryIdOf = (runId: string) => `run_${runId}`

/** The delivery a run's end creates: due at once. */
export function runFinishedDelivery(run: RunRecord, url: string): WebhookDelivery {
  const at = run.finishedAt ?? new Date().toISOString()
  const data = {
    runId: run.id,
    sessionId: run.sessionId,
    queueId: run.queueId,
    status: run.status,
    terminalReason: run.terminalReason,
    finishReason: run.finishReason,
    vendorFinishReason: run.vendorFinishReason,
    refusal: run.refusal,
    promptId: run.promptId,
    promptVersion: run.promptVersion,
    backendId: run.backendId,
    model: run.model,
    output: run.output,
    parsedOutput: run.parsedOutput ?? null,
    errorCode: run.errorCode,
    errorMessage: run.errorMessage,
    usage: run.usage,
    costUsd: run.costUsd,
    startedAt: run.startedAt,
    finishedAt: run.finishedAt,
  }
  return newDelivery(deliveryIdOf(run.id), run, url, RUN_FINISHED_EVENT, data, at)
}

/** The delivery of a run's wait for the results of a round of tool calls (`round`: its index): due at once. */
export function runRequiresActionDelivery(run: RunRecord, url: string, round: number): WebhookDelivery {
  const at = new Date().toISOString()
  const calls = run.toolRounds[round]?.calls ?? []
  const data = {
    runId: run.id,
    sessionId: run.sessionId,
    queueId: run.queueId,
    status: run.status,
    round,
    pendingToolCalls: calls.map(({ callId, name, arguments: args }) => ({ callId, name, arguments: args })),
  }
  return newDelivery(`${deliveryIdOf(run.id)}_round_${round}`, run, url, RUN_REQUIRES_ACTION_EVENT, data, at)
}

function newDelivery(id: string, run: RunRecord, url: string, event: string, data: unknown, at: string): WebhookDelivery {
  return {
    id,
    tenantId: run.tenantId,
    runId: run.id,
    experimentId: null,
    url,
    event,
    payload: { type: event, timestamp: at, data },
    status: 'PENDING',
    attempts: [],
    nextAttemptAt: at,
    createdAt: at,
  }
}

/**
 * Where a delivery goes after an attempt: DELIVERED on a 2xx; else PENDING again after the
 * schedule's next delay, or FAILED once every delay has been waited. The one place its
 * transitions are decided.
 */
export function afterAttempt(
  delivery: Pick<WebhookDelivery, 'attempts'>,
  attempt: WebhookAttempt,
  retryDelaysMs: readonly number[],
): { status: DeliveryStatus; attempts: WebhookAttempt[]; nextAttemptAt: string | null } {
  const attempts = [...delivery.attempts, attempt]
  const landed = attempt.statusCode !== null && attempt.statusCode >= 200 && attempt.statusCode < 300
  if (landed) return { status: 'DELIVERED', attempts, nextAttemptAt: null }
  const delay = retryDelaysMs[attempts.length - 1]
  if (delay === undefined) return { status: 'FAILED', attempts, nextAttemptAt: null }
  return { status: 'PENDING', attempts, nextAttemptAt: new Date(Date.parse(attempt.at) + attempt.durationMs + delay).toISOString() }
}

/** The default retry schedule: the first retries within seconds, the last half an hour after. */
export const DEFAULT_RETRY_DELAYS_MS: readonly number[] = [1_000, 5_000, 30_000, 300_000, 1_800_000]

/** Parses `PROMPTLINE_WEBHOOK_RETRY_MS`: delays in ms between attempts, separated by commas. */
export function parseRetryDelays(text: string): number[] {
  const delays = text.split(',').map((d) => d.trim())
  if (delays.some((d) => !/^\d{1,10}$/.test(d))) throw new Error('must be delays in milliseconds separated by commas, e.g. 1000,5000,30000')
  if (delays.length > 20) throw new Error('must list at most 20 delays')
  return delays.map(Number)
}

/** A signing secret in the Standard Webhooks format: `whsec_` and at least 24 random bytes in base64. */
export function checkSecret(secret: string): string {
  const key = secret.startsWith('whsec_') ? Buffer.from(secret.slice('whsec_'.length), 'base64') : null
  if (!key || key.length < 24) throw new Error('must be whsec_ followed by at least 24 bytes in base64')
  return secret
}

/** Parses `PROMPTLINE_WEBHOOK_SECRETS`: `tenant:whsec_…` entries separated by commas or white space. */
export function parseWebhookSecrets(text: string): Map<string, string> {
  const secrets = new Map<string, string>()
  const entries = text.split(/[\s,]+/).filter(Boolean)
  entries.forEach((entry, index) => {
    const where = `entry ${index + 1} of ${entries.length}`
    const colon = entry.indexOf(':')
    const tenantId = entry.slice(0, colon)
    if (colon < 0 || !ID_PATTERN.test(tenantId)) throw new Error(`${where} is not tenant:whsec_…`)
    try {
      secrets.set(tenantId, checkSecret(entry.slice(colon + 1)))
    } catch (error) {
      throw new Error(`${where} ${(error as Error).message}`)
    }
  })
  return secrets
}

/** The tenants' signing keys; a tenant without one may not name a webhook. */
export class WebhookSigners {
  private readonly signers = new Map<string, Webhook>()

  constructor(secrets: ReadonlyMap<string, string>) {
    for (const [tenantId, secret] of secrets) this.signers.set(tenantId, new Webhook(secret))
  }

  /** The Standard Webhooks headers of one attempt. */
  headers(tenantId: string, id: string, at: Date, body: string): Record<string, string> {
    const signer = this.signers.get(tenantId)
    if (!signer) throw new Error(`no webhook secret for tenant ${tenantId}`)
    return {
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': signer.sign(id, at, body),
    }
  }

  /** Refuses a webhook URL for a tenant that has no secret to sign with. */
  requireFor(tenantId: string, field: string): void {
    if (!this.signers.has(tenantId)) {
      throw InvalidRequestError.at(
        field,
        `no webhook secret is configured for tenant '${tenantId}' (PROMPTLINE_WEBHOOK_SECRET for the local tenant, PROMPTLINE_WEBHOOK_SECRETS for others)`,
      )
    }
  }
}

/** The event an experiment's end posts, whatever its end status (`data.status` says which). */
const EXPERIMENT_COMPLETED_EVENT = 'experiment.completed'

/** The delivery an experiment's end creates: due at once, its id stable (`experiment_<id>`). */
export function experimentEndedDelivery(
  tenantId: string,
  experimentId: string,
  url: string,
  data: Record<string, unknown>,
): WebhookDelivery {
  const at = new Date().toISOString()
  return {
    id: `experiment_${experimentId}`,
    tenantId,
    runId: null,
    experimentId,
    url,
    event: EXPERIMENT_COMPLETED_EVENT,
    payload: { type: EXPERIMENT_COMPLETED_EVENT, timestamp: at, data },
    status: 'PENDING',
    attempts: [],
    nextAttemptAt: at,
    createdAt: at,
  }
}
