// Prints the Pothos schema to schema/schema.graphql (`--check` fails when the file is stale).
import { readFileSync, writeFileSync } from 'node:fs'
import { printSchema } from 'graphql'
import { schema } from '../src/schema/schema.js'

const target = new URL('../schema/schema.graphql', import.meta.url)
const printed = `${printSchema(schema)}\n`
if (process.argv.includes('--check')) {
  let current = ''
  try {
    current = readFileSync(target, 'utf8')
  } catch {}
  if (current !== printed) {
    console.error('schema/schema.graphql is stale: run npm run generate')
    process.exit(1)
  }
} else {
  writeFileSync(target, printed)
}
