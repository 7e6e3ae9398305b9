import { randomUUID } from 'node:crypto'
import { setMaxListeners } from 'node:events'
import { createRedisEventTarget } from '@graphql-yoga/redis-event-target'
import { createPubSub, type PubSub, type PubSubEvent, type PubSubEventTarget } from '@graphql-yoga/subscription'
import type { Redis } from 'ioredis'
import type { CatalogEvent } from '../domain/catalog.js'
import type { SessionEvent } from '../domain/events.js'
import type { ExperimentProgress } from '../domain/experiments.js'
import type { Logger } from '../domain/logger.js'
import { KeyCounters } from './key-counters.js'
import { RunSlots } from './run-slots.js'

/** What goes through the deployment's pub/sub, by topic; a topic's id names whom it is for. */
type DeploymentTopics = {
  /** A session's events, by `tenantId/sessionId`. */
  sessionEvents: [sessionKey: string, event: SessionEvent]
  /** A stored API key changed (revoked, rotated, its limits), by its id: every instance forgets what it cached of it. */
  keyChanges: [scope: 'all', change: { keyId: string; ended: boolean }]
  /** A key's run slot was given back, by the key's id: its waiters ask again. */
  slotsFreed: [keyId: string, holder: string]
  /** Changes to a tenant's catalog (new prompt versions, label moves), by tenant. */
  catalogEvents: [tenantId: string, event: CatalogEvent]
  /** How an experiment is going, by `tenantId/experimentId`. */
  experimentProgress: [experimentKey: string, progress: ExperimentProgress]
  /** Calls to a session's owner and their answers, by the instance they are for. */
  calls: [instanceId: string, message: unknown]
}
type Topic = keyof DeploymentTopics
type DeploymentEvent = PubSubEvent<DeploymentTopics, Topic>

/**
 * Fan-out: yoga's `createPubSub` on an event target, in memory for one process or
 * `@graphql-yoga/redis-event-target` for several, so what one instance publishes reaches every
 * instance's listeners (its own too). Listeners are the event target's; they are called as
 * values arrive, so each subscriber buffers (and cuts off) on its own. (yoga's `subscribe` would
 * give each a Repeater that throws into the event target once 1 024 values wait, and its
 * `repeaterBuffer` is one buffer shared by every subscription.)
 */
export class Fanout {
  readonly pubsub: PubSub<DeploymentTopics>

  /** Told when the target hears other instances again after it could not (Redis back after an outage). */
  private readonly restoredListeners = new Set<() => void>()

  constructor(
    private readonly target: PubSubEventTarget<DeploymentTopics>,
    /** Resolves once the target hears everything published to a topic it was just asked to listen to. */
    private readonly confirm: (topic: string) => Promise<void> = async () => {},
  ) {
    this.pubsub = createPubSub<DeploymentTopics>({ eventTarget: target })
  }

  /** Calls `listener` each time the fan-out is restored, until the returned function is called: what was published meanwhile never arrived. */
  onRestored(listener: () => void): () => void {
    this.restoredListeners.add(listener)
    return () => this.restoredListeners.delete(listener)
  }

  /** The link is back: every listener that missed messages is told. */
  restored(): void {
    for (const listener of this.restoredListeners) listener()
  }

  /** Calls `listener` with what is published to `topic:id` from now on, until the returned function is called. */
  listen<K extends Topic>(topic: K, id: string, listener: (value: DeploymentTopics[K][1]) => void): () => void {
    const name = `${topic}:${id}`
    const onEvent = (event: DeploymentEvent) => listener(event.detail as DeploymentTopics[K][1])
    this.target.addEventListener(name, onEvent)
    return () => this.target.removeEventListener(name, onEvent)
  }

  /** Resolves once a listener just added to `topic:id` hears everything published to it (at once in memory; Redis confirms). */
  heard(topic: Topic, id: string): Promise<void> {
    return this.confirm(`${topic}:${id}`)
  }
}

