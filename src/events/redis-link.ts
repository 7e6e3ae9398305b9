import { randomUUID } from 'node:crypto'
import type { Redis } from 'ioredis'
import type { Logger } from '../domain/logger.js'

type Handler = (message: unknown) => void

/**
 * What instances of one deployment tell each other, over Redis pub/sub: session events, calls to
 * a session's owner and their answers, catalog changes. One connection publishes, one listens
 * (a subscribed Redis connection can do nothing else); channels are named under `prefix`, so
 * several deployments (or test runs) can share one Redis. Its owner calls `close()`.
 */
export class RedisLink {
  /** This process: a new id at every start, so a restarted instance never inherits a dead one's leases. */
  readonly instanceId = randomUUID()
  private readonly publisher: Redis
  private readonly subscriber: Redis
  private readonly handlers = new Map<string, Set<Handler>>()
  private readonly subscribed = new Map<string, Promise<unknown>>()

  private constructor(
    RedisClient: typeof Redis,
    url: string,
    private readonly prefix: string,
    private readonly logger: Logger,
  ) {
    const options = { lazyConnect: true, maxRetriesPerRequest: 3, enableAutoPipelining: true }
    this.publisher = new RedisClient(url, options)
    this.subscriber = new RedisClient(url, options)
    for (const connection of [this.publisher, this.subscriber])
      connection.on('error', (error: Error) => logger.warn('redis connection error', { error: error.message }))
    this.subscriber.on('message', (channel: string, text: string) => {
      const handlers = this.handlers.get(channel)
      if (!handlers) return
      let message: unknown
      try {
        message = JSON.parse(text)
      } catch {
        this.logger.warn('dropped a malformed message', { channel })
        return
      }
      for (const handler of handlers) handler(message)
    })
  }

  /** Loads ioredis only here: a single instance without Redis never needs it. */
  static async connect(url: string, prefix: string, logger: Logger): Promise<RedisLink> {
    const { Redis: RedisClient } = await import('ioredis')
    const link = new RedisLink(RedisClient, url, prefix, logger)
    try {
      await Promise.all([link.publisher.connect(), link.subscriber.connect()])
    } catch (error) {
      link.publisher.disconnect()
      link.subscriber.disconnect()
      throw new Error(`could not connect to Redis: ${(error as Error).message}`)
    }
    return link
  }

  private channel(name: string): string {
    return `${this.prefix}${name}`
  }

  /** Sends a JSON message; a failure is logged, never thrown (the database stays the record). */
  publish(name: string, message: unknown): void {
    this.publisher.publish(this.channel(name), JSON.stringify(message)).catch((error: Error) => {
      this.logger.warn('could not publish to redis', { channel: name, error: error.message })
    })
  }

  /** Listens on a channel until the returned function is called; resolves once Redis confirmed. */
  async subscribe(name: string, handler: Handler): Promise<() => void> {
    const channel = this.channel(name)
    let handlers = this.handlers.get(channel)
    if (!handlers) {
      handlers = new Set()
      this.handlers.set(channel, handlers)
    }
    handlers.add(handler)
    let subscribed = this.subscribed.get(channel)
    if (!subscribed) {
      subscribed = this.subscriber.subscribe(channel)
      this.subscribed.set(channel, subscribed)
    }
    await subscribed
    return () => {
      handlers.delete(handler)
      if (handlers.size > 0 || this.handlers.get(channel) !== handlers) return
      this.handlers.delete(channel)
      this.subscribed.delete(channel)
      this.subscriber.unsubscribe(channel).catch(() => {})
    }
  }

  async ping(): Promise<void> {
    await this.publisher.ping()
  }

  async close(): Promise<void> {
    this.handlers.clear()
    await Promise.allSettled([this.publisher.quit(), this.subscriber.quit()])
  }
}
