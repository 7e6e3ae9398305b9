import { TextKeyedCache } from './bounded-cache.js'
import { RenderError } from './errors.js'

/**
 * Message templates: literal text with `{{ name }}` or `{{ dotted.path }}` references, and
 * `{{> promptId}}` includes of another prompt's text. There is no logic and no escaping; a
 * reference whose value is missing is an error, never "".
 */
type Part = { text: string } | { variable: string } | { include: IncludeRef }

/**
 * `{{> id}}`, `{{> id@label}}` or `{{> id#3}}`, optionally with bindings `{{> id topic=subject}}`:
 * the prompt's messages' text, rendered with the including prompt's variables, or with only the
 * bound ones (each named variable of the included prompt set from a path of the includer's).
 */
export interface IncludeRef {
  promptId: string
  version: number | null
  label: string | null
  bindings: Record<string, string> | null
  /** The reference without its bindings: what names one version (`id`, `id@label`, `id#3`). */
  key: string
}

const VARIABLE_PATH = /^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*$/
const INCLUDE_REF = /^([A-Za-z0-9_.-]{1,128})(?:@([A-Za-z0-9][A-Za-z0-9_.-]{0,63})|#([1-9][0-9]{0,8}))?$/
const BINDING = /^([A-Za-z_][A-Za-z0-9_]*)=([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*)$/

function parseInclude(body: string): IncludeRef | string {
  const [ref = '', ...pairs] = body.split(/\s+/).filter(Boolean)
  const match = INCLUDE_REF.exec(ref)
  if (!match) return `'{{> ${body}}}' does not name a prompt (use {{> id}}, {{> id@label}} or {{> id#3}})`
  const bindings: Record<string, string> = {}
  for (const pair of pairs) {
    const bound = BINDING.exec(pair)
    if (!bound) return `'${pair}' in '{{> ${body}}}' is not a binding (use name=variable.path)`
    bindings[bound[1]!] = bound[2]!
  }
  const bound = pairs.length > 0 ? bindings : null
  return { promptId: match[1]!, label: match[2] ?? null, version: match[3] ? Number(match[3]) : null, bindings: bound, key: ref }
}
// successful compilations only, bounded in bytes: refused templates are never kept
const compiled = new TextKeyedCache<Part[]>(8 * 1024 * 1024)

export function compileTemplate(template: string): { parts: Part[]; error?: undefined } | { parts?: undefined; error: string } {
  const cached = compiled.get(template)
  if (cached) return { parts: cached }
  const parts: Part[] = []
  let at = 0
  while (at < template.length) {
    const open = template.indexOf('{{', at)
    if (open < 0) break
    const close = template.indexOf('}}', open + 2)
    if (close < 0) return { error: `unclosed '{{' at offset ${open}` }
    const name = template.slice(open + 2, close).trim()
    let part: Part
    if (name.startsWith('>')) {
      const include = parseInclude(name.slice(1).trim())
      if (typeof include === 'string') return { error: include }
      part = { include }
    } else if (VARIABLE_PATH.test(name)) {
      part = { variable: name }
    } else {
      return { error: `'{{${template.slice(open + 2, close)}}}' is not a variable reference (use {{ name }} or {{ a.b }})` }
    }
    if (open > at) parts.push({ text: template.slice(at, open) })
    parts.push(part)
    at = close + 2
  }
  if (at < template.length) parts.push({ text: template.slice(at) })
  compiled.set(template, parts)
  return { parts }
}

/** The variables templates refer to (bindings of includes among them), in order of first use. */
export function templateVariables(templates: readonly string[]): string[] {
  const seen = new Set<string>()
  for (const template of templates) {
    for (const part of compileTemplate(template).parts ?? []) {
      if ('variable' in part) seen.add(part.variable)
      if ('include' in part) for (const path of Object.values(part.include.bindings ?? {})) seen.add(path)
    }
  }
  return [...seen]
}

/** The includes of templates, each key once, in order of first use. */
export function templateIncludes(templates: readonly string[]): IncludeRef[] {
  const seen = new Map<string, IncludeRef>()
  for (const template of templates) {
    for (const part of compileTemplate(template).parts ?? [])
      if ('include' in part && !seen.has(part.include.key)) seen.set(part.include.key, part.include)
  }
  return [...seen.values()]
}

function lookup(variables: Record<string, unknown>, path: string): unknown {
  let value: unknown = variables
  for (const key of path.split('.')) {
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, key)) return undefined
    value = (value as Record<string, unknown>)[key]
  }
  return value
}

function stringify(value: unknown): string {
  return typeof value === 'string' ? value : typeof value === 'object' ? JSON.stringify(value) : String(value)
}

/** The text an include stands for, rendered with the variables it is given. */
export type IncludedText = (include: IncludeRef, variables: Record<string, unknown>) => string

const noIncludes: IncludedText = (include) => {
  throw new RenderError(`'{{> ${include.key}}}' was not resolved`)
}

/** The variables an include renders with: the includer's, or only those it binds. */
function includeVariables(include: IncludeRef, variables: Record<string, unknown>, missing: Set<string>): Record<string, unknown> {
  if (!include.bindings) return variables
  const bound: Record<string, unknown> = {}
  for (const [name, path] of Object.entries(include.bindings)) {
    const value = lookup(variables, path)
    if (value === undefined || value === null) missing.add(path)
    else bound[name] = value
  }
  return bound
}

/** Renders templates together so one error names every missing variable; includes render through `included`. */
export function renderTemplates(
  templates: readonly string[],
  variables: Record<string, unknown>,
  included: IncludedText = noIncludes,
): string[] {
  const missing = new Set<string>()
  const rendered = templates.map((template) => {
    const { parts, error } = compileTemplate(template)
    if (error !== undefined) throw new RenderError(`invalid template: ${error}`)
    let out = ''
    for (const part of parts) {
      if ('text' in part) out += part.text
      else if ('include' in part) {
        const given = includeVariables(part.include, variables, missing)
        if (missing.size === 0) out += included(part.include, given)
      } else {
        const value = lookup(variables, part.variable)
        if (value === undefined || value === null) missing.add(part.variable)
        else out += stringify(value)
      }
    }
    return out
  })
  if (missing.size > 0) {
    const names = [...missing]
    throw new RenderError(`missing ${names.length === 1 ? 'variable' : 'variables'} ${names.map((n) => `'${n}'`).join(', ')}`)
  }
  return rendered
}
