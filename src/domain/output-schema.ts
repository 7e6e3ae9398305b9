import { Ajv, type ValidateFunction } from 'ajv'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'
import { TextKeyedCache } from './bounded-cache.js'
import { jsonOutOfBounds } from './json-bounds.js'

// ajv-formats is CommonJS; under NodeNext its default import is the module object.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default

// draft-07 by default; a schema that declares 2020-12 (zod's toJSONSchema does) is read as one.
// Each is made on first use: making one compiles its meta-schemas, work a start need not wait for.
let draft07: Ajv | null = null
let draft2020: Ajv2020 | null = null
const OPTIONS = { allErrors: true, strict: false }
function ajvFor(schema: Record<string, unknown>): Ajv {
  if (typeof schema.$schema === 'string' && schema.$schema.includes('2020-12')) {
    draft2020 ??= addFormats(new Ajv2020(OPTIONS))
    return draft2020
  }
  draft07 ??= addFormats(new Ajv(OPTIONS))
  return draft07
}
const validators = new TextKeyedCache<ValidateFunction>(8 * 1024 * 1024)

/** Compiles (and caches by its JSON text) a prompt's output JSON Schema. */
export function compileOutputSchema(
  schema: Record<string, unknown>,
): { validate: ValidateFunction; error?: undefined } | { validate?: undefined; error: string } {
  // a refinement may compile what its own bounds check refused; refuse it here too, before any recursion
  const outOfBounds = jsonOutOfBounds(schema)
  if (outOfBounds) return { error: `the schema ${outOfBounds}` }
  const key = JSON.stringify(schema)
  const cached = validators.get(key)
  if (cached) return { validate: cached }
  const ajv = ajvFor(schema)
  try {
    const validate = ajv.compile(schema)
    validators.set(key, validate)
    return { validate }
  } catch (err) {
    return { error: err instanceof Error ? err.message : String(err) }
  } finally {
    // Ajv keeps every schema object it compiled; ours are cached above, bounded
    ajv.removeSchema(schema)
  }
}
