import { describe, expect, it } from 'vitest'
import { redactSecret } from '../../src/domain/credentials.js'

const KEY = 'zq7Xk2LmP9vR4tW8yB3n'

describe('redactSecret', () => {
  it('removes the whole key, a run of 8 or more of its characters, and masked forms', () => {
    expect(redactSecret(`key ${KEY} refused`, KEY)).toBe('key *** refused')
    expect(redactSecret(`key ...${KEY.slice(5, 15)}... refused`, KEY)).toBe('key *** refused')
    expect(redactSecret(`key ${KEY.slice(0, 4)}****${KEY.slice(-4)} refused`, KEY)).toBe('key *** refused')
    expect(redactSecret(`key ****${KEY.slice(-4)} refused`, KEY)).toBe('key *** refused')
  })

  it('leaves text alone that holds no recognisable part of the key', () => {
    const text = 'rate limited: retry in 2 s (request req_8f2c1a)'
    expect(redactSecret(text, KEY)).toBe(text)
    expect(redactSecret(`short ${KEY.slice(0, 7)} run`, KEY)).toBe(`short ${KEY.slice(0, 7)} run`)
    expect(redactSecret(text, undefined)).toBe(text)
  })
})
