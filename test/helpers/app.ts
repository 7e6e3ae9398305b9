import path from 'node:path'
import type { TypedDocumentNode } from '@graphql-typed-document-node/core'
import { print } from 'graphql'
import { PROJECT_ROOT } from '../../src/config.js'
import { createLogger } from '../../src/domain/logger.js'
import { type App, createApp } from '../../src/server/app.js'
import { createTestDatabase, type TestDatabase } from './databases.js'

export const DEFAULT_CATALOG = path.join(PROJECT_ROOT, 'catalog')

export interface GraphQLResponse<T> {
  data?: T | null
  errors?: { message: string; path?: string[]; extensions?: { code?: string } }[]
}

export interface TestApp {
  app: App
  database: TestDatabase
  /** Runs a typed operation through `yoga.fetch`, in process. */
  execute<T, V>(document: TypedDocumentNode<T, V>, variables?: V): Promise<GraphQLResponse<T>>
  /** The raw text of the last responses, for searching them for secrets. */
  readonly transcript: string[]
  close(): Promise<void>
}

/** A server app on a fresh database, with the given catalog folder and environment secrets. */
export async function createTestApp(options: {
  provider: TestDatabase['provider']
  catalogDir?: string
  secrets?: Record<string, string>
}): Promise<TestApp> {
  const database = await createTestDatabase(options.provider)
  const secrets = options.secrets ?? {}
  const app = await createApp(
    { databaseUrl: database.url, catalogDir: options.catalogDir ?? DEFAULT_CATALOG },
    (name) => secrets[name],
    createLogger('silent'),
  ).catch(async (err: unknown) => {
    await database.drop()
    throw err
  })
  const transcript: string[] = []
  return {
    app,
    database,
    transcript,
    async execute(document, variables) {
      const response = await app.yoga.fetch('http://promptline.test/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: print(document), variables }),
      })
      const text = await response.text()
      transcript.push(text)
      return JSON.parse(text)
    },
    async close() {
      await app.close()
      await database.drop()
    },
  }
}
