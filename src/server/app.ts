import { CapacityPools } from '../capacity/capacity-pool.js'
import { Catalog } from '../catalog/catalog.js'
import { loadCatalogFiles } from '../catalog/files.js'
import type { ApiKeyEntry } from '../domain/access.js'
import type { Budget } from '../domain/budgets.js'
import type { Backend } from '../domain/catalog.js'
import type { SecretLookup } from '../domain/credentials.js'
import type { BackendKind } from '../domain/definitions.js'
import {
  DEFAULT_FILE_LIMITS,
  DEFAULT_QUEUE_LIMITS,
  DEFAULT_REQUEST_LIMITS,
  type DurabilityTimes,
  durabilityTimes,
  type FileLimits,
  type QueueLimits,
  type RequestLimits,
} from '../domain/limits.js'
import type { Logger } from '../domain/logger.js'
import { protectedLabels } from '../domain/prompt-labels.js'
import { DEFAULT_RETRY_DELAYS_MS, WebhookSigners } from '../domain/webhooks.js'
import { CatalogEvents } from '../events/catalog-events.js'
import { type DeploymentLink, LocalLink, RedisLink } from '../events/deployment-pubsub.js'
import { DEFAULT_EVENT_BUS_OPTIONS, type EventBusOptions, SessionEventBus } from '../events/event-bus.js'
import { DEFAULT_WEBHOOK_TIMES, WebhookDispatcher, type WebhookDispatcherOptions } from '../events/webhook-dispatcher.js'
import { AnthropicModelClient } from '../providers/anthropic-client.js'
import { FakeModelClient } from '../providers/fake-client.js'
import type { ModelClient } from '../providers/model-client.js'
import { OpenAIModelClient } from '../providers/openai-client.js'
import { PromptQueue } from '../queue/prompt-queue.js'
import { RunSettlement } from '../queue/run-settlement.js'
import { SessionLeases } from '../queue/session-leases.js'
import { PromptPreparer } from '../runner/prepare.js'
import { RunExecutor } from '../runner/run-executor.js'
import { type CoalescerOptions, CoalescerPacing } from '../runner/token-coalescer.js'
import { schema } from '../schema/schema.js'
import { ApiKeyService } from '../services/api-key-service.js'
import { BudgetGuard } from '../services/budget-guard.js'
import { CatalogService } from '../services/catalog-service.js'
import { FileService } from '../services/file-service.js'
import { KeyLimiter, type WithoutCounters } from '../services/key-limits.js'
import { KeyRing } from '../services/key-ring.js'
import { OpenAIChatService } from '../services/openai-chat.js'
import { OpenAIResponsesService } from '../services/openai-responses.js'
import { ReplayService } from '../services/replay-service.js'
import { RunService } from '../services/run-service.js'
import { SessionHost } from '../services/session-host.js'
import { SessionRouter } from '../services/session-router.js'
import { SessionService } from '../services/session-service.js'
import { StoredSessionReads } from '../services/stored-session-reads.js'
import { UsageService } from '../services/usage-service.js'
import { DatabaseLink } from '../store/database-link.js'
import { SessionMemory } from '../store/session-memory.js'
import { openStore, type Store } from '../store/store.js'
import { PrometheusMetrics } from './metrics.js'
import { OpenSubscriptions } from './open-subscriptions.js'
import { createPromptlineYoga, type PromptlineYoga } from './yoga.js'

/** Everything the server runs, wired once. Its owner calls `close()`. */
export interface App {
  yoga: PromptlineYoga
  /** What one request may ask; http.ts applies the body size. */
  limits: RequestLimits
  /** The API keys callers authenticate with (HTTP in yoga's context, graphql-ws on connect). */
  keys: KeyRing
  store: Store
  queue: PromptQueue
  /** Waits until every event published so far is written (for tests and shutdown). */
  flush(): Promise<void>
  /**
   * Drains: /readyz answers 503, no prompt is admitted, running prompts get `shutdownGraceMs` to
   * finish (the rest end SHUTDOWN), queued ones stay queued for the next start, everything is
   * written. The listener keeps serving meanwhile, so streams see their runs end.
   */
  drain(): Promise<void>
  /** Drains, then closes the database. */
  close(): Promise<void>
}

