import { inspect } from 'node:util'
import { describe, expect, it } from 'vitest'
import { resolveCredential, Secret } from '../../src/domain/credentials.js'

const env: Record<string, string> = { REQ_KEY: 'sk-request', PROFILE_KEY: 'sk-profile', BACKEND_KEY: 'sk-backend' }
const secrets = (name: string) => env[name]
const all = {
  directKey: new Secret('sk-direct'),
  requestEnv: 'REQ_KEY',
  profileEnv: 'PROFILE_KEY',
  backendEnv: 'BACKEND_KEY',
  required: true,
}

describe('credential source order: direct key > request env > profile env > backend env', () => {
  it('takes each source only when every higher one is absent', () => {
    expect(resolveCredential(all, secrets).reveal()).toBe('sk-direct')
    expect(resolveCredential({ ...all, directKey: null }, secrets).reveal()).toBe('sk-request')
    expect(resolveCredential({ ...all, directKey: null, requestEnv: null }, secrets).reveal()).toBe('sk-profile')
    const backend = resolveCredential({ required: true, backendEnv: 'BACKEND_KEY' }, secrets)
    expect([backend.source, backend.name, backend.reveal()]).toEqual(['BACKEND_ENV', 'BACKEND_KEY', 'sk-backend'])
  })

  it('does not fall through when the named variable is unset', () => {
    const credential = resolveCredential({ required: true, profileEnv: 'UNSET_KEY', backendEnv: 'BACKEND_KEY' }, secrets)
    expect(credential.name).toBe('UNSET_KEY')
    expect(credential.available).toBe(false)
  })

  it('needs nothing for a backend that takes no credential', () => {
    const credential = resolveCredential({ required: false }, secrets)
    expect([credential.source, credential.available]).toEqual(['NONE', true])
    expect(resolveCredential({ required: true }, secrets).available).toBe(false)
  })

  it('never shows the value in JSON or inspect output', () => {
    const credential = resolveCredential(all, secrets)
    expect(JSON.stringify({ credential })).not.toContain('sk-direct')
    expect(inspect(credential, { showHidden: true, depth: 5 })).not.toContain('sk-direct')
    expect(JSON.parse(JSON.stringify(credential))).toEqual({ source: 'DIRECT', name: null, available: true })
  })
})
