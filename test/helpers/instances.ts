import { LocalLink, localFanout } from '../../src/events/deployment-pubsub.js'
import type { AppOptions } from '../../src/server/app.js'
import { openStore, type Store } from '../../src/store/store.js'
import { createTestDatabase, type TestDatabase } from './databases.js'
import { startTestServer, type TestServer } from './server.js'

/** Apps in this process, each under its own instance id, on one store and one in-memory fan-out. */
export interface InstancesInProcess {
  servers: TestServer[]
  store: Store
  /** Stops the apps, closes the store and drops the database. */
  stop(): Promise<void>
}

export async function instancesInProcess(
  provider: TestDatabase['provider'],
  ids: readonly string[],
  app: Partial<AppOptions> = {},
): Promise<InstancesInProcess> {
  const database = await createTestDatabase(provider)
  const store = await openStore(database.url)
  const fanout = localFanout()
  const servers: TestServer[] = []
  for (const id of ids) servers.push(await startTestServer({ provider, database, app: { ...app, store, link: new LocalLink(id, fanout) } }))
  return {
    servers,
    store,
    async stop() {
      for (const server of servers) await server.stop()
      await store.close()
      await database.drop()
    },
  }
}
