import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import pg from 'pg'

/** A throwaway database; `drop()` removes it and everything in it. */
export interface TestDatabase {
  provider: 'sqlite' | 'postgresql'
  url: string
  drop(): Promise<void>
}

/** The providers this run covers: SQLite always, PostgreSQL when DATABASE_URL is set (as in CI). */
export const providers: TestDatabase['provider'][] = process.env.DATABASE_URL ? ['sqlite', 'postgresql'] : ['sqlite']

/** A fresh SQLite file, or a fresh PostgreSQL database with a random name on DATABASE_URL's server. */
export async function createTestDatabase(provider: TestDatabase['provider']): Promise<TestDatabase> {
  if (provider === 'sqlite') {
    const dir = mkdtempSync(path.join(tmpdir(), 'promptline-test-'))
    return { provider, url: `file:${path.join(dir, 'test.db')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) }
  }
  const adminUrl = process.env.DATABASE_URL
  if (!adminUrl) throw new Error('DATABASE_URL is not set')
  const name = `promptline_test_${randomBytes(6).toString('hex')}`
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  try {
    await admin.query(`CREATE DATABASE "${name}"`)
  } finally {
    await admin.end()
  }
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return {
    provider,
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: adminUrl })
      await client.connect()
      try {
        await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)
      } finally {
        await client.end()
      }
    },
  }
}
