import type { OutputContract } from './definitions.js'
import { OutputValidationError } from './errors.js'
import { compileOutputSchema } from './output-schema.js'

export interface ValidationResult {
  valid: boolean
  errors: string[]
  /** The parsed JSON, for JSON and JSON_SCHEMA contracts that parsed. */
  parsed: unknown
}

/** Models like to fence JSON in ```json … ```; one fence around the whole answer is taken off. */
function unfence(text: string): string {
  const match = /^```[a-zA-Z]*\s*\n([\s\S]*?)\n?```$/.exec(text.trim())
  return match ? match[1]! : text
}

/**
 * Checks an answer against its contract. An invalid answer is a result; only failing to run
 * the check at all (a schema that does not compile) throws, as VALIDATION.
 */
export function validateOutput(contract: OutputContract, output: string): ValidationResult {
  if (contract.kind === 'TEXT') return { valid: true, errors: [], parsed: undefined }
  let parsed: unknown
  try {
    parsed = JSON.parse(unfence(output))
  } catch (error) {
    return { valid: false, errors: [`not valid JSON: ${(error as Error).message}`], parsed: undefined }
  }
  if (contract.kind === 'JSON') return { valid: true, errors: [], parsed }
  const { validate, error } = compileOutputSchema(contract.schema ?? {})
  if (error !== undefined) throw new OutputValidationError(`the output schema does not compile: ${error}`)
  if (validate(parsed)) return { valid: true, errors: [], parsed }
  const errors = (validate.errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message ?? 'is invalid'}`)
  return { valid: false, errors, parsed }
}

/** The user message of a repair generation: what was wrong, and what to answer instead. */
export function repairInstruction(contract: OutputContract, errors: string[]): string {
  const wanted = contract.kind === 'JSON_SCHEMA' ? `JSON matching this JSON Schema:\n${JSON.stringify(contract.schema)}` : 'valid JSON'
  return `Your answer was not ${wanted}\nProblems:\n${errors.map((e) => `- ${e}`).join('\n')}\nAnswer again with only the corrected JSON, nothing else.`
}
