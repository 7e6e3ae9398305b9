import type { DeliveryStatus, WebhookAttempt, WebhookDelivery } from '../domain/webhooks.js'
import { builder } from './builder.js'
import { describedValues } from './described.js'
import { RunRef } from './run.js'

const DeliveryStatusEnum = builder.enumType('WebhookDeliveryStatus', {
  description: 'Where a webhook delivery is: PENDING → DELIVERED | FAILED.',
  values: describedValues<DeliveryStatus>({
    PENDING: 'Not landed yet: its next attempt is due at nextAttemptAt.',
    DELIVERED: 'An attempt got a 2xx answer.',
    FAILED: 'Every attempt of the retry schedule (PROMPTLINE_WEBHOOK_RETRY_MS) failed; no more are made.',
  }),
})

const WebhookAttemptRef = builder.objectRef<WebhookAttempt>('WebhookAttempt').implement({
  description: 'One POST of a webhook delivery.',
  fields: (t) => ({
    at: t.field({ type: 'DateTime', description: 'When the POST was sent.', resolve: (a) => a.at }),
    statusCode: t.exposeInt('statusCode', { nullable: true, description: "The receiver's HTTP status; null when none came." }),
    error: t.exposeString('error', {
      nullable: true,
      description: 'Why it did not land (the HTTP status, a timeout, a refused connection); null when it landed.',
    }),
    durationMs: t.exposeInt('durationMs', { description: 'How long the POST took.' }),
  }),
})

const WebhookDeliveryRef = builder.objectRef<WebhookDelivery>('WebhookDelivery').implement({
  description:
    "An event posted to a webhook, signed per Standard Webhooks (webhook-id, webhook-timestamp, webhook-signature headers) with the tenant's secret, retried on the configured schedule until it lands.",
  fields: (t) => ({
    id: t.exposeID('id', { description: 'The webhook-id header: the same on every attempt, so a receiver can drop repeats.' }),
    event: t.exposeString('event', { description: 'The event type, the body\'s "type": run.finished.' }),
    url: t.exposeString('url', { description: 'Where it is posted.' }),
    status: t.field({ type: DeliveryStatusEnum, description: 'Whether it landed.', resolve: (d) => d.status }),
    attempts: t.field({ type: [WebhookAttemptRef], description: 'Every POST so far, oldest first.', resolve: (d) => d.attempts }),
    nextAttemptAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'When the next attempt is due (while one is under way: when its claim lapses); null once DELIVERED or FAILED.',
      resolve: (d) => (d.status === 'PENDING' ? d.nextAttemptAt : null),
    }),
  }),
})

builder.objectField(RunRef, 'webhookDeliveries', (t) =>
  t.field({
    type: [WebhookDeliveryRef],
    description: "The posts of this run's end to its webhook; empty when its prompt and session named none, or while it is live.",
    resolve: (run, _args, ctx) => ctx.services.runs.webhookDeliveries(ctx.tenantId, run.id),
  }),
)