export interface AppOptions {
  databaseUrl: string
  catalogDir: string
  limits?: Partial<QueueLimits>
  coalescer?: CoalescerOptions
  events?: Partial<EventBusOptions>
  /** Heartbeats, the stale and no-progress bounds, and how often the reaper looks. */
  durability?: Partial<DurabilityTimes>
  shutdownGraceMs?: number
  /** Depth, aliases, tokens, cost, body size, and whether the schema is public. */
  requestLimits?: Partial<RequestLimits>
  /** Per-tenant budgets of runs, tokens and cost. */
  budgets?: readonly Budget[]
  /** Bootstrap API keys and their tenants and roles (more are stored in the database); none: one local tenant. */
  apiKeys?: readonly ApiKeyEntry[] | null
  /** What a key with limits of its own meets while Redis (its shared counters) is away: refused (default) or let through. */
  limitsWithoutRedis?: WithoutCounters
  /** Environment variables any backend's key may be taken from, besides those each backend names. */
  credentialEnvAllowlist?: readonly string[]
  /** Labels only an admin key may move, besides `production`. */
  protectedLabels?: readonly string[]
  /** Entries each tenant keeps in the exact response cache (default 10 000); the oldest go first. */
  responseCacheMaxEntries?: number
  /** Uploads: where their bytes go (null: the database), the largest file, how long one is kept. */
  files?: { dir?: string | null } & Partial<FileLimits>
  /** Model clients by backend kind; the fake one is built in. */
  clients?: Partial<Record<BackendKind, ModelClient>>
  /** Several instances share the database through this Redis: calls to sessions' owners, events. */
  redisUrl?: string | null
  /** Without Redis, how this app reaches others in its process (tests run several instances in one); a `LocalLink` unless given. */
  link?: DeploymentLink
  /** A store opened by the caller, who closes it (apps in one process sharing one SQLite file); else opened from `databaseUrl`. */
  store?: Store
  /** Names this deployment's Redis channels, so several can share one Redis. */
  redisPrefix?: string
  /** Signing secrets by tenant, and when deliveries are retried (and polled for). */
  webhooks?: { secrets?: ReadonlyMap<string, string> } & Partial<WebhookDispatcherOptions>
  /** What time it is (ms since the epoch) where a time to live is judged; tests move it. */
  clock?: () => number
}

