import { describe, expect, it } from 'vitest'
import { DEFAULT_SETTINGS, mergeSettings, redactSettings } from '../../src/domain/settings.js'

describe('settings precedence: defaults < backend < profile < request', () => {
  it('starts from the built-in defaults', () => {
    expect(mergeSettings()).toEqual(DEFAULT_SETTINGS)
    expect(mergeSettings().maxTokens).toBe(1024)
  })

  it('lets each higher layer override the lower one', () => {
    const backend = { temperature: 0.1, maxTokens: 100, topP: 0.5 }
    const profile = { temperature: 0.2, maxTokens: 200 }
    const request = { temperature: 0.3 }
    expect(mergeSettings(backend, profile, request)).toMatchObject({ temperature: 0.3, maxTokens: 200, topP: 0.5 })
  })

  it('treats an explicit 0 as a value that overrides', () => {
    expect(mergeSettings({ temperature: 0.9, topP: 0.9 }, { temperature: 0 }, { topP: 0 })).toMatchObject({ temperature: 0, topP: 0 })
  })

  it('treats null and absent as inherit', () => {
    expect(mergeSettings({ temperature: 0.4 }, { temperature: null }, {})).toMatchObject({ temperature: 0.4 })
  })

  it('replaces a non-empty extra map whole and lets an empty one inherit', () => {
    const backend = { extra: { seed: 1, logprobs: true } }
    expect(mergeSettings(backend, { extra: { seed: 2 } }).extra).toEqual({ seed: 2 })
    expect(mergeSettings(backend, { extra: {} }).extra).toEqual({ seed: 1, logprobs: true })
  })

  it('handles reasoning effort as tri-state: absent inherits, a value replaces, blank clears', () => {
    const profile = { reasoningEffort: 'high' }
    expect(mergeSettings(profile, {}).reasoningEffort).toBe('high')
    expect(mergeSettings(profile, { reasoningEffort: 'low' }).reasoningEffort).toBe('low')
    expect(mergeSettings(profile, { reasoningEffort: '  ' }).reasoningEffort).toBeNull()
  })

  it('replaces stop sequences, and [] clears them', () => {
    expect(mergeSettings({ stop: ['a'] }, { stop: ['b', 'c'] }).stop).toEqual(['b', 'c'])
    expect(mergeSettings({ stop: ['a'] }, { stop: [] }).stop).toEqual([])
  })

  it('redacts secret-looking extra values at any depth and leaves the rest', () => {
    const settings = mergeSettings({ extra: { api_key: 'sk-1', headers: { Authorization: 'Bearer x', 'X-Trace': 't' }, seed: 3 } })
    expect(redactSettings(settings).extra).toEqual({ api_key: '***', headers: { Authorization: '***', 'X-Trace': 't' }, seed: 3 })
    expect(settings.extra.api_key).toBe('sk-1')
  })
})
