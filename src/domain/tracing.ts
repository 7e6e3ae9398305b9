import { type Attributes, isSpanContextValid, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api'
import type { Usage } from './records.js'

/**
 * Spans through the OpenTelemetry API. Until the server registers a tracer provider (only when an
 * OTLP endpoint is configured: server/tracing.ts) every span is a no-op that costs a few calls.
 */
const tracer = () => trace.getTracer('promptline')

function failed(span: Span, error: unknown): void {
  const code = (error as { code?: unknown }).code
  span.setAttribute('error.type', typeof code === 'string' ? code : ((error as Error).name ?? 'Error'))
  span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message })
}

/** Runs `work` in a span, a child of the active one and the parent of those `work` opens; ERROR when it throws. */
export function inSpan<T>(name: string, attributes: Attributes, work: (span: Span) => Promise<T>): Promise<T> {
  return tracer().startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await work(span)
    } catch (error) {
      failed(span, error)
      throw error
    } finally {
      span.end()
    }
  })
}

/** Like `inSpan`, for synchronous work. */
export function inSpanSync<T>(name: string, attributes: Attributes, work: (span: Span) => T): T {
  return tracer().startActiveSpan(name, { attributes }, (span) => {
    try {
      return work(span)
    } catch (error) {
      failed(span, error)
      throw error
    } finally {
      span.end()
    }
  })
}

/** The trace and span of the active span, for a log line; nothing while tracing is off. */
export function activeTraceIds(): { traceId?: string; spanId?: string } {
  const context = trace.getActiveSpan()?.spanContext()
  return context && isSpanContextValid(context) ? { traceId: context.traceId, spanId: context.spanId } : {}
}

/** How a model call ended, for its span. */
export interface ModelCallOutcome {
  usage?: Usage
  finishReason?: string
  /** Set when the call failed: a reason such as RATE_LIMITED, or `aborted`. */
  errorType?: string
}

/** GenAI semantic conventions' provider names by backend kind or OpenAI-compatible dialect (others: the name in lower case). */
const PROVIDERS: Record<string, string> = {
  OPENAI: 'openai',
  ANTHROPIC: 'anthropic',
  GEMINI: 'gcp.gemini',
  AZURE_OPENAI: 'azure.ai.openai',
  FAKE: 'promptline.fake',
  GROQ: 'groq',
  DEEPSEEK: 'deepseek',
  MISTRAL: 'mistral_ai',
}

/**
 * One model call's span per the GenAI semantic conventions (`chat {model}`, a client span with
 * the request's model and settings, then the tokens and finish reason); `end` closes it (once:
 * later calls do nothing).
 */
export function startModelCallSpan(
  vendor: string,
  model: string,
  settings: { maxTokens?: number | null; temperature?: number | null; topP?: number | null },
): { end(outcome: ModelCallOutcome): void } {
  const attributes: Attributes = {
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': PROVIDERS[vendor] ?? vendor.toLowerCase(),
    'gen_ai.request.model': model,
  }
  if (settings.maxTokens != null) attributes['gen_ai.request.max_tokens'] = settings.maxTokens
  if (settings.temperature != null) attributes['gen_ai.request.temperature'] = settings.temperature
  if (settings.topP != null) attributes['gen_ai.request.top_p'] = settings.topP
  const span = tracer().startSpan(`chat ${model}`, { kind: SpanKind.CLIENT, attributes })
  let ended = false
  return {
    end({ usage, finishReason, errorType }) {
      if (ended) return
      ended = true
      if (usage) {
        span.setAttribute('gen_ai.usage.input_tokens', usage.inputTokens)
        span.setAttribute('gen_ai.usage.output_tokens', usage.outputTokens)
        if (usage.cacheReadTokens > 0) span.setAttribute('gen_ai.usage.cache_read.input_tokens', usage.cacheReadTokens)
        if (usage.cacheWriteTokens > 0) span.setAttribute('gen_ai.usage.cache_creation.input_tokens', usage.cacheWriteTokens)
      }
      if (finishReason) span.setAttribute('gen_ai.response.finish_reasons', [finishReason])
      if (errorType) {
        span.setAttribute('error.type', errorType)
        span.setStatus({ code: SpanStatusCode.ERROR })
      }
      span.end()
    },
  }
}

/**
 * A run's span: the root of its own trace (a run starts when its queue gets to it, not in the
 * request that admitted it), the parent of its model calls, validations, repairs and end write;
 * ERROR when the run FAILED.
 */
export function inRunSpan<
  T extends { status: string; terminalReason: string | null; errorCode: string | null; errorMessage: string | null },
>(run: { id: string; tenantId: string; sessionId: string | null; queueId: string | null }, work: () => Promise<T>): Promise<T> {
  const attributes: Attributes = { 'promptline.run.id': run.id, 'promptline.tenant.id': run.tenantId }
  if (run.sessionId) attributes['promptline.session.id'] = run.sessionId
  if (run.queueId) attributes['promptline.queue.id'] = run.queueId
  return tracer().startActiveSpan('promptline.run', { root: true, attributes }, async (span) => {
    try {
      const ended = await work()
      span.setAttribute('promptline.run.status', ended.status)
      if (ended.terminalReason) span.setAttribute('promptline.run.terminal_reason', ended.terminalReason)
      if (ended.status === 'FAILED') {
        span.setAttribute('error.type', ended.errorCode ?? 'FAILED')
        span.setStatus({ code: SpanStatusCode.ERROR, message: ended.errorMessage ?? undefined })
      }
      return ended
    } finally {
      span.end()
    }
  })
}
