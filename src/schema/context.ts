import type { Principal } from '../domain/access.js'
import type { ApiKeyService } from '../services/api-key-service.js'
import type { CatalogService } from '../services/catalog-service.js'
import type { DatasetService } from '../services/dataset-service.js'
import type { ExperimentService } from '../services/experiment-service.js'
import type { ReplayService } from '../services/replay-service.js'
import type { RunService } from '../services/run-service.js'
import type { SessionService } from '../services/session-service.js'
import type { UsageService } from '../services/usage-service.js'

/** The services a resolver may call; built once per server and shared by HTTP and WebSocket. */
export interface Services {
  catalog: CatalogService
  runs: RunService
  sessions: SessionService
  usage: UsageService
  replays: ReplayService
  keys: ApiKeyService
  datasets: DatasetService
  experiments: ExperimentService
}

/** The one context type, for every request on every transport: the caller (every read and write is scoped to its tenant) and the services. */
export interface Context extends Principal {
  services: Services
}
