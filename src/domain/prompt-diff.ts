import { diffArrays, diffWordsWithSpace } from 'diff'
import type { PromptDefinition } from './definitions.js'
import { hashValue } from './hash.js'

type MessageTemplate = PromptDefinition['messages'][number]

/** A run of text in a message diff: kept, added, or taken out. */
export interface TextSegment {
  op: 'EQUAL' | 'INSERT' | 'DELETE'
  text: string
}

/** One message of either version: kept as it was, added, removed, or changed in place (with its text diff). */
export interface MessageChange {
  change: 'UNCHANGED' | 'ADDED' | 'REMOVED' | 'CHANGED'
  /** Its index in the from version; null when added. */
  fromIndex: number | null
  /** Its index in the to version; null when removed. */
  toIndex: number | null
  fromRole: MessageTemplate['role'] | null
  toRole: MessageTemplate['role'] | null
  segments: TextSegment[]
}

/** A part of the definition besides the messages that differs: its path, with both values (null: absent). */
export interface FieldChange {
  path: string
  before: unknown
  after: unknown
}

export interface PromptDiff {
  messages: MessageChange[]
  fields: FieldChange[]
}

const sameMessage = (a: MessageTemplate, b: MessageTemplate) => a.role === b.role && a.content === b.content

function wordSegments(before: string, after: string): TextSegment[] {
  return diffWordsWithSpace(before, after).map((part) => ({
    op: part.added ? 'INSERT' : part.removed ? 'DELETE' : 'EQUAL',
    text: part.value,
  }))
}

/**
 * The messages aligned by a longest common subsequence: equal ones are UNCHANGED, and where some
 * were removed and others added at the same place, they pair up in order as CHANGED (with a
 * word diff of their text); the rest are REMOVED or ADDED.
 */
function messageChanges(from: MessageTemplate[], to: MessageTemplate[]): MessageChange[] {
  const changes: MessageChange[] = []
  let i = 0
  let j = 0
  const parts = diffArrays(from, to, { comparator: sameMessage })
  for (let p = 0; p < parts.length; p++) {
    const part = parts[p]!
    if (!part.added && !part.removed) {
      for (const m of part.value) {
        changes.push({
          change: 'UNCHANGED',
          fromIndex: i++,
          toIndex: j++,
          fromRole: m.role,
          toRole: m.role,
          segments: [{ op: 'EQUAL', text: m.content }],
        })
      }
      continue
    }
    const removed = part.removed ? part.value : []
    // messages removed right before others were added took their place: pair them up
    const pairsWithNext = part.removed && parts[p + 1]?.added === true
    const added = part.added ? part.value : pairsWithNext ? parts[++p]!.value : []
    for (let k = 0; k < Math.max(removed.length, added.length); k++) {
      const a = removed[k]
      const b = added[k]
      changes.push({
        change: a && b ? 'CHANGED' : a ? 'REMOVED' : 'ADDED',
        fromIndex: a ? i++ : null,
        toIndex: b ? j++ : null,
        fromRole: a?.role ?? null,
        toRole: b?.role ?? null,
        segments: wordSegments(a?.content ?? '', b?.content ?? ''),
      })
    }
  }
  return changes
}

/** The definition's other parts, one path each; tools one per name, so a UI shows which tool changed. */
function fieldsOf(definition: PromptDefinition): Map<string, unknown> {
  const { messages: _, tools, ...rest } = definition
  const fields = new Map<string, unknown>(Object.entries(rest).filter(([, value]) => value !== undefined && value !== null))
  for (const tool of tools ?? []) fields.set(`tools.${tool.name}`, tool)
  return fields
}

/** What changed between two definitions of a prompt, in a shape a UI renders as it is. */
export function promptDiff(from: PromptDefinition, to: PromptDefinition): PromptDiff {
  const before = fieldsOf(from)
  const after = fieldsOf(to)
  const fields: FieldChange[] = []
  for (const path of [...new Set([...before.keys(), ...after.keys()])].sort()) {
    const a = before.get(path) ?? null
    const b = after.get(path) ?? null
    if (hashValue(a) !== hashValue(b)) fields.push({ path, before: a, after: b })
  }
  return { messages: messageChanges(from.messages, to.messages), fields }
}
