import { createPromptlineClient, type PromptlineClient, PromptlineError } from 'promptline/client'

const KEY_STORAGE = 'promptline.apiKey'

/** The API key this tab uses (kept for the tab only), or undefined on a server without keys. */
export const storedKey = (): string | undefined => sessionStorage.getItem(KEY_STORAGE) ?? undefined

export function storeKey(key: string): void {
  if (key) sessionStorage.setItem(KEY_STORAGE, key)
  else sessionStorage.removeItem(KEY_STORAGE)
}

/** A client of the server that served this page: HTTP for queries, graphql-ws for streams (resumed after a disconnect). */
export const connect = (apiKey: string | undefined): PromptlineClient =>
  createPromptlineClient({ url: `${location.origin}/graphql`, apiKey, retry: { maxDelayMs: 3_000 } })

export const needsKey = (error: unknown): boolean => error instanceof PromptlineError && error.code === 'UNAUTHENTICATED'

export const describeError = (error: unknown): string =>
  error instanceof PromptlineError ? `${error.code}: ${error.message}` : error instanceof Error ? error.message : String(error)

/** Parses an optional JSON object field of a form; throws a message naming the field. */
export function jsonField(name: string, text: string): Record<string, unknown> | null {
  if (text.trim() === '') return null
  try {
    const value: unknown = JSON.parse(text)
    if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>
  } catch {}
  throw new Error(`${name} must be a JSON object`)
}