/** One process alone: an in-memory event target. */
export function localFanout(): Fanout {
  const target = new EventTarget()
  // a session may have any number of subscribers: no leak warning past ten
  setMaxListeners(0, target)
  return new Fanout(target as PubSubEventTarget<DeploymentTopics>)
}

/** How an instance reaches the others of its deployment, and who it is among them; its owner calls `close()`. */
export interface DeploymentLink {
  /** Whom session leases name and calls are addressed to. */
  readonly instanceId: string
  readonly fanout: Fanout
  /** Per-key rate counters: in Redis, shared by every instance, or in memory. */
  readonly counters: KeyCounters
  /** Per-key run slots (concurrentRuns) that lapse `ttlMs` after their holder stops renewing them. */
  runSlots(ttlMs: number): RunSlots
  /** Whether a message sent now can reach the other instances (false while Redis is away). */
  readonly reachable: boolean
  ping(): Promise<void>
  close(): Promise<void>
}

/**
 * One process: an in-memory fan-out. Its id is the same at every start, so a restarted instance
 * takes back the sessions it held at once (what ran in them died with it). Apps in one process
 * may share one link's fan-out under their own ids, as instances do over Redis.
 */
export class LocalLink implements DeploymentLink {
  constructor(
    readonly instanceId = 'local',
    readonly fanout = localFanout(),
    readonly counters = KeyCounters.inMemory(),
  ) {}

  readonly reachable = true
  private slots: RunSlots | null = null

  /** One set of slots per link, so apps sharing the link share them. */
  runSlots(ttlMs: number): RunSlots {
    this.slots ??= RunSlots.inMemory(this.fanout, ttlMs)
    return this.slots
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {}
}

/** How long a readiness probe waits for Redis to answer (ms). */
const PING_TIMEOUT_MS = 1000

/**
 * Several instances over Redis: one connection publishes, one listens (a subscribed connection
 * can do nothing else); topics are named under `prefix`, so several deployments (or test runs)
 * can share one Redis. Its owner calls `close()`.
 */
export class RedisLink implements DeploymentLink {
  /** This process: a new id at every start, so a restarted instance never inherits a dead one's leases. */
  readonly instanceId = randomUUID()
  readonly fanout: Fanout
  readonly counters: KeyCounters
  private readonly prefix: string
  /** Set by `close`: the connections' ends are not outages. */
  private closing = false

  private constructor(
    private readonly publisher: Redis,
    private readonly subscriber: Redis,
    prefix: string,
    logger: Logger,
  ) {
    this.reportOutages(logger)
    this.counters = KeyCounters.inRedis(publisher, `${prefix}limits:`)
    this.prefix = prefix
    // the Redis target leaves a failed SUBSCRIBE unhandled (Redis away when a listener is added):
    // it is logged here instead, and the listener still hears this instance's session events
    const subscribing = {
      on: (name: string, listener: (channel: string, message: string) => void) => subscriber.on(name, listener),
      subscribe: (channel: string) =>
        subscriber
          .subscribe(channel)
          .catch((error: Error) => logger.warn('could not subscribe in redis', { channel, error: error.message })),
      unsubscribe: (channel: string) => subscriber.unsubscribe(channel).catch(() => {}),
    } as unknown as Redis
    const redis = createRedisEventTarget<DeploymentEvent>({ publishClient: publisher, subscribeClient: subscribing })
    // a session's events also reach this instance's own subscribers at once, through memory, so
    // they keep streaming while Redis is away; the copy Redis brings back is a sequence the
    // subscriber already has, and it drops it
    const own = new EventTarget()
    setMaxListeners(0, own)
    const inMemoryToo = (topic: string) => topic.startsWith('sessionEvents:')
    const target: PubSubEventTarget<DeploymentTopics> = {
      addEventListener: (topic, listener) => {
        redis.addEventListener(prefix + topic, listener)
        if (inMemoryToo(topic)) own.addEventListener(topic, listener as EventListener)
      },
      removeEventListener: (topic, listener) => {
        redis.removeEventListener(prefix + topic, listener)
        if (inMemoryToo(topic)) own.removeEventListener(topic, listener as EventListener)
      },
      // published here rather than by the Redis target, which leaves a failed publish unhandled:
      // a failure is logged, never thrown (the database stays the record); while the connection
      // is down nothing is queued for later (the outage is logged once, by reportOutages)
      dispatchEvent: (event) => {
        if (inMemoryToo(event.type)) own.dispatchEvent(event)
        if (publisher.status !== 'ready') return true
        publisher.publish(prefix + event.type, JSON.stringify(event.detail)).catch((error: Error) => {
          logger.warn('could not publish to redis', { topic: event.type, error: error.message })
        })
        return true
      },
    }
    // the Redis target subscribes without waiting; the listening connection answers in order,
    // so a second SUBSCRIBE's answer means the first is in force
    this.fanout = new Fanout(target, async (topic) => {
      // while Redis is away there is nothing to wait for: only this instance's events arrive
      if (subscriber.status === 'ready') await subscriber.subscribe(prefix + topic)
    })
    this.reportRestores()
  }