/** Loads the catalog, opens and migrates the database, wires services into yoga, and resumes the queues. */
export async function createApp(options: AppOptions, secrets: SecretLookup, logger: Logger): Promise<App> {
  const files = loadCatalogFiles(options.catalogDir)
  const store = options.store ?? (await openStore(options.databaseUrl, options.files?.dir ?? null))
  const closeStore = () => (options.store ? Promise.resolve() : store.close())
  let link: DeploymentLink | null = null
  try {
    link = options.redisUrl
      ? await RedisLink.connect(options.redisUrl, options.redisPrefix ?? 'promptline:', logger)
      : (options.link ?? new LocalLink())
    // with several processes a cached definition could be stale: read them from the store
    const catalog = await Catalog.open(store, files, { cached: !options.redisUrl })
    const sessionMemory = new SessionMemory(store.sessions)
    const allowlist = options.credentialEnvAllowlist ?? []
    const preparer = new PromptPreparer(catalog, sessionMemory, secrets, store.files, allowlist)
    const busOptions = { ...DEFAULT_EVENT_BUS_OPTIONS, ...options.events }
    const metrics = new PrometheusMetrics()
    const bus = new SessionEventBus(store.events, store.sessions, logger, busOptions, link.fanout, metrics)
    const clients: Record<BackendKind, ModelClient> = {
      FAKE: new FakeModelClient(),
      OPENAI: new OpenAIModelClient(),
      ANTHROPIC: new AnthropicModelClient(),
      ...options.clients,
    }
    const clientFor = (backend: Backend): ModelClient => clients[backend.kind]
    const capacity = new CapacityPools(logger)
    const times = durabilityTimes(options.durability)
    // after an outage, other instances' holders get a stale bound to renew their leases and heartbeats
    const database = new DatabaseLink(() => store.ping(), logger, times.staleMs)
    // a lease lapses as a dead owner's runs go stale, so both move on together
    const ownership: SessionLeases = new SessionLeases(
      store.sessions,
      link.instanceId,
      times.staleMs,
      times.heartbeatMs,
      { hasWork: (t, s): boolean => queue.hasWork(t, s), lost: (t, s) => void queue.lose(t, s) },
      database,
      logger,
      options.clock,
    )
    // a dead instance's run slots come back as its runs go stale
    const slots = link.runSlots(times.staleMs)
    const executor = new RunExecutor({
      preparer,
      responseCache: { store: store.responseCache, maxEntries: options.responseCacheMaxEntries ?? 10_000 },
      files: store.files,
      clientFor,
      capacity,
      runs: store.runs,
      ledger: store.ledger,
      database,
      sessions: sessionMemory,
      logger,
      metrics,
      coalescer: new CoalescerPacing(options.coalescer),
      heartbeatMs: times.heartbeatMs,
      noProgressMs: times.noProgressMs,
    })
    const queue: PromptQueue = new PromptQueue({
      executor,
      bus,
      entries: store.entries,
      runs: store.runs,
      ledger: store.ledger,
      events: store.events,
      sessions: sessionMemory,
      limits: { ...DEFAULT_QUEUE_LIMITS, ...options.limits },
      times,
      logger,
      metrics,
      ownership,
      database,
      clock: options.clock ?? Date.now,
      sessionRows: store.sessions,
      settlement: new RunSettlement(store.budgets, link.counters, slots, logger),
      budgets: store.budgets,
      slots,
    })
    const signers = new WebhookSigners(options.webhooks?.secrets ?? new Map())
    const budgets = new BudgetGuard(store, options.budgets ?? [])
    const limits = { ...DEFAULT_REQUEST_LIMITS, ...options.requestLimits }
    const limiter = new KeyLimiter(link.counters, limits.mutationsPerSecond, options.limitsWithoutRedis ?? 'deny')
    const host = new SessionHost({ store, memory: sessionMemory, queue, preparer, budgets, limiter, signers, metrics })
    const router = new SessionRouter(ownership, link, logger, host, new StoredSessionReads(store))
    const webhooks = new WebhookDispatcher(
      store.webhooks,
      signers,
      { retryDelaysMs: DEFAULT_RETRY_DELAYS_MS, ...DEFAULT_WEBHOOK_TIMES, ...options.webhooks },
      logger,
      metrics,
    )
    const keys = new KeyRing(options.apiKeys ?? null, store.apiKeys, link.fanout, logger, options.clock)
    const sessions = new SessionService(store, sessionMemory, catalog, queue, router, signers)
    const runs = new RunService(store, preparer, queue, bus, sessions, budgets, router)
    const services = {
      catalog: new CatalogService(catalog, secrets, capacity, new CatalogEvents(link.fanout), {
        credentialEnvAllowlist: allowlist,
        protectedLabels: protectedLabels(options.protectedLabels ?? []),
      }),
      sessions,
      runs,
      usage: new UsageService(store),
      replays: new ReplayService(store, sessions, runs),
      keys: new ApiKeyService(store.apiKeys, keys, budgets),
    }
    const uploads = new FileService(store, { ...DEFAULT_FILE_LIMITS, ...options.files })
    let draining: Promise<void> | null = null
    const probes = {
      ping: () => store.ping(),
      unready: async () => {
        if (draining !== null) return 'draining'
        const redisDown = await link!.ping().then(
          () => false,
          () => true,
        )
        if (redisDown) return 'redis does not answer'
        return store.unready()
      },
    }
    const subscriptions = new OpenSubscriptions()
    keys.onEnded((keyId) => subscriptions.endKey(keyId, 'the API key was revoked'))
    metrics.readFrom({
      queueDepth: () => queue.depth,
      capacity: () => capacity.snapshots(),
      openSubscriptions: () => subscriptions.total,
      dependencies: async () => {
        const answers = (check: Promise<void>) =>
          check.then(
            () => true,
            () => false,
          )
        const database = { dependency: 'database', up: await answers(store.ping()) }
        return options.redisUrl ? [database, { dependency: 'redis', up: await answers(link!.ping()) }] : [database]
      },
    })
    const openai = {
      chat: new OpenAIChatService(runs, sessions),
      responses: new OpenAIResponsesService(runs, sessions),
      catalog: services.catalog,
    }
    const yoga = createPromptlineYoga({
      schema,
      services,
      files: uploads,
      probes,
      logger,
      keys,
      limiter,
      openai,
      limits,
      metrics,
      subscriptions,
    })
    await router.start()
    await queue.recover()
    ownership.start()
    webhooks.start()
    const flush = () => bus.flush()
    const drain = () =>
      (draining ??= (async () => {
        // a run's end that waits for the database gives up: the next start ends it
        database.close()
        await queue.close(options.shutdownGraceMs ?? 10_000)
        await flush()
        // hand the sessions on: another instance takes their queued prompts at once
        await ownership.release()
      })())
    let closing: Promise<void> | null = null
    return {
      yoga,
      keys,
      limits,
      store,
      queue,
      flush,
      drain,
      close: () =>
        (closing ??= (async () => {
          await drain()
          // posts under way are cut off; their deliveries stay due in the store for the next start or another instance
          await webhooks.close()
          router.close()
          keys.close()
          await bus.close()
          await link!.close()
          await closeStore()
        })()),
    }
  } catch (err) {
    await link?.close()
    await closeStore()
    throw err
  }
}
