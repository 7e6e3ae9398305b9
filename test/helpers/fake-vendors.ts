import type { AppOptions } from '../../src/server/app.js'
import { FakeVendorServer } from '../fixtures/fake-vendor.js'
import { catalogDir } from './catalog-dir.js'
import type { TestDatabase } from './databases.js'
import { startTestServer, type TestServer } from './server.js'

const SECRETS = { OA_KEY: 'sk-openai-fake-vendor-0123', AN_KEY: 'sk-ant-fake-vendor-4567' }

/** A test server beside a fake OpenAI and a fake Anthropic; `stop` ends all three. */
export interface VendorTestServer {
  t: TestServer
  openai: FakeVendorServer
  anthropic: FakeVendorServer
  stop(): Promise<void>
}

/**
 * Starts the fake vendors and a server whose catalog has the backends `fake`, `oa` (the fake
 * OpenAI) and `an` (the fake Anthropic), the profile `fake-echo`, and what `catalog` adds
 * (YAML sections from `profiles:` on; the profiles above are listed first).
 */
export async function startWithFakeVendors(
  catalog: string,
  options: { provider?: TestDatabase['provider']; app?: Partial<AppOptions>; logLines?: string[] } = {},
): Promise<VendorTestServer> {
  const openai = await FakeVendorServer.start('openai')
  const anthropic = await FakeVendorServer.start('anthropic')
  const backends = `
backends:
  - { id: fake, kind: FAKE }
  - { id: oa, kind: OPENAI, baseUrl: "${openai.baseUrl}", credentialEnv: OA_KEY }
  - { id: an, kind: ANTHROPIC, baseUrl: "${anthropic.baseUrl}", credentialEnv: AN_KEY }
profiles:
  - { id: fake-echo, backendId: fake, model: echo }
`
  const t = await startTestServer({
    provider: options.provider ?? 'sqlite',
    app: { catalogDir: catalogDir({ 'catalog.yaml': backends + catalog.replace(/^\s*profiles:\n/, '') }), ...options.app },
    secrets: SECRETS,
    logLines: options.logLines,
  })
  return {
    t,
    openai,
    anthropic,
    async stop() {
      await t.stop({ dropDatabase: true })
      await openai.close()
      await anthropic.close()
    },
  }
}
