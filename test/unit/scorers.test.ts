import { describe, expect, it } from 'vitest'
import { summarize } from '../../src/domain/experiment-summary.js'
import { type Scorer, scoreOutput, scorerSchema } from '../../src/domain/experiments.js'

const scorer = (input: Record<string, unknown>): Scorer => scorerSchema.parse({ name: 's', ...input })

describe('scorers', () => {
  it('refuses a JSON_SCHEMA scorer nested past the bounds with a message, however deep', () => {
    const deep = JSON.parse(`${'['.repeat(50_000)}1${']'.repeat(50_000)}`)
    const refused = scorerSchema.safeParse({ name: 's', kind: 'JSON_SCHEMA', schema: { items: deep } })
    expect(refused.error?.issues.map((i) => [i.path.join('.'), i.message])).toContainEqual(['schema', 'is nested deeper than 32 levels'])
  })

  it('EXACT compares with expected as text, a JSON value as its JSON text, spaces around trimmed', () => {
    expect(scoreOutput(scorer({ kind: 'EXACT' }), ' Oslo\n', 'Oslo')).toMatchObject({ value: 1, pass: true })
    expect(scoreOutput(scorer({ kind: 'EXACT' }), '{"a":1}', { a: 1 }).pass).toBe(true)
    expect(scoreOutput(scorer({ kind: 'EXACT' }), 'Bergen', 'Oslo')).toMatchObject({ value: 0, pass: false })
  })

  it('CONTAINS and REGEX look into the output', () => {
    expect(scoreOutput(scorer({ kind: 'CONTAINS' }), 'it is Oslo today', 'Oslo').pass).toBe(true)
    expect(scoreOutput(scorer({ kind: 'REGEX', pattern: '^\\d{4}-\\d{2}$' }), '2026-12', null).pass).toBe(true)
    expect(scoreOutput(scorer({ kind: 'REGEX', pattern: '^\\d{4}-\\d{2}$' }), 'December', null).pass).toBe(false)
  })

  it('JSON_SCHEMA validates the parsed output and says what is wrong', () => {
    const s = scorer({ kind: 'JSON_SCHEMA', schema: { type: 'object', required: ['city'], properties: { city: { type: 'string' } } } })
    expect(scoreOutput(s, '{"city":"Oslo"}', null).pass).toBe(true)
    expect(scoreOutput(s, '{"town":"Oslo"}', null)).toMatchObject({ pass: false, reason: expect.stringContaining('city') })
    expect(scoreOutput(s, 'Oslo', null)).toMatchObject({ pass: false, reason: 'the output is not JSON' })
  })

  it('JSON_PATH_EQUALS compares the values at the path in the output and in expected', () => {
    const s = scorer({ kind: 'JSON_PATH_EQUALS', path: '$.answer.cities[1]' })
    const expected = { answer: { cities: ['Oslo', { name: 'Bergen', rank: 2 }] } }
    expect(scoreOutput(s, '{"answer":{"cities":["x",{"rank":2,"name":"Bergen"}]}}', expected).pass).toBe(true)
    expect(scoreOutput(s, '{"answer":{"cities":["x","Bergen"]}}', expected).pass).toBe(false)
    expect(scoreOutput(s, '{"answer":{}}', expected)).toMatchObject({ pass: false, reason: 'nothing at $.answer.cities[1]' })
  })

  it('refuses a scorer without the field its kind needs, or with a pattern or schema that does not compile', () => {
    expect(scorerSchema.safeParse({ name: 'r', kind: 'REGEX' }).success).toBe(false)
    expect(scorerSchema.safeParse({ name: 'r', kind: 'REGEX', pattern: '(' }).success).toBe(false)
    expect(scorerSchema.safeParse({ name: 'j', kind: 'JSON_SCHEMA', schema: { type: 'nope' } }).success).toBe(false)
    expect(scorerSchema.safeParse({ name: 'p', kind: 'JSON_PATH_EQUALS' }).success).toBe(false)
  })
})

describe('an experiment summary', () => {
  it("gives the pass rate over scored units, each scorer's mean, the task's cost apart from the judges' and the latency percentiles", () => {
    const scorers = [scorer({ name: 'a', kind: 'EXACT' }), scorer({ name: 'b', kind: 'CONTAINS' })]
    const usage = { inputTokens: 10, outputTokens: 2, cacheReadTokens: 1, cacheWriteTokens: 0, reasoningTokens: 0 }
    const unit = (a: number, b: number, latencyMs: number) => ({
      scores: [
        { scorer: 'a', value: a, pass: a === 1, reason: null },
        { scorer: 'b', value: b, pass: b === 1, reason: null },
      ],
      run: { costUsd: 0.5, latencyMs, usage },
      judgeCosts: [0.25],
    })
    const summary = summarize(scorers, [unit(1, 1, 100), unit(1, 0, 300), unit(0, 1, 200), { scores: null, run: null, judgeCosts: [] }])
    expect(summary).toEqual({
      passRate: 1 / 3,
      meanScores: [
        { scorer: 'a', mean: 2 / 3 },
        { scorer: 'b', mean: 2 / 3 },
      ],
      costUsd: 1.5,
      judgeCostUsd: 0.75,
      latencyP50Ms: 200,
      latencyP95Ms: 300,
      tokens: { input: 30, output: 6, cacheRead: 3 },
    })
  })
})
