import { CapacityPools } from '../capacity/capacity-pool.js'
import { Catalog } from '../catalog/catalog.js'
import type { loadCatalogFiles } from '../catalog/files.js'
import type { Backend } from '../domain/catalog.js'
import type { SecretLookup } from '../domain/credentials.js'
import type { BackendKind, Dialect } from '../domain/definitions.js'
import {
  DEFAULT_FILE_LIMITS,
  DEFAULT_QUEUE_LIMITS,
  DEFAULT_REQUEST_LIMITS,
  type DurabilityTimes,
  durabilityTimes,
} from '../domain/limits.js'
import type { Logger } from '../domain/logger.js'
import { protectedLabels } from '../domain/prompt-labels.js'
import { DEFAULT_RETRY_DELAYS_MS, WebhookSigners } from '../domain/webhooks.js'
import { CatalogEvents } from '../events/catalog-events.js'
import type { DeploymentLink } from '../events/deployment-pubsub.js'
import { DEFAULT_EVENT_BUS_OPTIONS, SessionEventBus } from '../events/event-bus.js'
import { ExperimentProgressEvents } from '../events/experiment-progress.js'
import { DEFAULT_WEBHOOK_TIMES, WebhookDispatcher } from '../events/webhook-dispatcher.js'
import { AnthropicModelClient } from '../providers/anthropic-client.js'
import { AZURE_API_VERSION, azureOpenAI } from '../providers/azure-openai.js'
import { COMPATIBLE_SERVERS } from '../providers/compatible-servers.js'
import { FakeModelClient } from '../providers/fake-client.js'
import { GeminiModelClient } from '../providers/gemini-client.js'
import type { ModelClient } from '../providers/model-client.js'
import { compatibleVendor, OpenAIModelClient } from '../providers/openai-client.js'
import { ToolServerClients } from '../providers/tool-server-clients.js'
import { PromptQueue } from '../queue/prompt-queue.js'
import { RunSettlement } from '../queue/run-settlement.js'
import { SessionLeases } from '../queue/session-leases.js'
import { PromptPreparer } from '../runner/prepare.js'
import { RunExecutor, type RunExecutorDeps } from '../runner/run-executor.js'
import { CoalescerPacing } from '../runner/token-coalescer.js'
import { schema } from '../schema/schema.js'
import { AgUiRunService } from '../services/ag-ui-runs.js'
import { ApiKeyService } from '../services/api-key-service.js'
import { BudgetGuard } from '../services/budget-guard.js'
import { CatalogService } from '../services/catalog-service.js'
import { DatasetService } from '../services/dataset-service.js'
import { ExperimentScoring } from '../services/experiment-judge.js'
import { ExperimentService } from '../services/experiment-service.js'
import { FileService } from '../services/file-service.js'
import { KeyLimiter } from '../services/key-limits.js'
import { KeyRing } from '../services/key-ring.js'
import { McpPromptService } from '../services/mcp-prompts.js'
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
import type { Store } from '../store/store.js'
import type { AppOptions } from './app.js'
import { PrometheusMetrics } from './metrics.js'
import { OpenSubscriptions } from './open-subscriptions.js'
import { createPromptlineYoga, type PromptlineYoga } from './yoga.js'

/** What the pieces of an app are wired from. */
interface Grounds {
  store: Store
  link: DeploymentLink
  logger: Logger
}

/** How long a server's tool list is kept when it sends no notifications/tools/list_changed. */
const TOOL_LIST_TTL_MS = 5 * 60_000

/** The run path: the catalog and preparation, the event bus, capacity, session leases and the queue over them. */
export async function wireRunPath(
  options: AppOptions,
  grounds: Grounds & { files: ReturnType<typeof loadCatalogFiles>; secrets: SecretLookup },
) {
  const { store, link, files, secrets, logger } = grounds
  // with several processes a cached definition could be stale: read them from the store
  const catalog = await Catalog.open(store, files, { cached: !options.redisUrl })
  const sessionMemory = new SessionMemory(store.sessions)
  const allowlist = options.credentialEnvAllowlist ?? []
  const preparer = new PromptPreparer(catalog, sessionMemory, secrets, store.files, allowlist, options.toolServers)
  const toolServers = new ToolServerClients(secrets, TOOL_LIST_TTL_MS)
  const busOptions = { ...DEFAULT_EVENT_BUS_OPTIONS, ...options.events }
  const metrics = new PrometheusMetrics()
  const bus = new SessionEventBus(store.events, store.sessions, logger, busOptions, link.fanout, metrics)
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
    { hasWork: (t, s): boolean => queue.hasWork(t, s), lost: (t, s) => queue.lose(t, s) },
    database,
    logger,
    options.clock,
  )
  // a dead instance's run slots come back as its runs go stale
  const slots = link.runSlots(times.staleMs)
  const executor = runnerOf(options, store, { preparer, capacity, database, sessionMemory, logger, metrics, times, toolServers })
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
  return { catalog, sessionMemory, preparer, metrics, bus, capacity, database, ownership, queue, allowlist, toolServers }
}

