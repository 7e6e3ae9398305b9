import type { Logger } from '../domain/logger.js'

export interface TracingOptions {
  /** Where spans go (OTLP over HTTP), e.g. http://collector:4318/v1/traces. */
  tracesUrl: string
  serviceName: string
}

/** Flushes the spans not yet sent and stops exporting. */
export type StopTracing = () => Promise<void>

/**
 * Registers a tracer provider that batches spans to an OTLP endpoint, so the spans of
 * domain/tracing.ts are recorded (and log lines name their trace). Loaded only when an endpoint is
 * configured: a server without one never loads the SDK.
 */
export async function startTracing(options: TracingOptions, logger: Logger): Promise<StopTracing> {
  const [{ NodeTracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, { resourceFromAttributes }] = await Promise.all([
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
  ])
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': options.serviceName }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: options.tracesUrl }), { scheduledDelayMillis: 1_000 })],
  })
  // the global provider, and the AsyncLocalStorage context that makes a run's spans its children
  provider.register()
  logger.info('tracing to OTLP', { origin: new URL(options.tracesUrl).origin, serviceName: options.serviceName })
  return () => provider.shutdown()
}
