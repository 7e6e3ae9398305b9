import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { type DocumentNode, type ExecutionArgs, GraphQLError } from 'graphql'
import { useServer } from 'graphql-ws/use/ws'
import { type WebSocket, WebSocketServer } from 'ws'
import type { Principal } from '../domain/access.js'
import { maskError } from '../schema/errors.js'
import type { App } from './app.js'
import { batchFrames } from './frame-batching.js'

export interface HttpServer {
  /** http://host:port, with the port really bound (useful with port 0). */
  readonly url: string
  /** Closes WebSockets and HTTP connections, then the listener; later calls share the first. */
  stop(): Promise<void>
}

/**
 * How long an idle connection is kept (ms): longer than the clients and proxies in front keep
 * theirs (60 s is common for load balancers), so the server is never the one to close a
 * connection a client is about to reuse.
 */
const DEFAULT_KEEP_ALIVE_MS = 65_000

/** The port is taken: said in one line by main, which exits. */
export class PortInUseError extends Error {
  constructor(host: string, port: number) {
    super(`port ${port} on ${host} is in use (another promptline?): stop that process or set PORT to a free port`)
    this.name = 'PortInUseError'
  }
}

/** graphql-ws close code for a socket without a valid key (4403, its default on refusal, means forbidden). */
const CLOSE_UNAUTHORIZED = 4401
/** graphql-ws close code for a socket whose key was revoked while it was open. */
const CLOSE_FORBIDDEN = 4403

/** Execution args that carry yoga's enveloped execute/subscribe along to graphql-ws. */
type EnvelopedArgs = ExecutionArgs & {
  envelopedExecute: (args: ExecutionArgs) => unknown
  envelopedSubscribe: (args: ExecutionArgs) => unknown
}

/**
 * Serves yoga over HTTP and graphql-ws on the same path. graphql-ws goes through
 * `yoga.getEnveloped`, so both transports share plugins, masking and the context factory.
 */
export async function startHttpServer(
  app: Pick<App, 'yoga' | 'keys' | 'limits'>,
  host: string,
  port: number,
  keepAliveMs = DEFAULT_KEEP_ALIVE_MS,
): Promise<HttpServer> {
  const { yoga, keys, limits } = app
  const server: Server = createServer((request, response) => {
    // a body refused before it was read whole (413) leaves its rest on the socket, where the next
    // request of the connection would be parsed: the connection ends after the answer
    const { socket } = request
    response.once('finish', () => {
      if (!request.complete) socket.end()
    })
    void yoga(request, response)
  })
  server.keepAliveTimeout = keepAliveMs
  // a request's headers may take as long as the connection may idle before them
  server.headersTimeout = keepAliveMs + 1000
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => reject(err.code === 'EADDRINUSE' ? new PortInUseError(host, port) : err))
    server.listen(port, host, () => {
      server.removeAllListeners('error')
      resolve()
    })
  })
  // attached once bound: before, a failed listen would reach graphql-ws as a WebSocket server error
  // (logged with its stack); no connection can arrive before this continuation runs
  const wss = new WebSocketServer({ server, path: yoga.graphqlEndpoint, maxPayload: limits.maxBodyBytes })
  wss.on('connection', (ws, request) => batchFrames(ws, request.socket))
  const stopClosing = serveGraphqlWs(wss, yoga, keys)
  const address = server.address() as AddressInfo
  const hostForUrl = address.family === 'IPv6' ? `[${address.address}]` : address.address

  let stopped: Promise<void> | null = null
  const stop = async () => {
    stopClosing()
    for (const client of wss.clients) client.terminate()
    await new Promise<void>((resolve) => wss.close(() => resolve()))
    server.closeAllConnections()
    await new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())))
  }
  return {
    url: `http://${hostForUrl}:${address.port}`,
    stop: () => (stopped ??= stop()),
  }
}

/** The sockets authenticated with each key, closed with 4403 when the key is revoked or expires; `stop` ends that. */
function socketsByKey(keys: App['keys']) {
  const byKey = new Map<string, Set<WebSocket>>()
  const stop = keys.onEnded((keyId) => {
    for (const socket of byKey.get(keyId) ?? []) socket.close(CLOSE_FORBIDDEN, 'Forbidden: the API key was revoked')
  })
  const track = (keyId: string, socket: WebSocket) => {
    const sockets = byKey.get(keyId) ?? new Set()
    byKey.set(keyId, sockets.add(socket))
    socket.once('close', () => {
      sockets.delete(socket)
      if (sockets.size === 0 && byKey.get(keyId) === sockets) byKey.delete(keyId)
    })
  }
  return { track, stop }
}

/**
 * graphql-ws on `wss`, through `yoga.getEnveloped`, so both transports share plugins, masking and
 * the context factory; a socket is authenticated once, on connection_init, and closed with 4403
 * when its key is revoked. Answers a function that stops watching for revocations.
 */
function serveGraphqlWs(wss: WebSocketServer, yoga: App['yoga'], keys: App['keys']): () => void {
  // a socket is authenticated once, on connection_init; its operations run as that principal
  const principals = new WeakMap<object, Principal>()
  const sockets = socketsByKey(keys)
  useServer(
    {
      onConnect: async (ctx) => {
        const principal = await keys.authenticate(ctx.connectionParams?.authorization)
        if (!principal) {
          ctx.extra.socket.close(CLOSE_UNAUTHORIZED, 'Unauthorized: connectionParams.authorization needs a valid API key')
          return false
        }
        principals.set(ctx.extra.socket, principal)
        sockets.track(principal.keyId, ctx.extra.socket)
        return true
      },
      execute: (args) => (args as EnvelopedArgs).envelopedExecute(args) as never,
      subscribe: (args) => (args as EnvelopedArgs).envelopedSubscribe(args) as never,
      onSubscribe: async (ctx, _id, payload) => {
        const { schema, execute, subscribe, contextFactory, parse, validate } = yoga.getEnveloped({
          ...ctx,
          req: ctx.extra.request,
          socket: ctx.extra.socket,
          params: payload,
          principal: principals.get(ctx.extra.socket),
        })
        // a document that does not parse, is empty, or a limit refuses (they throw) is the client's
        // error: an `error` message for its id, and the socket and its other operations go on
        let document: DocumentNode
        let errors: readonly GraphQLError[]
        try {
          document = parse(payload.query)
          errors = validate(schema, document)
        } catch (error) {
          if (error instanceof GraphQLError) return [maskError(error)]
          throw error
        }
        if (errors.length > 0) return errors
        const args: EnvelopedArgs = {
          schema,
          document,
          operationName: payload.operationName,
          variableValues: payload.variables,
          contextValue: await contextFactory(),
          envelopedExecute: execute,
          envelopedSubscribe: subscribe,
        }
        return args
      },
    },
    wss,
  )
  return sockets.stop
}
