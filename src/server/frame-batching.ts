import type { Duplex } from 'node:stream'
import type { WebSocket } from 'ws'

/**
 * Frames sent to one socket in the same turn of the event loop leave in one write: the socket
 * is corked at the turn's first frame and uncorked once the turn's callbacks have run (a syscall
 * a frame cost more than the frames themselves when a replay or a burst of events goes out).
 */
export function batchFrames(ws: WebSocket, socket: Duplex): void {
  const send = ws.send.bind(ws) as (...args: unknown[]) => void
  let corked = false
  const uncork = () => {
    corked = false
    socket.uncork()
  }
  ws.send = ((...args: unknown[]) => {
    if (!corked && socket.writable) {
      corked = true
      socket.cork()
      setImmediate(uncork)
    }
    send(...args)
  }) as WebSocket['send']
}
