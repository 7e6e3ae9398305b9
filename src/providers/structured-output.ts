import type { OutputContract } from '../domain/definitions.js'
import { type BackendWire, capabilitiesOf } from './capabilities.js'

type Schema = Record<string, unknown>

/** How one backend enforces a contract: the schema it is sent (NATIVE), or validation alone; null for TEXT. */
export interface OutputEnforcementPlan {
  enforcement: 'NATIVE' | 'VALIDATE' | null
  /** The schema sent to the vendor; null unless NATIVE. */
  schema: Schema | null
  /** Why the schema cannot go natively, when it cannot. */
  problem: string | null
}

export function outputEnforcementFor(backend: BackendWire, output: OutputContract): OutputEnforcementPlan {
  if (output.kind === 'TEXT') return { enforcement: null, schema: null, problem: null }
  if (output.kind === 'JSON' || output.enforcement === 'VALIDATE' || !output.schema)
    return { enforcement: 'VALIDATE', schema: null, problem: null }
  const problem = nativeSchemaProblem(backend, output.schema)
  return problem === null ? { enforcement: 'NATIVE', schema: output.schema, problem } : { enforcement: 'VALIDATE', schema: null, problem }
}

// the keywords each vendor's strict JSON-schema mode takes (OpenAI's Structured Outputs,
// Anthropic's output_config.format, Gemini's responseJsonSchema); anything else makes the vendor refuse the request
const COMMON = [
  'type',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'enum',
  'const',
  'anyOf',
  'description',
  'title',
  '$ref',
  '$defs',
  'definitions',
]
type NativeKind = 'OPENAI' | 'ANTHROPIC' | 'GEMINI'
const KEYWORDS: Record<NativeKind, ReadonlySet<string>> = {
  OPENAI: new Set([
    ...COMMON,
    'pattern',
    'format',
    'minimum',
    'maximum',
    'exclusiveMinimum',
    'exclusiveMaximum',
    'multipleOf',
    'minItems',
    'maxItems',
  ]),
  ANTHROPIC: new Set([...COMMON, 'format', 'default', 'minItems']),
  // Gemini's responseJsonSchema subset
  GEMINI: new Set([...COMMON, 'format', 'minimum', 'maximum', 'minItems', 'maxItems', 'prefixItems', 'propertyOrdering']),
}

/**
 * Why a schema does not fit the vendor's native structured output, or null when it does: the
 * root is an object; every object closes with `additionalProperties: false`, except for Gemini
 * (OpenAI also wants every property required); only the vendor's keywords appear (Anthropic takes no numeric or
 * length bounds, and `minItems` only 0 or 1); references stay inside the schema.
 */
function nativeSchemaProblem(backend: BackendWire, schema: Schema): string | null {
  const { kind } = backend
  if (kind === 'FAKE' || !capabilitiesOf(backend).nativeStructuredOutput)
    return `a ${backend.dialect ?? kind} backend has no native structured output`
  if (schema.type !== 'object') return 'the root is not an object'
  // Azure's deployments and OpenAI's copies take OpenAI's strict mode
  return problemIn(kind === 'AZURE_OPENAI' ? 'OPENAI' : kind, schema, '')
}

function problemIn(kind: NativeKind, schema: Schema, path: string): string | null {
  const at = path === '' ? 'the root' : path
  for (const key of Object.keys(schema)) {
    if (key === '$schema' && path === '') continue
    if (!KEYWORDS[kind].has(key)) return `${at} uses '${key}'`
  }
  if (kind === 'ANTHROPIC' && typeof schema.minItems === 'number' && schema.minItems > 1) return `${at} has minItems over 1`
  if (typeof schema.$ref === 'string' && !schema.$ref.startsWith('#')) return `${at} refers outside the schema`
  const properties = (schema.properties ?? {}) as Record<string, Schema>
  // Gemini's mode takes open objects and optional properties
  if (kind !== 'GEMINI' && (schema.type === 'object' || schema.properties !== undefined)) {
    if (schema.additionalProperties !== false) return `${at} does not set additionalProperties: false`
    const required = new Set((schema.required ?? []) as string[])
    const optional = Object.keys(properties).find((name) => !required.has(name))
    if (kind === 'OPENAI' && optional !== undefined) return `${at} does not require '${optional}'`
  }
  const children: [string, unknown][] = [
    ...Object.entries(properties).map(([name, child]): [string, unknown] => [`${path}.${name}`, child]),
    ...Object.entries((schema.$defs ?? schema.definitions ?? {}) as Record<string, Schema>).map(([name, child]): [string, unknown] => [
      `${path}.$defs.${name}`,
      child,
    ]),
    ...((schema.anyOf ?? []) as Schema[]).map((child, i): [string, unknown] => [`${path}.anyOf[${i}]`, child]),
    ...(schema.items !== undefined ? [[`${path}[]`, schema.items] as [string, unknown]] : []),
  ]
  for (const [childPath, child] of children) {
    if (child === null || typeof child !== 'object' || Array.isArray(child)) continue
    const problem = problemIn(kind, child as Schema, childPath)
    if (problem) return problem
  }
  return null
}
