import type { Duplex } from 'node:stream'
import type { WebSocket } from 'ws'

type SendDone = (error?: Error) => void

/** A write's errors once the peer is gone: its socket's close ends the subscriptions, and the frame had nobody to reach. */
const PEER_GONE = new Set(['ERR_STREAM_DESTROYED', 'EPIPE', 'ECONNRESET'])

/** `done`, told of no error that only says the peer is gone: graphql-ws would log it as internal and try to close with 4500. */
const quietWhenGone =
  (done: SendDone): SendDone =>
  (error) =>
    done(error && PEER_GONE.has((error as NodeJS.ErrnoException).code ?? '') ? undefined : error)

/**
 * Frames sent to one socket in the same turn of the event loop leave in one write: the socket
 * is corked at the turn's first frame and uncorked once the turn's callbacks have run (a syscall
 * a frame cost more than the frames themselves when a replay or a burst of events goes out).
 */
export function batchFrames(ws: WebSocket, socket: Duplex): void {
  const send = ws.send.bind(ws) as (data: unknown, options?: unknown, done?: SendDone) => void
  let corked = false
  const uncork = () => {
    corked = false
    socket.uncork()
  }
  ws.send = ((data: unknown, options?: unknown, done?: SendDone) => {
    if (!corked && socket.writable) {
      corked = true
      socket.cork()
      setImmediate(uncork)
    }
    if (typeof options === 'function') send(data, quietWhenGone(options as SendDone))
    else send(data, options, done && quietWhenGone(done))
  }) as WebSocket['send']
}
