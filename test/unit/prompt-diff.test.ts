import { describe, expect, it } from 'vitest'
import type { PromptDefinition } from '../../src/domain/definitions.js'
import { promptDiff } from '../../src/domain/prompt-diff.js'

const base: PromptDefinition = {
  messages: [
    { role: 'system', content: 'You write haiku.' },
    { role: 'user', content: 'A haiku about {{topic}}' },
  ],
  defaultProfileId: 'fake-echo',
  output: { kind: 'TEXT', schema: null },
  maxRepairs: 0,
}
const tool = { name: 'lookup', description: null, inputSchema: { type: 'object' }, strict: false }

describe('prompt diffs', () => {
  it('word-diffs a changed message, keeps an equal one, and shows an added one', () => {
    const next = {
      ...base,
      messages: [
        { role: 'system' as const, content: 'You write short haiku!' },
        base.messages[1]!,
        { role: 'user' as const, content: 'Rhyme it.' },
      ],
    }
    const { messages, fields } = promptDiff(base, next)
    expect(messages.map((m) => [m.change, m.fromIndex, m.toIndex])).toEqual([
      ['CHANGED', 0, 0],
      ['UNCHANGED', 1, 1],
      ['ADDED', null, 2],
    ])
    expect(messages[0]!.segments).toEqual([
      { op: 'EQUAL', text: 'You write ' },
      { op: 'INSERT', text: 'short ' },
      { op: 'EQUAL', text: 'haiku' },
      { op: 'DELETE', text: '.' },
      { op: 'INSERT', text: '!' },
    ])
    expect(messages[2]).toMatchObject({ fromRole: null, toRole: 'user', segments: [{ op: 'INSERT', text: 'Rhyme it.' }] })
    expect(fields).toEqual([])
  })

  it('aligns messages around one removed from the middle', () => {
    const three = { ...base, messages: [...base.messages, { role: 'assistant' as const, content: 'An example.' }] }
    const without = { ...base, messages: [base.messages[0]!, three.messages[2]!] }
    expect(promptDiff(three, without).messages.map((m) => [m.change, m.fromIndex, m.toIndex])).toEqual([
      ['UNCHANGED', 0, 0],
      ['REMOVED', 1, null],
      ['UNCHANGED', 2, 1],
    ])
  })

  it('names the other parts that changed, each tool by its name, with both values', () => {
    const next: PromptDefinition = { ...base, output: { kind: 'JSON', schema: null }, maxRepairs: 2, tools: [tool] }
    expect(promptDiff(base, next).fields).toEqual([
      { path: 'maxRepairs', before: 0, after: 2 },
      { path: 'output', before: { kind: 'TEXT', schema: null }, after: { kind: 'JSON', schema: null } },
      { path: 'tools.lookup', before: null, after: tool },
    ])
    expect(promptDiff(next, next)).toEqual({ messages: expect.any(Array), fields: [] })
  })
})
