import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { ConfigError, loadConfig, PROJECT_ROOT } from '../../src/config.js'

describe('config from the environment', () => {
  it('has working defaults for a fresh machine', () => {
    expect(loadConfig({})).toMatchObject({
      host: '127.0.0.1',
      port: 4000,
      databaseUrl: 'file:./data/promptline.db',
      redisUrl: null,
      catalogDir: path.join(PROJECT_ROOT, 'catalog'),
      apiKeys: null,
      logLevel: 'info',
      limits: {
        maxOutstandingPerSession: 16,
        maxOutstandingBytesPerSession: 64 * 1024 * 1024,
        maxPendingAdmissions: 64,
        maxPendingBytes: 128 * 1024 * 1024,
        retainedTerminalPerSession: 100,
      },
      coalescer: { windowMs: 15, maxDeltas: 32 },
    })
  })

  it('reads the credential variables clients may name, and refuses anything else', () => {
    expect(loadConfig({}).credentialEnvAllowlist).toEqual([])
    expect(loadConfig({ PROMPTLINE_CREDENTIAL_ENV_ALLOWLIST: 'TEAM_KEY, OTHER_KEY' }).credentialEnvAllowlist).toEqual([
      'TEAM_KEY',
      'OTHER_KEY',
    ])
    expect(() => loadConfig({ PROMPTLINE_CREDENTIAL_ENV_ALLOWLIST: 'TEAM-KEY' })).toThrow(/PROMPTLINE_CREDENTIAL_ENV_ALLOWLIST/)
  })

  it('reads the queue limits', () => {
    expect(loadConfig({ PROMPTLINE_MAX_OUTSTANDING_PER_SESSION: '3', PROMPTLINE_MAX_PENDING_BYTES: '1000' }).limits).toMatchObject({
      maxOutstandingPerSession: 3,
      maxPendingBytes: 1000,
    })
    expect(() => loadConfig({ PROMPTLINE_MAX_OUTSTANDING_PER_SESSION: '0' })).toThrow(/PROMPTLINE_MAX_OUTSTANDING_PER_SESSION/)
  })

  it('reads every variable and treats empty strings as unset', () => {
    const config = loadConfig({
      PORT: '8080',
      HOST: '0.0.0.0',
      DATABASE_URL: 'postgresql://u@h/db',
      REDIS_URL: 'redis://h:6379',
      LOG_LEVEL: 'debug',
      PROMPTLINE_CATALOG: '',
    })
    expect(config).toMatchObject({
      port: 8080,
      host: '0.0.0.0',
      databaseUrl: 'postgresql://u@h/db',
      redisUrl: 'redis://h:6379',
      logLevel: 'debug',
    })
    expect(config.catalogDir).toBe(path.join(PROJECT_ROOT, 'catalog'))
  })

  it.each([
    ['PORT', 'eighty'],
    ['PORT', '70000'],
    ['DATABASE_URL', 'mysql://h/db'],
    ['REDIS_URL', 'http://h'],
    ['LOG_LEVEL', 'loud'],
  ])('names %s when its value %j is bad', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError)
    expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(`^invalid environment variable ${name}: `))
  })
})
