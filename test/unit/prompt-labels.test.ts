import { describe, expect, it } from 'vitest'
import { labelMoveSchema, splitBucket, versionInSplit } from '../../src/domain/prompt-labels.js'

describe('split labels', () => {
  const split = [
    { version: 3, weight: 90 },
    { version: 4, weight: 10 },
  ]

  it('buckets a session independently per label', () => {
    const sessions = Array.from({ length: 200 }, (_, i) => `s${i}`)
    const same = sessions.filter((s) => splitBucket(s, 'production') === splitBucket(s, 'canary')).length
    expect(same).toBeLessThan(20)
  })

  it('lays shares out in order over the buckets 0-99', () => {
    expect([0, 89, 90, 99].map((b) => versionInSplit(split, b))).toEqual([3, 3, 4, 4])
  })

  it.each([
    [
      'weights that do not add up to 100',
      {
        split: [
          { version: 1, weight: 50 },
          { version: 2, weight: 40 },
        ],
      },
    ],
    [
      'a version named twice',
      {
        split: [
          { version: 1, weight: 50 },
          { version: 1, weight: 50 },
        ],
      },
    ],
    ['a single share', { split: [{ version: 1, weight: 100 }] }],
    [
      'both a version and a split',
      {
        version: 1,
        split: [
          { version: 1, weight: 50 },
          { version: 2, weight: 50 },
        ],
      },
    ],
    ['neither a version nor a split', {}],
    ["the label 'latest'", { label: 'latest', version: 1 }],
  ])('refuses a move with %s', (_name, move) => {
    expect(labelMoveSchema.safeParse({ promptId: 'p', label: 'production', ...move }).success).toBe(false)
  })
})
