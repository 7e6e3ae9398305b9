import { execFileSync, spawnSync } from 'node:child_process'
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PROJECT_ROOT } from '../../src/config.js'

const SCRIPT = path.join(PROJECT_ROOT, 'scripts/migrations.mjs')

// The PostgreSQL half replays migrations into a throwaway database on DATABASE_URL's server.
describe.skipIf(!process.env.DATABASE_URL)('npm run db:migration and db:check, on a copy of prisma/', () => {
  let dir: string
  const run = (...args: string[]) => spawnSync('node', [SCRIPT, ...args], { cwd: dir, encoding: 'utf8', env: process.env })
  const migrationsOf = (provider: string) => readdirSync(path.join(dir, 'prisma/migrations', provider)).filter((n) => !n.endsWith('.toml'))

  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'promptline-prisma-'))
    cpSync(path.join(PROJECT_ROOT, 'prisma'), path.join(dir, 'prisma'), { recursive: true })
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('passes when the committed migrations match the schema', () => {
    const check = run('check')
    expect(check.stderr).toBe('')
    expect(check.status).toBe(0)
  })

  it('fails when prisma/schema.prisma changes without a migration, and passes once db:migration wrote one for both providers', () => {
    const schemaFile = path.join(dir, 'prisma/schema.prisma')
    writeFileSync(schemaFile, readFileSync(schemaFile, 'utf8').replace(/model Session \{\n/, 'model Session {\n  note String?\n'))
    execFileSync('node', [path.join(PROJECT_ROOT, 'scripts/derive-sqlite-schema.mjs')], { cwd: dir })
    const drift = run('check')
    expect(drift.status).toBe(1)
    expect(drift.stderr).toMatch(/sqlite: .*lacks changes[\s\S]*"note" TEXT/)
    expect(drift.stderr).toMatch(/postgresql: .*lacks changes[\s\S]*"note" TEXT/)

    const before = { sqlite: migrationsOf('sqlite').length, postgresql: migrationsOf('postgresql').length }
    const created = run('new', 'add_session_note')
    expect(created.status).toBe(0)
    expect(migrationsOf('sqlite')).toHaveLength(before.sqlite + 1)
    expect(migrationsOf('postgresql')).toHaveLength(before.postgresql + 1)
    expect(migrationsOf('postgresql').at(-1)).toMatch(/^\d{14}_add_session_note$/)
    expect(run('check').status).toBe(0)
  })

  it('fails when the derived SQLite schema is stale', () => {
    const schemaFile = path.join(dir, 'prisma/schema.prisma')
    writeFileSync(schemaFile, readFileSync(schemaFile, 'utf8').replace('  note String?\n', '  note String?\n  mood String?\n'))
    const stale = run('check')
    expect(stale.status).toBe(1)
    expect(stale.stderr).toContain('prisma/sqlite/schema.prisma is stale')
  })
})
