import { defineConfig } from 'prisma/config'

// `prisma generate` needs no engine but checks that one exists; the native one cannot be
// downloaded here, and migrations go through src/store/migrate.ts instead.
process.env.PRISMA_SCHEMA_ENGINE_BINARY ??= '/bin/false'

export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations/postgresql' },
  datasource: { url: process.env.DATABASE_URL ?? 'file:./data/promptline.db' },
})
