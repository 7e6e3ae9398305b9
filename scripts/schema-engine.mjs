// Prisma's schema engine, run from its WASM build through the driver adapters, so migrations can
// be written and checked where the native schema-engine binary cannot be downloaded (the Prisma
// CLI's `migrate dev|diff` need it). Used by scripts/migrations.mjs; the server applies the
// committed SQL itself at start (src/store/migrator.ts).
import { randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import fs from 'node:fs/promises'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

// Packages come from this repository's node_modules, whatever the working folder.
const require = createRequire(fileURLToPath(import.meta.url))
const load = (spec) => import(pathToFileURL(require.resolve(spec)).href)

export const EMPTY_MIGRATION = '-- This is an empty migration.'

/**
 * A PostgreSQL adapter whose shadow database is a fresh one on the same server, dropped after.
 * Not PrismaPg#connectToShadowDb(): with a connection string its pool connects to the main
 * database, and the engine's shadow reset would wipe it.
 */
async function postgresAdapter(url) {
  const { PrismaPg } = await load('@prisma/adapter-pg')
  const main = new PrismaPg({ connectionString: url })
  return {
    provider: main.provider,
    adapterName: main.adapterName,
    connect: () => main.connect(),
    connectToShadowDb: async () => {
      const admin = await main.connect()
      const name = `prisma_migrate_shadow_db_${randomUUID().replaceAll('-', '')}`
      await admin.executeScript(`CREATE DATABASE "${name}"`)
      const shadowUrl = new URL(url)
      shadowUrl.pathname = `/${name}`
      const shadow = await new PrismaPg({ connectionString: shadowUrl.toString() }).connect()
      const dispose = shadow.dispose.bind(shadow)
      shadow.dispose = async () => {
        await dispose()
        await admin.executeScript(`DROP DATABASE IF EXISTS "${name}"`)
        await admin.dispose()
      }
      return shadow
    },
  }
}

async function adapterFor(url) {
  if (url.startsWith('file:')) {
    const { PrismaBetterSqlite3 } = await load('@prisma/adapter-better-sqlite3')
    return new PrismaBetterSqlite3({ url })
  }
  if (/^postgres(ql)?:/.test(url)) return postgresAdapter(url)
  throw new Error(`unsupported database URL: ${url}`)
}

/**
 * Bridges the engine and the 7.10 adapters: the engine replays whole migration files through
 * executeRaw (better-sqlite3 prepares one statement at a time, so those go through
 * executeScript), and its PostgreSQL introspection selects `"char"` catalog columns that
 * adapter-pg rejects (they are re-read cast to text).
 */
function bridge(queryable) {
  const ASYNC = new Set(['queryRaw', 'executeRaw', 'executeScript', 'startTransaction', 'commit', 'rollback', 'dispose'])
  return new Proxy(queryable, {
    get(target, property) {
      const value = target[property]
      if (typeof value !== 'function') return value
      if (!ASYNC.has(property)) return value.bind(target)
      return async (...args) => {
        try {
          const result = await value.apply(target, args)
          return property === 'startTransaction' ? bridge(result) : result
        } catch (error) {
          const query = args[0]
          if (
            property === 'executeRaw' &&
            /more than one statement/.test(error?.message ?? '') &&
            !query?.args?.length &&
            target.executeScript
          ) {
            await target.executeScript(query.sql)
            return 0
          }
          if (
            property === 'queryRaw' &&
            error?.cause?.kind === 'UnsupportedNativeDataType' &&
            error.cause.type === 'char' &&
            target.client?.query
          ) {
            const sql = query.sql.trim().replace(/;\s*$/, '')
            const { fields } = await target.client.query({ text: `SELECT * FROM (${sql}) AS __q LIMIT 0`, values: query.args })
            const columns = fields.map((f) => `__q."${f.name}"${f.dataTypeID === 18 ? `::text AS "${f.name}"` : ''}`)
            return target.queryRaw({ ...query, sql: `SELECT ${columns.join(', ')} FROM (${sql}) AS __q` })
          }
          throw error
        }
      }
    },
  })
}

/** The engine module, instantiated once per process (its glue module holds a single instance). */
let wasmEngine = null
function instantiateWasm() {
  wasmEngine ??= instantiate()
  return wasmEngine
}

async function instantiate() {
  // the engine reports a panic's message here before it throws
  globalThis.PRISMA_WASM_PANIC_REGISTRY ??= { set_message: (message) => console.error(`schema engine panic: ${message}`) }
  const glue = await load('@prisma/schema-engine-wasm/schema_engine_bg')
  const dir = path.dirname(require.resolve('@prisma/schema-engine-wasm/schema_engine_bg'))
  const module = new WebAssembly.Module(readFileSync(path.join(dir, 'schema_engine_bg.wasm')))
  const instance = new WebAssembly.Instance(module, { './schema_engine_bg.js': glue })
  glue.__wbg_set_wasm(instance.exports)
  instance.exports.__wbindgen_start?.()
  return glue
}

async function readMigrations(dir) {
  const lockfile = await fs.readFile(path.join(dir, 'migration_lock.toml'), 'utf8').catch(() => null)
  const entries = await fs.readdir(dir, { withFileTypes: true }).catch(() => [])
  const names = entries
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort()
  const migrationDirectories = await Promise.all(
    names.map(async (name) => {
      const content = await fs.readFile(path.join(dir, name, 'migration.sql'), 'utf8').then(
        (value) => ({ tag: 'ok', value }),
        (error) => ({ tag: 'error', value: String(error) }),
      )
      return { path: name, migrationFile: { path: 'migration.sql', content } }
    }),
  )
  return { baseDir: dir, lockfile: { path: 'migration_lock.toml', content: lockfile }, shadowDbInitScript: '', migrationDirectories }
}

/**
 * The engine for one Prisma schema and its migrations folder, connected through `url` (the
 * main database is only read; migrations are replayed into a throwaway shadow database).
 * The caller calls `close()`.
 */
export async function openSchemaEngine({ url, schemaPath, migrationsDir }) {
  const wasm = await instantiateWasm()
  const { bindMigrationAwareSqlAdapterFactory } = await load('@prisma/driver-adapter-utils')
  const schemaContent = await fs.readFile(schemaPath, 'utf8')
  const raw = await adapterFor(url)
  const opened = [] // the engine never disposes its main connection
  const factory = bindMigrationAwareSqlAdapterFactory({
    provider: raw.provider,
    adapterName: raw.adapterName,
    connect: async () => {
      const connection = await raw.connect()
      opened.push(connection)
      return bridge(connection)
    },
    connectToShadowDb: async () => bridge(await raw.connectToShadowDb()),
  })
  const engine = await wasm.SchemaEngine.new({ datamodels: [[path.resolve(schemaPath), schemaContent]] }, () => {}, factory)
  const filters = { externalTables: [], externalEnums: [] }
  return {
    /** The SQL that takes the migrations folder to the schema; EMPTY_MIGRATION when they match. */
    async pendingSql() {
      const migrations = await readMigrations(migrationsDir)
      const from = migrations.migrationDirectories.length > 0 ? { tag: 'migrations', ...migrations } : { tag: 'empty' }
      const to = { tag: 'schemaDatamodel', files: [{ path: path.resolve(schemaPath), content: schemaContent }] }
      const result = await engine.diff({ from, to, script: true, exitCode: null, filters })
      return (result.stdout ?? '').trim()
    },
    async close() {
      engine.free()
      await Promise.allSettled(opened.map((c) => c.dispose()))
    },
  }
}
