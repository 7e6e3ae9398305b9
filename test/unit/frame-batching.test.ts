import type { AddressInfo, Socket } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { WebSocket, WebSocketServer } from 'ws'
import { batchFrames } from '../../src/server/frame-batching.js'

/** Counts the writes the socket hands to the operating system (each is a syscall). */
function countWrites(socket: Socket): { count: number } {
  const counter = { count: 0 }
  const internal = socket as unknown as { _write: (...a: unknown[]) => void; _writev?: (...a: unknown[]) => void }
  const write = internal._write.bind(socket)
  const writev = internal._writev?.bind(socket)
  internal._write = (...a) => {
    counter.count++
    write(...a)
  }
  if (writev)
    internal._writev = (...a) => {
      counter.count++
      writev(...a)
    }
  return counter
}

describe('frames of one turn of the event loop', () => {
  let wss: WebSocketServer | undefined
  const clients: WebSocket[] = []
  afterEach(async () => {
    for (const client of clients.splice(0)) client.terminate()
    for (const client of wss?.clients ?? []) client.terminate()
    await new Promise<void>((resolve) => (wss ? wss.close(() => resolve()) : resolve()))
  })

  async function connected(batched: boolean) {
    wss = new WebSocketServer({ port: 0, host: '127.0.0.1' })
    await new Promise((resolve) => wss!.once('listening', resolve))
    const accepted = new Promise<{ ws: WebSocket; writes: { count: number } }>((resolve) =>
      wss!.on('connection', (ws, request) => {
        if (batched) batchFrames(ws, request.socket)
        resolve({ ws, writes: countWrites(request.socket as Socket) })
      }),
    )
    const client = new WebSocket(`ws://127.0.0.1:${(wss.address() as AddressInfo).port}`)
    clients.push(client)
    await new Promise((resolve) => client.once('open', resolve))
    return { ...(await accepted), client }
  }

  async function sendTen(batched: boolean) {
    const { ws, writes, client } = await connected(batched)
    const received: string[] = []
    const all = new Promise<void>((resolve) =>
      client.on('message', (data) => {
        if (received.push(String(data)) === 10) resolve()
      }),
    )
    for (let i = 0; i < 10; i++) ws.send(`frame ${i}`)
    await all
    return { writes: writes.count, received }
  }

  it('reach the client in order, in one write to the socket', async () => {
    const { writes, received } = await sendTen(true)
    expect(received).toEqual(Array.from({ length: 10 }, (_, i) => `frame ${i}`))
    expect(writes).toBe(1)
  })

  it('take a write each without batching (what the batching saves)', async () => {
    const { writes } = await sendTen(false)
    expect(writes).toBe(10)
  })

  it('end quietly once the peer is gone: a frame sent after its socket died reports no error to its sender', async () => {
    const { ws } = await connected(true)
    const socket = (ws as unknown as { _socket: Socket })._socket
    socket.destroy()
    // the socket is gone and ws has not heard yet: what graphql-ws sees when a client vanishes mid-stream
    expect(ws.readyState).toBe(WebSocket.OPEN)
    const outcome = await new Promise<Error | undefined>((resolve) => ws.send('late', resolve))
    expect(outcome).toBeUndefined()
  })
})
