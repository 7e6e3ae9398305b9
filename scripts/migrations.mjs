// Migrations for both providers, from the one schema anyone edits (prisma/schema.prisma).
//   node scripts/migrations.mjs new NAME   (npm run db:migration NAME) derives prisma/sqlite/schema.prisma and
//                                          writes prisma/migrations/{sqlite,postgresql}/<timestamp>_NAME/migration.sql
//   node scripts/migrations.mjs check      (npm run db:check) fails when a schema has changes no migration holds
// Paths are relative to the working folder. PostgreSQL needs a server to replay migrations into a
// throwaway shadow database: DATABASE_URL when it is a postgres URL, else postgres@127.0.0.1:5432.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import fs from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { EMPTY_MIGRATION, openSchemaEngine } from './schema-engine.mjs'

const scripts = path.dirname(fileURLToPath(import.meta.url))
const postgresUrl = /^postgres(ql)?:/.test(process.env.DATABASE_URL ?? '')
  ? process.env.DATABASE_URL
  : 'postgresql://postgres@127.0.0.1:5432/postgres'
const scratch = mkdtempSync(path.join(tmpdir(), 'promptline-migrations-'))
const PROVIDERS = [
  { provider: 'sqlite', schemaPath: 'prisma/sqlite/schema.prisma', url: `file:${path.join(scratch, 'engine.db')}` },
  { provider: 'postgresql', schemaPath: 'prisma/schema.prisma', url: postgresUrl },
]

/** The SQL each provider's migrations still lack. */
async function pending() {
  const result = []
  for (const { provider, schemaPath, url } of PROVIDERS) {
    const engine = await openSchemaEngine({ url, schemaPath, migrationsDir: path.resolve('prisma/migrations', provider) })
    try {
      result.push({ provider, sql: await engine.pendingSql() })
    } finally {
      await engine.close()
    }
  }
  return result
}

async function create(name) {
  if (!/^[a-z0-9_]{1,64}$/.test(name ?? ''))
    throw new Error('give the migration a name of a-z 0-9 _, e.g. npm run db:migration add_api_keys')
  execFileSync('node', [path.join(scripts, 'derive-sqlite-schema.mjs')], { stdio: 'inherit' })
  const stamp = new Date().toISOString().replace(/\D/g, '').slice(0, 14)
  for (const { provider, sql } of await pending()) {
    if (sql === EMPTY_MIGRATION || sql === '') {
      console.log(`${provider}: already in sync, no migration written`)
      continue
    }
    const dir = path.resolve('prisma/migrations', provider, `${stamp}_${name}`)
    await fs.mkdir(dir, { recursive: true })
    await fs.writeFile(path.join(dir, 'migration.sql'), `${sql}\n`)
    console.log(`${provider}: wrote ${path.relative(process.cwd(), dir)}/migration.sql`)
  }
}

async function check() {
  execFileSync('node', [path.join(scripts, 'derive-sqlite-schema.mjs'), '--check'], { stdio: 'inherit' })
  let drift = false
  for (const { provider, sql } of await pending()) {
    if (sql === EMPTY_MIGRATION) continue
    drift = true
    console.error(`${provider}: prisma/migrations/${provider} lacks changes of the schema (run npm run db:migration NAME):\n${sql}`)
  }
  if (drift) process.exitCode = 1
  else console.log('migrations match the schema for sqlite and postgresql')
}

const [command, name] = process.argv.slice(2)
try {
  if (command === 'new') await create(name)
  else if (command === 'check') await check()
  else {
    console.error('usage: node scripts/migrations.mjs new NAME | check')
    process.exitCode = 2
  }
} catch (error) {
  if (!error.status) console.error(`migrations: ${error.message}`) // a failed child has said why
  process.exitCode = 1
} finally {
  rmSync(scratch, { recursive: true, force: true })
}
// the engine leaves a lock-timeout timer pending on PostgreSQL; nothing else is left to wait for
process.exit(process.exitCode ?? 0)
