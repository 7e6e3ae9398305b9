import { CatalogFileError } from './catalog/files.js'
import { type Config, ConfigError, loadConfig } from './config.js'
import { createLogger } from './domain/logger.js'
import { createApp } from './server/app.js'
import { startHttpServer } from './server/http.js'
import { startTracing } from './server/tracing.js'

// The only file that reads process.env or listens.
async function main(): Promise<void> {
  let config: Config
  try {
    config = loadConfig(process.env)
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`promptline: ${err.message}\n`)
      process.exit(1)
    }
    throw err
  }
  const logger = createLogger(config.logLevel, undefined, config.logFormat)
  const stopTracing = config.tracing ? await startTracing(config.tracing, logger) : async () => {}
  const app = await createApp(
    {
      databaseUrl: config.databaseUrl,
      catalogDir: config.catalogDir,
      limits: config.limits,
      coalescer: config.coalescer,
      shutdownGraceMs: config.shutdownGraceMs,
      durability: config.durability,
      redisUrl: config.redisUrl,
      redisPrefix: config.redisPrefix,
      credentialEnvAllowlist: config.credentialEnvAllowlist,
      protectedLabels: config.protectedLabels,
      responseCacheMaxEntries: config.responseCacheMaxEntries,
      files: config.files,
      apiKeys: config.apiKeys,
      requestLimits: config.requestLimits,
      budgets: config.budgets,
      limitsWithoutRedis: config.limitsWithoutRedis,
      webhooks: config.webhooks,
    },
    (name) => process.env[name],
    logger,
  ).catch((err: unknown) => {
    if (err instanceof CatalogFileError) {
      process.stderr.write(`promptline: ${err.message}\n`)
      process.exit(1)
    }
    throw err
  })
  const http = await startHttpServer(app, config.host, config.port, config.keepAliveMs)
  logger.info('promptline listening', { url: `${http.url}/graphql`, database: app.store.provider, redis: config.redisUrl !== null })
  // the one line shown whatever the level, for whoever started it; a JSON line where lines are JSON
  const ready = `GraphiQL at ${http.url}/graphql`
  process.stdout.write(
    config.logFormat === 'json'
      ? `${JSON.stringify({ time: new Date().toISOString(), level: 'info', message: ready })}\n`
      : `promptline: ${ready}\n`,
  )

  let stopping = false
  const shutdown = (signal: string) => {
    if (stopping) return
    stopping = true
    logger.info('draining', { signal })
    // keep serving while running prompts finish, so their streams end; then stop listening
    void app
      .drain()
      .then(() => http.stop())
      .then(() => app.close())
      .then(() => stopTracing())
      .then(
        () => process.exit(0),
        (err: unknown) => {
          logger.error('shutdown failed', { error: (err as Error).message })
          process.exit(1)
        },
      )
  }
  process.on('SIGINT', () => shutdown('SIGINT'))
  process.on('SIGTERM', () => shutdown('SIGTERM'))
}

main().catch((err: unknown) => {
  process.stderr.write(`promptline: failed to start: ${err instanceof Error ? err.message : String(err)}\n`)
  process.exit(1)
})
