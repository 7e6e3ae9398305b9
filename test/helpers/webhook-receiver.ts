import { randomBytes } from 'node:crypto'
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Webhook } from 'standardwebhooks'

/** A fresh Standard Webhooks signing secret. */
export const newWebhookSecret = () => `whsec_${randomBytes(32).toString('base64')}`

export interface ReceivedWebhook {
  path: string
  headers: IncomingHttpHeaders
  body: string
  /** The status the receiver answered. */
  status: number
  /** The body, parsed, when its signature verified with the secret; null when it did not. */
  verified: { type: string; timestamp: string; data: Record<string, unknown> } | null
}

/**
 * A webhook receiver on 127.0.0.1 that verifies every POST with the secret, as a real receiver
 * would, and answers with the statuses of `answers` in turn (then 200).
 */
export class WebhookReceiver {
  readonly received: ReceivedWebhook[] = []
  answers: number[] = []
  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(secret: string): Promise<WebhookReceiver> {
    const verifier = new Webhook(secret)
    let receiver: WebhookReceiver | null = null
    const server = createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString()
        let verified: ReceivedWebhook['verified'] = null
        try {
          verified = verifier.verify(body, req.headers as Record<string, string>) as ReceivedWebhook['verified']
        } catch {}
        const status = receiver!.answers.shift() ?? 200
        receiver!.received.push({ path: req.url ?? '', headers: req.headers, body, status, verified })
        res.writeHead(status).end()
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    receiver = new WebhookReceiver(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`)
    return receiver
  }

  /** Resolves once `count` POSTs have arrived (fails after `timeoutMs`). */
  async until(count: number, timeoutMs = 15_000): Promise<ReceivedWebhook[]> {
    const deadline = Date.now() + timeoutMs
    while (this.received.length < count) {
      if (Date.now() > deadline) throw new Error(`got ${this.received.length} webhook posts, not ${count}`)
      await new Promise((r) => setTimeout(r, 20))
    }
    return this.received
  }

  close(): Promise<void> {
    this.server.closeAllConnections()
    return new Promise((resolve) => this.server.close(() => resolve()))
  }
}