  /** Tells the fan-out's listeners when the listening connection is back after it was lost. */
  private reportRestores(): void {
    let lost = false
    this.subscriber.on('close', () => {
      lost = !this.closing
    })
    this.subscriber.on('ready', () => {
      if (!lost) return
      lost = false
      this.fanout.restored()
    })
  }

  /** One line when the connection to Redis is lost (and since when), one when it is back (and after how long). */
  private reportOutages(logger: Logger): void {
    let downSince: number | null = null
    this.publisher.on('close', () => {
      if (downSince !== null || this.closing) return
      downSince = Date.now()
      logger.error('redis is unreachable; calls to other instances answer UNAVAILABLE until it is back', {
        since: new Date(downSince).toISOString(),
      })
    })
    this.publisher.on('ready', () => {
      if (downSince === null) return
      logger.info('redis is reachable again', { since: new Date(downSince).toISOString(), downMs: Date.now() - downSince })
      downSince = null
    })
  }

  runSlots(ttlMs: number): RunSlots {
    return RunSlots.inRedis(this.publisher, `${this.prefix}slots:`, this.fanout, ttlMs)
  }

  /** Loads ioredis only here: a single instance without Redis never needs it. */
  static async connect(url: string, prefix: string, logger: Logger): Promise<RedisLink> {
    const { Redis: RedisClient } = await import('ioredis')
    const options = { lazyConnect: true, maxRetriesPerRequest: 3, enableAutoPipelining: true }
    const publisher = new RedisClient(url, options)
    const subscriber = new RedisClient(url, options)
    for (const connection of [publisher, subscriber])
      connection.on('error', (error: Error) => logger.warn('redis connection error', { error: error.message }))
    try {
      await Promise.all([publisher.connect(), subscriber.connect()])
    } catch (error) {
      publisher.disconnect()
      subscriber.disconnect()
      throw new Error(`could not connect to Redis: ${(error as Error).message}`)
    }
    return new RedisLink(publisher, subscriber, prefix, logger)
  }

  /**
   * Fails at once while a connection is not ready (ioredis would hold the command until it has
   * reconnected), and after `PING_TIMEOUT_MS` when Redis does not answer: a probe never hangs.
   */
  get reachable(): boolean {
    return this.publisher.status === 'ready' && this.subscriber.status === 'ready'
  }

  async ping(): Promise<void> {
    for (const connection of [this.publisher, this.subscriber])
      if (connection.status !== 'ready') throw new Error(`the redis connection is ${connection.status}`)
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('redis did not answer PING in time')), PING_TIMEOUT_MS)
    })
    // a PING the probe gave up on is answered later, or failed when the connection closes: that
    // failure is nobody's, so it is dropped here rather than left unhandled
    const answer = this.publisher.ping()
    answer.catch(() => {})
    try {
      await Promise.race([answer, late])
    } finally {
      clearTimeout(timer)
    }
  }

  async close(): Promise<void> {
    this.closing = true
    await Promise.allSettled([this.publisher.quit(), this.subscriber.quit()])
  }
}
