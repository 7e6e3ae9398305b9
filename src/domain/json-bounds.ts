import { z } from 'zod'

/** How deep and how big a JSON value a client may send in one field. */
export interface JsonBounds {
  maxDepth: number
  maxBytes: number
}

const DEFAULT_JSON_BOUNDS: JsonBounds = { maxDepth: 32, maxBytes: 256 * 1024 }

/**
 * Why a JSON value is out of bounds (or holds a `__proto__` key), or null. Walks with its own stack (no recursion, so no
 * nesting can overflow it) and stops at the first excess; the size is the serialized size, near
 * enough.
 */
export function jsonOutOfBounds(value: unknown, bounds: JsonBounds = DEFAULT_JSON_BOUNDS): string | null {
  const stack: [unknown, number][] = [[value, 1]]
  let bytes = 0
  while (stack.length > 0) {
    const [item, depth] = stack.pop()!
    if (item !== null && typeof item === 'object') {
      if (depth > bounds.maxDepth) return `is nested deeper than ${bounds.maxDepth} levels`
      const entries = Array.isArray(item) ? item.map((v) => ['', v] as const) : Object.entries(item)
      bytes += 2
      for (const [key, child] of entries) {
        // a prototype-polluting key, and one the database client mistakes for its own: never stored
        if (key === '__proto__') return 'holds a key named __proto__, which is not accepted'
        bytes += key.length + 4
        stack.push([child, depth + 1])
      }
    } else {
      bytes += typeof item === 'string' ? item.length + 2 : String(item).length
    }
    if (bytes > bounds.maxBytes) return `is larger than ${bounds.maxBytes} bytes`
  }
  return null
}

/** A JSON object field within the default bounds; the message names what is wrong. */
export function boundedJsonObject(message = 'must be a JSON object') {
  return z.record(z.string(), z.unknown(), { error: message }).superRefine((value, ctx) => {
    const problem = jsonOutOfBounds(value)
    if (problem) ctx.addIssue({ code: 'custom', message: problem })
  })
}
