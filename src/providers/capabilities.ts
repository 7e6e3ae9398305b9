import type { BackendKind } from '../domain/definitions.js'
import type { EffectiveSettings } from '../domain/settings.js'

/**
 * A setting the backend's vendor does not take, as a sentence for an INVALID_REQUEST at
 * preparation (rather than a vendor 400 after the run started); null when all are fine.
 */
export function unsupportedSetting(kind: BackendKind, settings: EffectiveSettings): string | null {
  if (kind === 'ANTHROPIC') {
    if (settings.reasoningEffort != null) return 'Anthropic takes no reasoningEffort (pass its thinking options in extra)'
    if (settings.temperature != null && settings.temperature > 1) return 'Anthropic takes a temperature from 0 to 1'
  }
  return null
}
