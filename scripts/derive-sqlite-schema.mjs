// Derives prisma/sqlite/schema.prisma from prisma/schema.prisma: only the datasource provider
// and the client generator's output change, and the Kysely types (the same for both) are
// generated from the main schema alone. `--check` fails when the committed copy is stale.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'

const source = readFileSync('prisma/schema.prisma', 'utf8')
for (const banned of [/@db\./, /extensions\s*=/, /schemas\s*=/]) {
  if (banned.test(source)) throw new Error(`prisma/schema.prisma uses ${banned}: not portable to SQLite`)
}
const derived =
  '// GENERATED from prisma/schema.prisma by scripts/derive-sqlite-schema.mjs — do not edit.\n' +
  source
    .replace(/\n(\/\/[^\n]*\n)*generator kysely \{[^}]*\}\n/, '')
    .replace(/provider\s*=\s*"postgresql"/, 'provider = "sqlite"')
    .replace('output              = "../src/generated/pg"', 'output              = "../../src/generated/sqlite"')
const target = 'prisma/sqlite/schema.prisma'
if (process.argv.includes('--check')) {
  let current = ''
  try {
    current = readFileSync(target, 'utf8')
  } catch {}
  if (current !== derived) {
    console.error(`${target} is stale: run node scripts/derive-sqlite-schema.mjs`)
    process.exit(1)
  }
} else {
  mkdirSync('prisma/sqlite', { recursive: true })
  writeFileSync(target, derived)
}
