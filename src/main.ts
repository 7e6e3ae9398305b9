import { CatalogFileError } from './catalog/files.js'
import { type Config, ConfigError, loadConfig } from './config.js'
import { createLogger, type Logger } from './domain/logger.js'
import { type App, type AppOptions, createApp } from './server/app.js'
import { PortInUseError, startHttpServer } from './server/http.js'
import { startTracing } from './server/tracing.js'

/** A mistake in the environment or the catalog files, or a port taken: said in one line, and the process exits. */
function exitOnMistake(err: unknown): never {
  if (err instanceof ConfigError || err instanceof CatalogFileError || err instanceof PortInUseError) {
    process.stderr.write(`promptline: ${err.message}\n`)
    process.exit(1)
  }
  throw err
}

/** The app's options from the configuration. */
function appOptions(config: Config): AppOptions {
  return {
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
    toolServers: config.toolServers,
    responseCacheMaxEntries: config.responseCacheMaxEntries,
    files: config.files,
    apiKeys: config.apiKeys,
    requestLimits: config.requestLimits,
    budgets: config.budgets,
    limitsWithoutRedis: config.limitsWithoutRedis,
    webhooks: config.webhooks,
  }
}

/** SIGINT and SIGTERM drain: running prompts finish while the listener serves their streams, then everything stops. */
function drainOnSignals(stop: { app: App; http: { stop(): Promise<void> }; tracing: () => Promise<void> }, logger: Logger): void {
  let stopping = false
  const shutdown = (signal: string) => {
    if (stopping) return
    stopping = true
    logger.info('draining', { signal })
    void stop.app
      .drain()
      .then(() => stop.http.stop())
      .then(() => stop.app.close())
      .then(() => stop.tracing())
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

// The only file that reads process.env or listens.
async function main(): Promise<void> {
  let config: Config
  try {
    config = loadConfig(process.env)
  } catch (err) {
    exitOnMistake(err)
  }
  const logger = createLogger(config.logLevel, undefined, config.logFormat)
  const stopTracing = config.tracing ? await startTracing(config.tracing, logger) : async () => {}
  const app = await createApp(appOptions(config), (name) => process.env[name], logger).catch(exitOnMistake)
  const http = await startHttpServer(app, config.host, config.port, config.keepAliveMs).catch(exitOnMistake)
  logger.info('promptline listening', { url: `${http.url}/graphql`, database: app.store.provider, redis: config.redisUrl !== null })
  // the one line shown whatever the level, for whoever started it; a JSON line where lines are JSON
  const ready = `GraphiQL at ${http.url}/graphql`
  process.stdout.write(
    config.logFormat === 'json'
      ? `${JSON.stringify({ time: new Date().toISOString(), level: 'info', message: ready })}\n`
      : `promptline: ${ready}\n`,
  )
  drainOnSignals({ app, http, tracing: stopTracing }, logger)
}

main().catch((err: unknown) => {
  process.stderr.write(`promptline: failed to start: ${err instanceof Error ? err.message : String(err)}\n`)
  process.exit(1)
})
