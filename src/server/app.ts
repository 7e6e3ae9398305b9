import { Catalog } from '../catalog/catalog.js'
import { loadCatalogFiles } from '../catalog/files.js'
import type { Config } from '../config.js'
import type { Logger } from '../logger.js'
import type { SecretLookup } from '../runner/credentials.js'
import { PromptPreparer } from '../runner/prepare.js'
import { schema } from '../schema/schema.js'
import { CatalogService } from '../services/catalog-service.js'
import { RunService } from '../services/run-service.js'
import { openStore, type Store } from '../store/store.js'
import { createPromptlineYoga, type PromptlineYoga } from './yoga.js'

/** Everything the server runs, wired once. Its owner calls `close()`. */
export interface App {
  yoga: PromptlineYoga
  store: Store
  close(): Promise<void>
}

export type AppConfig = Pick<Config, 'databaseUrl' | 'catalogDir'>

/** Loads the catalog, opens and migrates the database, and wires services into yoga. */
export async function createApp(config: AppConfig, secrets: SecretLookup, logger: Logger): Promise<App> {
  const files = loadCatalogFiles(config.catalogDir)
  const store = await openStore(config.databaseUrl)
  try {
    const catalog = await Catalog.open(store, files)
    const preparer = new PromptPreparer(catalog, store.sessions, secrets)
    const services = { catalog: new CatalogService(catalog, secrets), runs: new RunService(preparer) }
    const yoga = createPromptlineYoga({ schema, services, ping: () => store.ping(), logger })
    return { yoga, store, close: () => store.close() }
  } catch (err) {
    await store.close()
    throw err
  }
}
