import { TextKeyedCache } from './bounded-cache.js'
import { RenderError } from './errors.js'

/**
 * Message templates: literal text with `{{ name }}` or `{{ dotted.path }}` references. There is
 * no logic and no escaping; a reference whose value is missing is an error, never "".
 */
type Part = { text: string } | { variable: string }

const VARIABLE_PATH = /^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*$/
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
    if (!VARIABLE_PATH.test(name))
      return { error: `'{{${template.slice(open + 2, close)}}}' is not a variable reference (use {{ name }} or {{ a.b }})` }
    if (open > at) parts.push({ text: template.slice(at, open) })
    parts.push({ variable: name })
    at = close + 2
  }
  if (at < template.length) parts.push({ text: template.slice(at) })
  compiled.set(template, parts)
  return { parts }
}

/** The variables a template refers to, in order of first use. */
export function templateVariables(templates: readonly string[]): string[] {
  const seen = new Set<string>()
  for (const template of templates) {
    for (const part of compileTemplate(template).parts ?? []) if ('variable' in part) seen.add(part.variable)
  }
  return [...seen]
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

/** Renders templates together so one error names every missing variable. */
export function renderTemplates(templates: readonly string[], variables: Record<string, unknown>): string[] {
  const missing = new Set<string>()
  const rendered = templates.map((template) => {
    const { parts, error } = compileTemplate(template)
    if (error !== undefined) throw new RenderError(`invalid template: ${error}`)
    let out = ''
    for (const part of parts) {
      if ('text' in part) out += part.text
      else {
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
