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
      coalescer: { windowMs: 15, maxDeltas: 32, eventsPerSecond: 1000 },
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

  it('reads API keys as key:tenant:role, keeping only their sha256, and never echoes a key in an error', () => {
    const hashed = `sha256:${'ab'.repeat(32)}`
    const keys = loadConfig({ PROMPTLINE_API_KEYS: `a-long-enough-key-123:acme:admin, ${hashed}:globex:read` }).apiKeys
    expect(keys).toEqual([
      { sha256: expect.stringMatching(/^[0-9a-f]{64}$/), tenantId: 'acme', role: 'admin' },
      { sha256: 'ab'.repeat(32), tenantId: 'globex', role: 'read' },
    ])
    expect(JSON.stringify(keys)).not.toContain('a-long-enough-key-123')
    for (const [value, problem] of [
      ['a-long-enough-key-123:acme:owner', /entry 1 of 1 has role 'owner'/],
      ['a-long-enough-key-123:acme', /entry 1 of 1 is not key:tenant:role/],
      ['short:acme:read', /shorter than 16/],
      ['a-long-enough-key-123:@catalog:read', /tenant/],
    ] as const) {
      expect(() => loadConfig({ PROMPTLINE_API_KEYS: value })).toThrow(problem)
      expect(() => loadConfig({ PROMPTLINE_API_KEYS: value })).not.toThrow(/a-long-enough-key/)
    }
  })

  it('reads budgets as tenant:metric=limit/window', () => {
    expect(loadConfig({}).budgets).toEqual([])
    expect(loadConfig({ PROMPTLINE_BUDGETS: 'acme:runs=1000/1d, acme:cost=2.5/30d globex:tokens=500000/1h' }).budgets).toEqual([
      { tenantId: 'acme', metric: 'runs', limit: 1000, windowMs: 86_400_000 },
      { tenantId: 'acme', metric: 'cost', limit: 2.5, windowMs: 30 * 86_400_000 },
      { tenantId: 'globex', metric: 'tokens', limit: 500_000, windowMs: 3_600_000 },
    ])
    expect(() => loadConfig({ PROMPTLINE_BUDGETS: 'acme:dollars=5/1d' })).toThrow(/PROMPTLINE_BUDGETS: entry 1 .* use runs, tokens or cost/)
    expect(() => loadConfig({ PROMPTLINE_BUDGETS: 'acme:runs=5' })).toThrow(
      /PROMPTLINE_BUDGETS: entry 1 .* is not tenant:metric=limit\/window/,
    )
  })

  it('reads webhook secrets (the local tenant and per tenant) and the retry schedule, and never echoes a secret in an error', () => {
    const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`
    const other = `whsec_${Buffer.alloc(24, 9).toString('base64')}`
    expect(loadConfig({}).webhooks).toEqual({ secrets: new Map(), retryDelaysMs: [1000, 5000, 30000, 300000, 1800000] })
    expect(
      loadConfig({
        PROMPTLINE_WEBHOOK_SECRET: secret,
        PROMPTLINE_WEBHOOK_SECRETS: `acme:${other}`,
        PROMPTLINE_WEBHOOK_RETRY_MS: '100, 2000',
      }).webhooks,
    ).toEqual({
      secrets: new Map([
        ['local', secret],
        ['acme', other],
      ]),
      retryDelaysMs: [100, 2000],
    })
    const short = `whsec_${Buffer.alloc(8).toString('base64')}`
    for (const [name, value] of [
      ['PROMPTLINE_WEBHOOK_SECRET', short],
      ['PROMPTLINE_WEBHOOK_SECRET', 'not-whsec-at-all-0123456789'],
      ['PROMPTLINE_WEBHOOK_SECRETS', `acme:${short}`],
      ['PROMPTLINE_WEBHOOK_SECRETS', `bad tenant!:${secret}`],
      ['PROMPTLINE_WEBHOOK_RETRY_MS', '1000,soon'],
    ] as const) {
      const error = (() => {
        try {
          loadConfig({ [name]: value })
        } catch (e) {
          return e as Error
        }
      })()
      expect(error).toBeInstanceOf(ConfigError)
      expect(error!.message).toContain(name)
      expect(error!.message).not.toContain(value.slice(6))
    }
  })

  it('listens beyond loopback without keys only when told to', () => {
    expect(() => loadConfig({ HOST: '0.0.0.0' })).toThrow(/^HOST 0.0.0.0 .*PROMPTLINE_ALLOW_OPEN=1/)
    expect(loadConfig({ HOST: '0.0.0.0', PROMPTLINE_ALLOW_OPEN: '1' }).host).toBe('0.0.0.0')
    expect(loadConfig({ HOST: '0.0.0.0', PROMPTLINE_API_KEYS: 'a-long-enough-key-123:acme:admin' }).host).toBe('0.0.0.0')
    expect(loadConfig({ HOST: '::1' }).host).toBe('::1')
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
      PROMPTLINE_KEEP_ALIVE_MS: '120000',
      HOST: '0.0.0.0',
      PROMPTLINE_ALLOW_OPEN: '1',
      DATABASE_URL: 'postgresql://u@h/db',
      REDIS_URL: 'redis://h:6379',
      LOG_LEVEL: 'debug',
      PROMPTLINE_CATALOG: '',
    })
    expect(config).toMatchObject({
      port: 8080,
      keepAliveMs: 120_000,
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
    ['PROMPTLINE_KEEP_ALIVE_MS', '10'],
    ['DATABASE_URL', 'mysql://h/db'],
    ['REDIS_URL', 'http://h'],
    ['LOG_LEVEL', 'loud'],
    ['PROMPTLINE_REDIS_PREFIX', 'has spaces'],
    ['PROMPTLINE_STALE_MS', '1000'],
  ])('names %s when its value %j is bad', (name, value) => {
    const env = { PROMPTLINE_HEARTBEAT_MS: '5000', [name]: value }
    expect(() => loadConfig(env)).toThrow(ConfigError)
    expect(() => loadConfig(env)).toThrow(new RegExp(`^${name} must `))
  })

  it.each([
    ['PORT', 'abc', "PORT must be a port number, 0 to 65535 (got 'abc')"],
    ['PROMPTLINE_MAX_DEPTH', '2.5', "PROMPTLINE_MAX_DEPTH must be a whole number, at least 1 (got '2.5')"],
    ['LOG_LEVEL', 'loud', "LOG_LEVEL must be one of debug, info, warn, error, silent (got 'loud')"],
  ])('says what %s must be and what it got', (name, value, message) => {
    expect(() => loadConfig({ [name]: value })).toThrow(message)
  })

  it('never repeats a value that may hold a secret', () => {
    expect(() => loadConfig({ DATABASE_URL: 'mysql://admin:hunter2@h/db' })).toThrow(/^DATABASE_URL must be [^']*$/)
    expect(() => loadConfig({ DATABASE_URL: 'mysql://admin:hunter2@h/db' })).not.toThrow(/hunter2/)
  })
})
