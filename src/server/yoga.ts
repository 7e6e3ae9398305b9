import type { GraphQLSchema } from 'graphql'
import { createYoga, type Plugin, type YogaServerInstance } from 'graphql-yoga'
import type { Principal } from '../domain/access.js'
import { type ErrorCode, UnauthenticatedError } from '../domain/errors.js'
import type { RequestLimits } from '../domain/limits.js'
import type { Logger } from '../domain/logger.js'
import type { Context, Services } from '../schema/context.js'
import { maskError } from '../schema/errors.js'
import type { ApiKeyRing } from './api-keys.js'
import { requestLimitPlugins } from './limits.js'

export type PromptlineYoga = YogaServerInstance<Record<string, unknown>, Context>

/** `GET /healthz`: 200 when the database answers, 503 when it does not. */
function useHealthz(ping: () => Promise<void>, logger: Logger): Plugin {
  return {
    async onRequest({ url, endResponse, fetchAPI }) {
      if (url.pathname !== '/healthz') return
      try {
        await ping()
        endResponse(fetchAPI.Response.json({ status: 'ok' }))
      } catch (err) {
        logger.warn('health check failed', { error: (err as Error).message })
        endResponse(fetchAPI.Response.json({ status: 'unavailable' }, { status: 503 }))
      }
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
  ping: () => Promise<void>
  logger: Logger
  keys: ApiKeyRing
  limits: RequestLimits
}): PromptlineYoga {
  const { schema, services, logger } = options
  return createYoga<Record<string, unknown>, Context>({
    schema,
    graphqlEndpoint: '/graphql',
    graphiql: options.limits.publicSchema && { title: 'promptline', subscriptionsProtocol: 'WS' },
    landingPage: false,
    maskedErrors: { maskError },
    logging: logger,
    // HTTP and SSE carry the key in a header; graphql-ws authenticated the socket and passes its principal
    context: (initial: { request?: Request; principal?: Principal }): Context => {
      const principal = initial.principal ?? options.keys.authenticate(initial.request?.headers.get('authorization'))
      if (!principal) throw new UnauthenticatedError('a valid API key is required: send Authorization: Bearer <key>')
      return { tenantId: principal.tenantId, role: principal.role, keyId: principal.keyId, services }
    },
    plugins: [useHealthz(options.ping, logger), ...requestLimitPlugins(options.limits), useValidationErrorCode],
  })
}
