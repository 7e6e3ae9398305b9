import { useGraphQLSSE } from '@graphql-yoga/plugin-graphql-sse'
import { usePrometheus } from '@graphql-yoga/plugin-prometheus'
import type { GraphQLSchema } from 'graphql'
import { createYoga, type Plugin, type YogaServerInstance } from 'graphql-yoga'
import type { Principal } from '../domain/access.js'
import { type ErrorCode, UnauthenticatedError } from '../domain/errors.js'
import type { RequestLimits } from '../domain/limits.js'
import type { Logger } from '../domain/logger.js'
import type { Context, Services } from '../schema/context.js'
import { maskError } from '../schema/errors.js'
import type { AgUiRunService } from '../services/ag-ui-runs.js'
import type { FileService } from '../services/file-service.js'
import type { KeyLimiter } from '../services/key-limits.js'
import type { KeyRing } from '../services/key-ring.js'
import type { McpPromptService } from '../services/mcp-prompts.js'
import { useAgUi } from './ag-ui-api.js'
import { useCompiledSubscriptions } from './compiled-subscriptions.js'
import { useConsole } from './console.js'
import { useDatasetLines } from './datasets-api.js'
import { useFileUploads } from './files.js'
import { GRAPHIQL_OPTIONS, renderSelfHostedGraphiQL } from './graphiql.js'
import { requestLimitPlugins } from './limits.js'
import { useMcpServer } from './mcp-api.js'
import type { PrometheusMetrics } from './metrics.js'
import type { OpenSubscriptions } from './open-subscriptions.js'
import { type OpenAIServices, useOpenAIApi } from './openai-api.js'
import { useRequestLog } from './request-log.js'

/** Where graphql-sse clients connect, in either mode of the GraphQL-over-SSE protocol. */
const SSE_ENDPOINT = '/graphql/stream'

export type PromptlineYoga = YogaServerInstance<Record<string, unknown>, Context>

/** What the load balancer and the orchestrator ask. */
export interface Probes {
  /** Throws when the server is not alive (its database does not answer). */
  ping(): Promise<void>
  /** Why the server should get no new traffic (database, migrations, draining), or null. */
  unready(): Promise<string | null>
}

/**
 * `GET /healthz`: 200 while the database answers. `GET /readyz`: 200 while the server should
 * get traffic: database reachable, migrations applied, not draining; 503 with the reason when not.
 */
function useProbes(probes: Probes, logger: Logger): Plugin {
  return {
    async onRequest({ url, endResponse, fetchAPI }) {
      if (url.pathname !== '/healthz' && url.pathname !== '/readyz') return
      const health = url.pathname === '/healthz'
      let reason: string | null = null
      try {
        if (health) await probes.ping()
        else reason = await probes.unready()
      } catch (err) {
        logger.warn('health check failed', { error: (err as Error).message })
        reason = 'the database does not answer'
      }
      endResponse(
        reason === null
          ? fetchAPI.Response.json({ status: health ? 'ok' : 'ready' })
          : fetchAPI.Response.json({ status: 'unavailable', reason }, { status: 503 }),
      )
    },
  }
}

/** A document that does not validate against the schema is the client's mistake: INVALID_REQUEST. */
const useValidationErrorCode: Plugin = {
  onValidate() {
    return ({ valid, result }) => {
      if (valid) return
      for (const error of result)
        (error as { extensions: Record<string, unknown> }).extensions.code ??= 'INVALID_REQUEST' satisfies ErrorCode
    }
  },
}

/** The GraphQL app with no listener: tests call `yoga.fetch`, http.ts serves it. */
export function createPromptlineYoga(options: {
  schema: GraphQLSchema
  services: Services
  files: FileService
  probes: Probes
  logger: Logger
  keys: KeyRing
  limiter: KeyLimiter
  /** The OpenAI API under /v1. */
  openai: OpenAIServices
  /** The MCP server at /mcp. */
  mcp: McpPromptService
  /** AG-UI at /ag-ui. */
  agUi: AgUiRunService
  limits: RequestLimits
  metrics: PrometheusMetrics
  subscriptions: OpenSubscriptions
}): PromptlineYoga {
  const { schema, services, logger } = options
  return createYoga<Record<string, unknown>, Context>({
    schema,
    graphqlEndpoint: '/graphql',
    graphiql: options.limits.publicSchema && GRAPHIQL_OPTIONS,
    renderGraphiQL: renderSelfHostedGraphiQL,
    landingPage: false,
    // a declared length over the cap is refused before reading; a chunked body as it crosses it
    maxRequestBodySize: options.limits.maxBodyBytes,
    maskedErrors: { maskError },
    // yoga logs every error it masks, a client's mistakes included: at debug; useRequestLog logs
    // the unexpected ones at error, with their request id
    logging: { ...logger, error: logger.debug },
    // HTTP and SSE carry the key in a header; graphql-ws authenticated the socket and passes its principal
    context: async (initial: { request?: Request; principal?: Principal }): Promise<Context> => {
      const principal = initial.principal ?? (await options.keys.authenticate(initial.request?.headers.get('authorization')))
      if (!principal) throw new UnauthenticatedError('a valid API key is required: send Authorization: Bearer <key>')
      return { ...principal, services }
    },
    plugins: [
      useProbes(options.probes, logger),
      useFileUploads(options.files, options.keys, options.limiter),
      useDatasetLines(services.datasets, options.keys, options.limiter),
      useOpenAIApi(
        options.openai,
        { keys: options.keys, limiter: options.limiter, inFlight: options.limits.apiRequestsInFlight },
        options.metrics,
        logger,
      ),
      useMcpServer(options.mcp, options.keys, options.limiter, logger),
      useAgUi(options.agUi, options.keys, options.limiter, logger),
      useConsole(),
      useRequestLog(logger),
      ...requestLimitPlugins(options.limits, options.subscriptions, options.limiter),
      // GET /metrics: promptline's series and Yoga's GraphQL operation series, one registry. The
      // schema deprecates nothing, so the deprecated-field count would walk every request's
      // document to count zeros (0.1 ms a request, measured)
      usePrometheus({ registry: options.metrics.registry, endpoint: '/metrics', metrics: { graphql_envelop_deprecated_field: false } }),
      useValidationErrorCode,
      useCompiledSubscriptions(),
      // GraphQL over SSE: distinct connections on /graphql (yoga's own) and on /graphql/stream,
      // single connection mode (one reserved stream per client, operations by PUT/POST) on /graphql/stream
      useGraphQLSSE({ endpoint: SSE_ENDPOINT }),
    ],
  })
}
