import { loadCatalogFiles } from '../catalog/files.js'
import type { ApiKeyEntry } from '../domain/access.js'
import type { Budget } from '../domain/budgets.js'
import type { SecretLookup } from '../domain/credentials.js'
import type { BackendKind } from '../domain/definitions.js'
import type { DurabilityTimes, FileLimits, QueueLimits, RequestLimits } from '../domain/limits.js'
import type { Logger } from '../domain/logger.js'
import type { ToolServerAccess } from '../domain/tool-servers.js'
import { type DeploymentLink, LocalLink, RedisLink } from '../events/deployment-pubsub.js'
import type { EventBusOptions } from '../events/event-bus.js'
import type { WebhookDispatcherOptions } from '../events/webhook-dispatcher.js'
import type { ModelClient } from '../providers/model-client.js'
import type { PromptQueue } from '../queue/prompt-queue.js'
import type { CoalescerOptions } from '../runner/token-coalescer.js'
import type { WithoutCounters } from '../services/key-limits.js'
import type { KeyRing } from '../services/key-ring.js'
import { openStore, type Store } from '../store/store.js'
import { wireEdge, wireRunPath, wireServices } from './app-wiring.js'
import type { PromptlineYoga } from './yoga.js'

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
  /** The MCP servers runs may call (default: none). */
  toolServers?: ToolServerAccess
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
    const runPath = await wireRunPath(options, { store, link, files, secrets, logger })
    const services = wireServices(options, runPath, { store, link, secrets, logger })
    let draining: Promise<void> | null = null
    const yoga = wireEdge(options, runPath, services, { store, link, logger, isDraining: () => draining !== null })
    const { bus, database, ownership, queue } = runPath
    await services.router.start()
    await queue.recover()
    ownership.start()
    services.webhooks.start()
    await services.services.experiments.start()
    const flush = () => bus.flush()
    const drain = () =>
      (draining ??= (async () => {
        // a run's end that waits for the database gives up: the next start ends it
        database.close()
        await queue.close(options.shutdownGraceMs ?? 10_000)
        await flush()
        // hand the sessions on, numbering included: another instance takes their queued prompts at once
        await queue.handOffAll()
        await ownership.release()
      })())
    let closing: Promise<void> | null = null
    return {
      yoga,
      keys: services.keys,
      limits: services.limits,
      store,
      queue,
      flush,
      drain,
      close: () =>
        (closing ??= (async () => {
          await drain()
          // posts under way are cut off; their deliveries stay due in the store for the next start or another instance
          await services.webhooks.close()
          services.services.experiments.close()
          services.router.close()
          services.keys.close()
          await bus.close()
          await runPath.toolServers.close()
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
