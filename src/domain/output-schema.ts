import { Ajv, type ValidateFunction } from 'ajv'
import addFormatsModule from 'ajv-formats'
import { TextKeyedCache } from './bounded-cache.js'

// ajv-formats is CommonJS; under NodeNext its default import is the module object.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default

const ajv = new Ajv({ allErrors: true, strict: false })
addFormats(ajv)
const validators = new TextKeyedCache<ValidateFunction>(8 * 1024 * 1024)

/** Compiles (and caches by its JSON text) a prompt's output JSON Schema. */
export function compileOutputSchema(
  schema: Record<string, unknown>,
): { validate: ValidateFunction; error?: undefined } | { validate?: undefined; error: string } {
  const key = JSON.stringify(schema)
  const cached = validators.get(key)
  if (cached) return { validate: cached }
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
