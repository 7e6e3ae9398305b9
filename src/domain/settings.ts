import type { PROMPT_CACHE_KEYS, PROMPT_CACHE_MODES, PROMPT_CACHE_TTLS, SettingsLayer } from './definitions.js'
import { sha256Hex } from './hash.js'

/** What a run asks of the vendor's prompt cache: marks (Anthropic) or a routing key (OpenAI). */
export interface PromptCacheSettings {
  mode: (typeof PROMPT_CACHE_MODES)[number]
  ttl: (typeof PROMPT_CACHE_TTLS)[number]
  /** What the cache key (OpenAI's prompt_cache_key) is scoped to. */
  key: (typeof PROMPT_CACHE_KEYS)[number]
}

/** The settings a run really uses, after every layer was merged. `null` = the vendor's default. */
export interface EffectiveSettings {
  temperature: number | null
  maxTokens: number | null
  topP: number | null
  seed: number | null
  stop: string[] | null
  reasoningEffort: string | null
  extra: Record<string, unknown>
  promptCache: PromptCacheSettings
  firstTokenTimeoutMs: number | null
  streamIdleTimeoutMs: number | null
}

export const DEFAULT_SETTINGS: Readonly<EffectiveSettings> = Object.freeze({
  temperature: null,
  maxTokens: 1024,
  topP: null,
  seed: null,
  stop: null,
  reasoningEffort: null,
  extra: {},
  promptCache: Object.freeze({ mode: 'OFF', ttl: 'FIVE_MINUTES', key: 'SESSION' }),
  firstTokenTimeoutMs: null,
  streamIdleTimeoutMs: null,
})

const withoutNulls = <T extends object>(value: T) => Object.fromEntries(Object.entries(value).filter(([, v]) => v != null))

/**
 * Merges layers lowest first (defaults < backend < profile < request). A present value wins,
 * `0` included; a blank reasoning effort clears it; a non-empty `extra` map replaces the lower
 * one whole, so a profile never half-inherits vendor-specific parameters.
 */
export function mergeSettings(...layers: (SettingsLayer | null | undefined)[]): EffectiveSettings {
  const out: EffectiveSettings = { ...DEFAULT_SETTINGS }
  for (const layer of layers) {
    if (!layer) continue
    if (layer.temperature != null) out.temperature = layer.temperature
    if (layer.maxTokens != null) out.maxTokens = layer.maxTokens
    if (layer.topP != null) out.topP = layer.topP
    if (layer.seed != null) out.seed = layer.seed
    if (layer.stop != null) out.stop = [...layer.stop]
    if (layer.reasoningEffort != null) out.reasoningEffort = layer.reasoningEffort.trim() === '' ? null : layer.reasoningEffort.trim()
    if (layer.extra != null && Object.keys(layer.extra).length > 0) out.extra = layer.extra
    if (layer.promptCache != null) out.promptCache = { ...out.promptCache, ...withoutNulls(layer.promptCache) }
    if (layer.firstTokenTimeoutMs != null) out.firstTokenTimeoutMs = layer.firstTokenTimeoutMs
    if (layer.streamIdleTimeoutMs != null) out.streamIdleTimeoutMs = layer.streamIdleTimeoutMs
  }
  return out
}

/**
 * The key a vendor routes cached prefixes by (OpenAI's prompt_cache_key): per tenant and session,
 * or tenant and prompt; hashed, so no id leaves for the vendor. Null when the scope is missing.
 */
export function promptCacheKey(
  settings: PromptCacheSettings,
  scope: { tenantId: string; sessionId: string | null; promptId: string | null },
): string | null {
  if (settings.mode === 'OFF' || settings.key === 'NONE') return null
  const id = settings.key === 'SESSION' ? scope.sessionId : scope.promptId
  return id === null ? null : `pl-${sha256Hex(`${scope.tenantId}\u0000${settings.key}\u0000${id}`).slice(0, 40)}`
}

const SECRET_KEY = /key|token|secret|password|passwd|authorization|credential|cookie/i

/** A copy safe to show: values under secret-looking keys in `extra` become "***". */
export function redactSettings<T extends Pick<EffectiveSettings, 'stop' | 'extra'>>(settings: T): T {
  return { ...settings, stop: settings.stop && [...settings.stop], extra: redactObject(settings.extra) as Record<string, unknown> }
}

function redactObject(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redactObject)
  if (value === null || typeof value !== 'object') return value
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, SECRET_KEY.test(k) ? '***' : redactObject(v)]))
}
