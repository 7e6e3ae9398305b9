import { createHash } from 'node:crypto'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js'
import type { SecretLookup } from '../domain/credentials.js'
import { onFirstUse } from '../domain/on-first-use.js'
import type { ToolServer } from '../domain/tool-servers.js'
import type { ToolSpec } from '../domain/tools.js'

/** What a call of a server's tool answered, as the model is given it. */
export interface ServerCallResult {
  output: string
  isError: boolean
}

/** One MCP client, once connected, and the tool list it last read. */
interface Connection {
  connected: Promise<Client>
  tools: { list: ToolSpec[]; at: number } | null
}

const LIST_TIMEOUT_MS = 15_000

/** The MCP SDK's client side, loaded by the first run that declares a server. */
const clientSdk = onFirstUse(() =>
  Promise.all([import('@modelcontextprotocol/sdk/client/index.js'), import('@modelcontextprotocol/sdk/client/streamableHttp.js')]),
)

/** A result's content as text: each text part, what a non-text part is, then the structured content as JSON. */
function resultText(result: CallToolResult): string {
  const parts = result.content.map((part) => {
    if (part.type === 'text') return part.text
    if (part.type === 'resource') return 'text' in part.resource ? part.resource.text : `[resource ${part.resource.uri}]`
    if (part.type === 'resource_link') return `[resource ${part.uri}]`
    return `[${part.type} ${part.mimeType}]`
  })
  if (result.structuredContent !== undefined) parts.push(JSON.stringify(result.structuredContent))
  return parts.join('\n')
}

const specOf = (server: string, tool: Tool): ToolSpec => ({
  name: tool.name,
  description: tool.description ?? null,
  inputSchema: tool.inputSchema,
  strict: false,
  server,
})

/**
 * MCP clients over Streamable HTTP, one connection per server URL and header values (keyed by a
 * hash, never the values), each keeping its tool list until the server says it changed
 * (`notifications/tools/list_changed`) or `listTtlMs` passes. A connection that fails is
 * dropped, so the next use connects again. Owns every connection; `close` ends them.
 */
export class ToolServerClients {
  private readonly connections = new Map<string, Connection>()

  constructor(
    /** Reads a header's variable when a connection is made. */
    private readonly secrets: SecretLookup,
    private readonly listTtlMs: number,
    private readonly maxConnections = 64,
  ) {}

  /** The tools `server` offers: every tool it lists that its `allowedTools` names (all of them without a list). */
  async tools(server: ToolServer, signal: AbortSignal): Promise<ToolSpec[]> {
    const [key, connection] = this.connection(server)
    try {
      const client = await connection.connected
      if (connection.tools === null || Date.now() - connection.tools.at > this.listTtlMs) {
        const list: ToolSpec[] = []
        let cursor: string | undefined
        do {
          const page = await client.listTools(cursor ? { cursor } : {}, { signal, timeout: LIST_TIMEOUT_MS })
          list.push(...page.tools.map((tool) => specOf(server.label, tool)))
          cursor = page.nextCursor
        } while (cursor)
        connection.tools = { list, at: Date.now() }
      }
    } catch (error) {
      await this.drop(key)
      throw error
    }
    const allowed = server.allowedTools
    return connection.tools.list.filter((tool) => allowed === null || allowed.includes(tool.name))
  }

  /** Calls a tool: its result, or (the server failed or could not be reached) an error result saying so. */
  async call(
    server: ToolServer,
    name: string,
    args: unknown,
    options: { signal: AbortSignal; timeoutMs: number },
  ): Promise<ServerCallResult> {
    const [key, connection] = this.connection(server)
    try {
      const client = await connection.connected
      const params = { name, arguments: (args ?? {}) as Record<string, unknown> }
      const result = (await client.callTool(params, undefined, {
        signal: options.signal,
        timeout: options.timeoutMs,
      })) as CallToolResult
      return { output: resultText(result), isError: result.isError === true }
    } catch (error) {
      await this.drop(key)
      options.signal.throwIfAborted()
      return { output: `MCP server '${server.label}' failed the call: ${(error as Error).message}`, isError: true }
    }
  }

  async close(): Promise<void> {
    const all = [...this.connections.keys()]
    await Promise.all(all.map((key) => this.drop(key)))
  }

  private connection(server: ToolServer): [string, Connection] {
    const headers = Object.fromEntries(server.headers.map((h) => [h.name, this.secrets(h.valueEnv) ?? '']))
    const key = createHash('sha256')
      .update(JSON.stringify([server.url, headers]))
      .digest('hex')
    let connection = this.connections.get(key)
    if (!connection) {
      const connected = this.connect(server.url, headers, () => {
        if (connection) connection.tools = null
      })
      connection = { connected, tools: null }
      // a connection that never came up is dropped when it is used
      connected.catch(() => {})
      this.connections.set(key, connection)
      if (this.connections.size > this.maxConnections) void this.drop(this.connections.keys().next().value!)
    }
    return [key, connection]
  }

  /** A client connected to `url`; one that cannot connect is closed before the error is thrown. */
  private async connect(url: string, headers: Record<string, string>, onToolsChanged: () => void): Promise<Client> {
    const [{ Client }, { StreamableHTTPClientTransport }] = await clientSdk()
    const client = new Client(
      { name: 'promptline', version: '1' },
      { listChanged: { tools: { autoRefresh: false, debounceMs: 0, onChanged: onToolsChanged } } },
    )
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }), { timeout: LIST_TIMEOUT_MS })
    } catch (error) {
      await client.close().catch(() => {})
      throw error
    }
    return client
  }

  private async drop(key: string): Promise<void> {
    const connection = this.connections.get(key)
    if (!connection) return
    this.connections.delete(key)
    await connection.connected.then((client) => client.close()).catch(() => {})
  }
}
