import type { SettingsLayer } from './definitions.js'

/** The settings a run really uses, after every layer was merged. `null` = the vendor's default. */
export interface EffectiveSettings {
  temperature: number | null
  maxTokens: number | null
  topP: number | null
  stop: string[] | null
  reasoningEffort: string | null
  extra: Record<string, unknown>
}

export const DEFAULT_SETTINGS: Readonly<EffectiveSettings> = Object.freeze({
  temperature: null,
  maxTokens: 1024,
  topP: null,
  stop: null,
  reasoningEffort: null,
  extra: {},
})

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
    if (layer.stop != null) out.stop = [...layer.stop]
    if (layer.reasoningEffort != null) out.reasoningEffort = layer.reasoningEffort.trim() === '' ? null : layer.reasoningEffort.trim()
    if (layer.extra != null && Object.keys(layer.extra).length > 0) out.extra = layer.extra
  }
  return out
}

const SECRET_KEY = /key|token|secret|password|passwd|authorization|credential|cookie/i

/** A copy safe to show: values under secret-looking keys in `extra` become "***". */
export function redactSettings(settings: EffectiveSettings): EffectiveSettings {
  return { ...settings, stop: settings.stop && [...settings.stop], extra: redactObject(settings.extra) as Record<string, unknown> }
}

function redactObject(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redactObject)
  if (value === null || typeof value !== 'object') return value
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, SECRET_KEY.test(k) ? '***' : redactObject(v)]))
}
