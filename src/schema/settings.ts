import type { SettingsLayer } from '../domain/definitions.js'
import { type EffectiveSettings, redactSettings } from '../domain/settings.js'
import { builder } from './builder.js'

export const SettingsOverrideInput = builder.inputType('SettingsOverrideInput', {
  description: 'One layer of generation settings. An absent or null field inherits the lower layer; 0 is a value.',
  fields: (t) => ({
    temperature: t.float({ description: 'Sampling temperature, 0 to 2.' }),
    maxTokens: t.int({ description: 'Most tokens to generate, at least 1.' }),
    topP: t.float({ description: 'Nucleus sampling mass, 0 to 1.' }),
    stop: t.stringList({ description: 'Stop sequences (replaces the inherited list; [] clears it).' }),
    reasoningEffort: t.string({ description: 'none, minimal, low, medium, high or xhigh; a blank string clears the inherited value.' }),
    extra: t.field({ type: 'JSON', description: 'Vendor parameters passed through; a non-empty map replaces the inherited one whole.' }),
  }),
})

/** Settings as answered: every key present, secret-looking `extra` values shown as "***". */
export function settingsJson(settings: SettingsLayer | EffectiveSettings | null | undefined): EffectiveSettings {
  return redactSettings({
    temperature: settings?.temperature ?? null,
    maxTokens: settings?.maxTokens ?? null,
    topP: settings?.topP ?? null,
    stop: settings?.stop ?? null,
    reasoningEffort: settings?.reasoningEffort ?? null,
    extra: settings?.extra ?? {},
  })
}
