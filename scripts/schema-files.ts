// The files printed from the Pothos schema and committed under schema/ (`npm run generate:schema`).
import { isAbstractType, printSchema } from 'graphql'
import { schema } from '../src/schema/schema.js'

/**
 * Each union and interface with its object types, in the shape Apollo Client's `possibleTypes`
 * and urql's graphcache `possibleTypes` take: without it, `... on Error` matches nothing in a cache.
 */
function possibleTypes(): Record<string, string[]> {
  const map: Record<string, string[]> = {}
  for (const type of Object.values(schema.getTypeMap()).sort((a, b) => a.name.localeCompare(b.name))) {
    if (type.name.startsWith('__') || !isAbstractType(type)) continue
    map[type.name] = schema
      .getPossibleTypes(type)
      .map((t) => t.name)
      .sort()
  }
  return map
}

/** Path (from the project root) → content. */
export function schemaFiles(): Record<string, string> {
  return {
    'schema/schema.graphql': `${printSchema(schema)}\n`,
    'schema/possible-types.json': `${JSON.stringify(possibleTypes(), null, 2)}\n`,
  }
}
