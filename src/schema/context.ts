import type { AccessRole } from '../domain/access.js'
import type { CatalogService } from '../services/catalog-service.js'
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
}

/** The one context type, for every request on every transport. */
export interface Context {
  /** The caller's tenant: every read and write is scoped to it. */
  tenantId: string
  /** What the caller's key may do. */
  role: AccessRole
  /** The caller's key, named without revealing it (rate limits count per key). */
  keyId: string
  services: Services
}
