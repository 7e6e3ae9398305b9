import { z } from 'zod'
import type { SessionFork } from '../domain/records.js'
import type { ToolCall } from '../domain/tools.js'
import type { WebhookAttempt } from '../domain/webhooks.js'

// JSON columns of sessions, messages, queue entries and webhook deliveries, parsed as they are
// read (a run's are in run-json-columns.ts). A message's parts and an entry's request are still
// read as written: their stored forms keep the nulls a request may have sent.

export const sessionForkColumn: z.ZodType<SessionFork | null> = z.object({ sessionId: z.string(), atPosition: z.number() }).nullable()

const toolCall: z.ZodType<ToolCall> = z.object({ callId: z.string(), name: z.string(), arguments: z.string() })

/** An assistant message's tool calls; SQL NULL for none. */
export const toolCallsColumn = z.array(toolCall).nullable()

/** An entry's steers accepted and not applied. */
export const steerIdsColumn = z.array(z.string()).nullable()

const attempt: z.ZodType<WebhookAttempt> = z.object({
  at: z.string(),
  statusCode: z.number().nullable(),
  error: z.string().nullable(),
  durationMs: z.number(),
})

/** A delivery's attempts so far. */
export const attemptsColumn = z.array(attempt)
