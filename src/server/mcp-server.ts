import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
import {
  CallToolRequestSchema,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListToolsRequestSchema,
  McpError,
} from '@modelcontextprotocol/sdk/types.js'
import type { Principal } from '../domain/access.js'
import { PromptlineError } from '../domain/errors.js'
import { MCP_TOOLS, type McpPromptService, type ToolAnswer } from '../services/mcp-prompts.js'

// The MCP SDK's server side, loaded on the first request to /mcp (mcp-api.ts).

const SERVER_INFO = { name: 'promptline', version: '0.1.0' }

/** A domain error as an MCP protocol error: the client's mistakes as invalid params. */
function mcpError(error: unknown): never {
  if (error instanceof PromptlineError) {
    const client = ['INVALID_REQUEST', 'NOT_FOUND', 'PROFILE_REQUIRED', 'RENDER', 'FORBIDDEN'].includes(error.code)
    throw new McpError(client ? ErrorCode.InvalidParams : ErrorCode.InternalError, error.message, { code: error.code })
  }
  throw error
}

/** A tool's answer as a `tools/call` result; a refusal is a result with `isError`, as MCP asks of tools. */
async function toolResult(answer: () => Promise<ToolAnswer>) {
  try {
    const { text, structured, isError } = await answer()
    return { content: [{ type: 'text' as const, text }], structuredContent: structured, isError }
  } catch (error) {
    if (!(error instanceof PromptlineError)) throw error
    return { content: [{ type: 'text' as const, text: error.message }], structuredContent: { errorCode: error.code }, isError: true }
  }
}

/** An MCP server for one request, acting as `principal`: stateless, so any instance answers any request. */
function serverFor(mcp: McpPromptService, principal: Principal): Server {
  const server = new Server(SERVER_INFO, { capabilities: { prompts: {}, tools: {} } })
  server.setRequestHandler(ListPromptsRequestSchema, (request) =>
    mcp.listPrompts(principal, request.params?.cursor ?? null).catch(mcpError),
  )
  server.setRequestHandler(GetPromptRequestSchema, (request) =>
    mcp.getPrompt(principal, request.params.name, request.params.arguments ?? {}).catch(mcpError),
  )
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: MCP_TOOLS.map((tool) => ({ ...tool })) }))
  server.setRequestHandler(CallToolRequestSchema, (request) => {
    const { name, arguments: args } = request.params
    if (name === 'run_prompt') return toolResult(() => mcp.runPrompt(principal, args ?? {}))
    if (name === 'get_run') return toolResult(() => mcp.getRun(principal, args ?? {}))
    throw new McpError(ErrorCode.InvalidParams, `no tool '${name}'`)
  })
  return server
}

/** Answers one MCP request as `principal`, with a server made for it and closed after. */
export async function answerMcp(mcp: McpPromptService, principal: Principal, request: Request): Promise<Response> {
  const server = serverFor(mcp, principal)
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
  await server.connect(transport)
  try {
    return await transport.handleRequest(request)
  } finally {
    await server.close()
  }
}
