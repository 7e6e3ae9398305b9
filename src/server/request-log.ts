import { randomUUID } from 'node:crypto'
import { GraphQLError } from 'graphql'
import type { Plugin } from 'graphql-yoga'
import { PromptlineError } from '../domain/errors.js'
import type { Logger } from '../domain/logger.js'
import type { Context } from '../schema/context.js'

/** A caller's `x-request-id` is kept when it is a plain token; otherwise the server makes one. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

const requestIds = new WeakMap<Request, string>()

/**
 * Gives every HTTP request an id (the caller's `x-request-id`, or a new UUID), answers with it in
 * `x-request-id`, and logs each unexpected error (the ones masked as INTERNAL) with the request
 * id and tenant, so a client's report finds its line.
 */
export function useRequestLog(logger: Logger): Plugin<Record<string, unknown>, Context> {
  return {
    onRequest({ request }) {
      const given = request.headers.get('x-request-id')
      requestIds.set(request, given && REQUEST_ID.test(given) ? given : randomUUID())
    },
    onResponse({ request, response }) {
      const id = requestIds.get(request)
      if (id) response.headers.set('x-request-id', id)
    },
    onExecute({ args }) {
      return {
        onExecuteDone({ result }) {
          if (!('errors' in result) || !result.errors) return
          const context = args.contextValue as Partial<Context> & { request?: Request }
          for (const error of result.errors) {
            const original = error.originalError
            if (!original || original instanceof PromptlineError || original instanceof GraphQLError) continue
            const requestId = context.request ? requestIds.get(context.request) : undefined
            logger
              .child({ requestId, tenantId: context.tenantId })
              .error('unexpected error', { error: original.message, path: error.path?.join('.') })
          }
        },
      }
    },
  }
}