type RunPath = Awaited<ReturnType<typeof wireRunPath>>

/**
 * The model client of each backend: one per kind (the fake one built in), and one per Azure
 * api-version and per named OpenAI-compatible server; a client given in the options serves its whole kind.
 */
function modelClients(given: AppOptions['clients']): (backend: Backend) => ModelClient {
  const clients: Record<Exclude<BackendKind, 'AZURE_OPENAI'>, ModelClient> & Partial<Record<BackendKind, ModelClient>> = {
    FAKE: new FakeModelClient(),
    OPENAI: new OpenAIModelClient(),
    ANTHROPIC: new AnthropicModelClient(),
    GEMINI: new GeminiModelClient(),
    ...given,
  }
  // Azure's SDK puts the api-version in every request's query
  const azure = new Map<string, ModelClient>()
  const compatible = new Map<Dialect, ModelClient>()
  return (backend) => {
    if (backend.kind === 'AZURE_OPENAI') {
      const version = backend.apiVersion ?? AZURE_API_VERSION
      const client = clients.AZURE_OPENAI ?? azure.get(version) ?? new OpenAIModelClient(azureOpenAI(version))
      azure.set(version, client)
      return client
    }
    const { dialect } = backend
    if (backend.kind !== 'OPENAI' || !dialect || given?.OPENAI) return clients[backend.kind]
    const client = compatible.get(dialect) ?? new OpenAIModelClient(compatibleVendor(COMPATIBLE_SERVERS[dialect]))
    compatible.set(dialect, client)
    return client
  }
}

/** The runner: the executor over the model clients. */
function runnerOf(
  options: AppOptions,
  store: Store,
  parts: Pick<RunExecutorDeps, 'preparer' | 'capacity' | 'database' | 'logger' | 'metrics' | 'toolServers'> & {
    sessionMemory: SessionMemory
    times: DurabilityTimes
  },
): RunExecutor {
  const { sessionMemory, times, ...given } = parts
  return new RunExecutor({
    ...given,
    responseCache: { store: store.responseCache, maxEntries: options.responseCacheMaxEntries ?? 10_000 },
    files: store.files,
    clientFor: modelClients(options.clients),
    runs: store.runs,
    ledger: store.ledger,
    sessions: sessionMemory,
    coalescer: new CoalescerPacing(options.coalescer),
    heartbeatMs: times.heartbeatMs,
    noProgressMs: times.noProgressMs,
  })
}

/** The use cases over the run path: sessions, runs, keys and limits, the session router, webhooks. */
export function wireServices(options: AppOptions, runPath: RunPath, grounds: Grounds & { secrets: SecretLookup }) {
  const { store, link, secrets, logger } = grounds
  const { catalog, sessionMemory, preparer, metrics, bus, capacity, ownership, queue, allowlist } = runPath
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
  const datasets = new DatasetService(store)
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
    datasets,
    experiments: new ExperimentService(
      store,
      runs,
      sessions,
      datasets,
      new ExperimentScoring(runs, sessions),
      new ExperimentProgressEvents(link.fanout),
      signers,
      logger,
      durabilityTimes(options.durability),
    ),
  }
  const uploads = new FileService(store, { ...DEFAULT_FILE_LIMITS, ...options.files })
  const openai = {
    chat: new OpenAIChatService(runs, sessions),
    responses: new OpenAIResponsesService(runs, sessions),
    catalog: services.catalog,
  }
  const mcp = new McpPromptService(services.catalog, runs, sessions)
  const agUi = new AgUiRunService(runs, sessions)
  return { services, uploads, openai, mcp, agUi, limits, limiter, router, webhooks, keys }
}

/** The edge: probes, open subscriptions, metrics and yoga over the services. */
export function wireEdge(
  options: AppOptions,
  runPath: RunPath,
  wired: ReturnType<typeof wireServices>,
  grounds: Grounds & { isDraining: () => boolean },
): PromptlineYoga {
  const { store, link, logger, isDraining } = grounds
  const { metrics, queue, capacity } = runPath
  const { keys } = wired
  const probes = {
    ping: () => store.ping(),
    unready: async () => {
      if (isDraining()) return 'draining'
      const redisDown = await link.ping().then(
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
      return options.redisUrl ? [database, { dependency: 'redis', up: await answers(link.ping()) }] : [database]
    },
  })
  return createPromptlineYoga({
    schema,
    services: wired.services,
    files: wired.uploads,
    probes,
    logger,
    keys,
    limiter: wired.limiter,
    openai: wired.openai,
    mcp: wired.mcp,
    agUi: wired.agUi,
    limits: wired.limits,
    metrics,
    subscriptions,
  })
}
