// npm start: runs dist/main.js, building first only the parts whose sources changed. A mistake
// in the environment is said before any build, so a typo costs no build time.
import { build, staleParts } from './build.mjs'

const stale = staleParts()
if (stale.length > 0) {
  const { tsImport } = await import('tsx/esm/api')
  const { loadConfig, ConfigError } = await tsImport('../src/config.ts', import.meta.url)
  try {
    loadConfig(process.env)
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    process.stderr.write(`promptline: ${err.message}\n`)
    process.exit(1)
  }
  build(stale)
}
await import('../dist/main.js')
