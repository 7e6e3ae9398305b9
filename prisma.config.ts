import { defineConfig } from 'prisma/config'

// `prisma generate` needs no engine but checks that one exists; the native one cannot be
// downloaded here. Migrations are written and checked by scripts/migrations.mjs (npm run
// db:migration NAME, npm run db:check) and applied at start by src/store/migrator.ts.
process.env.PRISMA_SCHEMA_ENGINE_BINARY ??= '/bin/false'

export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations/postgresql' },
  datasource: { url: process.env.DATABASE_URL ?? 'file:./data/promptline.db' },
})
