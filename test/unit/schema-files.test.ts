import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { printSchema } from 'graphql'
import { describe, expect, it } from 'vitest'
import { PROJECT_ROOT } from '../../src/config.js'
import { schema } from '../../src/schema/schema.js'

describe('committed generated files', () => {
  it('schema/schema.graphql is the printed Pothos schema (run `npm run generate` when this fails)', () => {
    const committed = readFileSync(`${PROJECT_ROOT}/schema/schema.graphql`, 'utf8')
    expect(committed).toBe(`${printSchema(schema)}\n`)
  })

  it('prisma/sqlite/schema.prisma is derived from prisma/schema.prisma', () => {
    expect(() => execFileSync('node', ['scripts/derive-sqlite-schema.mjs', '--check'], { cwd: PROJECT_ROOT, stdio: 'pipe' })).not.toThrow()
  })

  it('every public field and argument has a description readers see in GraphiQL', () => {
    const undocumented: string[] = []
    for (const root of [schema.getQueryType()!, schema.getMutationType()!]) {
      for (const field of Object.values(root.getFields())) {
        if (!field.description) undocumented.push(`${root.name}.${field.name}`)
      }
    }
    expect(undocumented).toEqual([])
  })
})
