import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import type { Backend } from '../domain/catalog.js'
import type { BackendKind } from '../domain/definitions.js'
import type { Usage } from '../domain/records.js'
import { COMPATIBLE_SERVERS } from '../providers/compatible-servers.js'

/** The bundled table's name and version, recorded on every run it priced (it never fetches at run time). */
const PRICE_TABLE = (() => {
  const entry = createRequire(import.meta.url).resolve('@pydantic/genai-prices')
  let dir = path.dirname(entry)
  while (!dir.endsWith(`${path.sep}genai-prices`)) dir = path.dirname(dir)
  const { version } = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { version: string }
  return `genai-prices ${version}`
})()

/** The price table's provider of each backend kind; the fake backend has none. */
const PROVIDER: Record<BackendKind, string | null> = {
  OPENAI: 'openai',
  ANTHROPIC: 'anthropic',
  GEMINI: 'google',
  AZURE_OPENAI: 'azure',
  FAKE: null,
}

type Priced = Pick<Backend, 'kind' | 'dialect'>
/** Whose prices a backend pays: its server's for a named OpenAI-compatible one (none on one's own machines). */
const providerOf = (backend: Priced): string | null =>
  backend.dialect ? COMPATIBLE_SERVERS[backend.dialect].priceProvider : PROVIDER[backend.kind]

type PriceTable = typeof import('@pydantic/genai-prices')
let table: PriceTable | null = null
let loading: Promise<PriceTable> | null = null

/**
 * Loads the bundled table (some 18 MB of memory) before a backend it prices is first called,
 * not at start: a server on the fake backend alone never pays for it.
 */
export async function loadPricesFor(backend: Priced): Promise<void> {
  if (table || !providerOf(backend)) return
  loading ??= import('@pydantic/genai-prices')
  table = await loading
}

/**
 * What one model call cost in USD, and from which table: the catalog's price for the model when
 * it has one (private or unlisted models), else the bundled table (cache reads and writes at
 * their own rates, tiered and dated prices as the table has them). Null when neither knows the
 * model: an unknown price is never 0.
 */
export function priceOf(backend: Priced & Pick<Backend, 'prices'>, model: string, usage: Usage): { usd: number; table: string } | null {
  const uncached = usage.inputTokens - usage.cacheReadTokens - usage.cacheWriteTokens
  const own = backend.prices?.[model]
  if (own) {
    const usd =
      uncached * own.inputPerMillion +
      usage.cacheReadTokens * (own.cacheReadPerMillion ?? own.inputPerMillion) +
      usage.cacheWriteTokens * (own.cacheWritePerMillion ?? own.inputPerMillion) +
      usage.outputTokens * own.outputPerMillion
    return { usd: usd / 1e6, table: 'catalog' }
  }
  const provider = providerOf(backend)
  if (!provider || !table) return null
  const priced = table.calcPrice(
    {
      input_tokens: usage.inputTokens,
      cache_read_tokens: usage.cacheReadTokens,
      cache_write_tokens: usage.cacheWriteTokens,
      output_tokens: usage.outputTokens,
    },
    model,
    { providerId: provider },
  )
  return priced ? { usd: priced.total_price, table: PRICE_TABLE } : null
}
