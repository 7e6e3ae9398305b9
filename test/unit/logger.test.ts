import { spawnSync } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { createLogger } from '../../src/domain/logger.js'

const PLANTED = 'sk-planted-0123456789abcdef'

describe('the pino logger', () => {
  it('writes one JSON line per entry: time, level by name, message, then the context and fields', () => {
    const lines: string[] = []
    const logger = createLogger('info', (line) => lines.push(line))
    logger.child({ tenantId: 'acme', sessionId: 's1', queueId: 'q1', runId: 'r1' }).warn('backend throttled', { backendId: 'openai' })
    logger.debug('not at info')
    expect(lines).toHaveLength(1)
    const entry = JSON.parse(lines[0]!)
    expect(entry).toMatchObject({
      level: 'warn',
      message: 'backend throttled',
      tenantId: 'acme',
      sessionId: 's1',
      queueId: 'q1',
      runId: 'r1',
      backendId: 'openai',
    })
    expect(Date.parse(entry.time)).not.toBeNaN()
  })

  it('redacts a key wherever a caller would put one by mistake', () => {
    const lines: string[] = []
    const logger = createLogger('debug', (line) => lines.push(line))
    logger.error('oops', {
      apiKey: PLANTED,
      request: { headers: { authorization: `Bearer ${PLANTED}` } },
      settings: { extra: { api_key: PLANTED } },
    })
    logger.child({ runId: 'r1' }).info('nested', { profile: { apiKey: PLANTED, secret: PLANTED } })
    expect(lines.join('\n')).not.toContain(PLANTED)
    expect(JSON.parse(lines[0]!).apiKey).toBe('[redacted]')
  })

  it('writes nothing when silent', () => {
    const lines: string[] = []
    createLogger('silent', (line) => lines.push(line)).error('never')
    expect(lines).toEqual([])
  })

  it('prints pretty lines for people on stderr, keys still redacted', () => {
    // a process of its own: pretty lines go to file descriptor 2
    const script = `import { createLogger } from './src/domain/logger.ts'
createLogger('info', undefined, 'pretty').child({ runId: 'r1' }).warn('backend throttled', { apiKey: '${PLANTED}' })`
    const { stderr } = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' })
    expect(stderr).toMatch(/WARN.*backend throttled/)
    expect(stderr).toContain('runId: "r1"')
    expect(stderr).not.toContain(PLANTED)
  })
})
