import { readFileSync } from 'node:fs'
import {
  buildSchema,
  type DocumentNode,
  type GraphQLSchema,
  getNamedType,
  isUnionType,
  Kind,
  TypeInfo,
  validate,
  visit,
  visitWithTypeInfo,
} from 'graphql'

/** A fenced block of a doc, with what the comments right before and after it say about it. */
export interface DocBlock {
  /** `docs/api.md:26`: where the block opens. */
  where: string
  lang: string
  text: string
  /** Why it is not run (`<!-- doc-test: skip <why> -->` before it); null when it runs. */
  skip: string | null
  /** Runs in one program with the block before it (`<!-- doc-test: continues -->` before it). */
  continues: boolean
  /** What its answer must hold (`<!-- doc-test: expect <JSON> -->` after it): a subset of a GraphQL answer's data, or text a program prints. */
  expect: unknown
}

const DIRECTIVE = /^<!-- doc-test: (skip|continues|expect)\b\s*(.*?)\s*-->$/s

/** The fenced blocks of a markdown text, in order. */
export function docBlocks(markdown: string, file: string): DocBlock[] {
  const lines = markdown.split('\n')
  const blocks: DocBlock[] = []
  let pending: { skip: string | null; continues: boolean } = { skip: null, continues: false }
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!
    const directive = DIRECTIVE.exec(line.trim())
    if (directive) {
      const [, kind, rest] = directive
      if (kind === 'skip') pending.skip = rest || 'skipped'
      else if (kind === 'continues') pending.continues = true
      else if (blocks.length > 0) blocks.at(-1)!.expect = JSON.parse(rest!)
      continue
    }
    const fence = /^```(\S*)/.exec(line)
    if (!fence) continue
    const end = lines.findIndex((l, j) => j > i && l.startsWith('```'))
    blocks.push({ where: `${file}:${i + 1}`, lang: fence[1]!, text: lines.slice(i + 1, end).join('\n'), ...pending, expect: undefined })
    pending = { skip: null, continues: false }
    i = end
  }
  return blocks
}

/** The languages a reader runs: GraphQL operations, JS/TS programs and shell lines. */
export const RUNNABLE = new Set(['graphql', 'js', 'ts', 'sh'])

let schema: GraphQLSchema | undefined
const committedSchema = () => (schema ??= buildSchema(readFileSync(new URL('../../schema/schema.graphql', import.meta.url), 'utf8')))

/**
 * What is wrong with a GraphQL block as a document, or []: it must be valid against the
 * committed schema, and every selection on a union that holds errors must select
 * `... on Error { code message }`, so a refusal never comes back as `{}`.
 */
export function documentProblems(document: DocumentNode): string[] {
  const problems = validate(committedSchema(), document).map((e) => e.message)
  const typeInfo = new TypeInfo(committedSchema())
  visit(
    document,
    visitWithTypeInfo(typeInfo, {
      Field(node) {
        const type = typeInfo.getType() && getNamedType(typeInfo.getType()!)
        if (!type || !isUnionType(type) || !type.getTypes().some((t) => t.getInterfaces().some((i) => i.name === 'Error'))) return
        const onError = node.selectionSet?.selections.find(
          (s) => s.kind === Kind.INLINE_FRAGMENT && s.typeCondition?.name.value === 'Error',
        )
        const names =
          onError?.kind === Kind.INLINE_FRAGMENT
            ? onError.selectionSet.selections.map((s) => (s.kind === Kind.FIELD ? s.name.value : ''))
            : []
        if (!names.includes('code') || !names.includes('message'))
          problems.push(`${node.name.value} answers ${type.name}: select ... on Error { code message }`)
      },
    }),
  )
  return problems
}
