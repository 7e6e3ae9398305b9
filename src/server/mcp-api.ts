import type { Plugin } from 'graphql-yoga'
import { PromptlineError, UnauthenticatedError } from '../domain/errors.js'
import type { Logger } from '../domain/logger.js'
import { onFirstUse } from '../domain/on-first-use.js'
import type { KeyLimiter } from '../services/key-limits.js'
import type { KeyRing } from '../services/key-ring.js'
import type { McpPromptService } from '../services/mcp-prompts.js'

/** JSON-RPC's code for a request it refuses. */
const INVALID_REQUEST = -32600

/** The MCP SDK's server side, loaded on the first request (a start that serves no MCP host loads none of it). */
const serverSdk = onFirstUse(() => import('./mcp-server.js'))

/**
 * promptline as an MCP server at `/mcp` (Streamable HTTP, stateless, JSON answers): its prompts
 * to list and render, and the tools `run_prompt` and `get_run`; the same keys and limits as GraphQL.
 */
export function useMcpServer(mcp: McpPromptService, keys: KeyRing, limiter: KeyLimiter, logger: Logger): Plugin {
  return {
    async onRequest({ request, url, endResponse, fetchAPI }) {
      if (url.pathname !== '/mcp') return
      const { Response } = fetchAPI
      const refuse = (status: number, message: string) =>
        endResponse(Response.json({ jsonrpc: '2.0', error: { code: INVALID_REQUEST, message }, id: null }, { status }))
      try {
        const principal = await keys.authenticate(request.headers.get('authorization'))
        if (!principal) throw new UnauthenticatedError('a valid API key is required: send Authorization: Bearer <key>')
        await limiter.countRequests(principal, 1)
        const { answerMcp } = await serverSdk()
        endResponse(await answerMcp(mcp, principal, request))
      } catch (error) {
        if (error instanceof UnauthenticatedError) return refuse(401, error.message)
        if (error instanceof PromptlineError) return refuse(error.code === 'RATE_LIMITED' ? 429 : 400, error.message)
        logger.error('an MCP request failed', { error: (error as Error).message })
        refuse(500, 'Unexpected error.')
      }
    },
  }
}
