import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { isEnumType, isInputObjectType, isInterfaceType, isObjectType, isSpecifiedScalarType } from 'graphql'
import { describe, expect, it } from 'vitest'
import { schemaFiles } from '../../scripts/schema-files.js'
import { PROJECT_ROOT } from '../../src/config.js'
import { schema } from '../../src/schema/schema.js'

describe('committed generated files', () => {
  it.each(Object.entries(schemaFiles()))(
    '%s is printed from the Pothos schema (run `npm run generate` when this fails)',
    (file, printed) => {
      expect(readFileSync(`${PROJECT_ROOT}/${file}`, 'utf8')).toBe(printed)
    },
  )

  it('prisma/sqlite/schema.prisma is derived from prisma/schema.prisma', () => {
    expect(() => execFileSync('node', ['scripts/derive-sqlite-schema.mjs', '--check'], { cwd: PROJECT_ROOT, stdio: 'pipe' })).not.toThrow()
  })

  it('describes every type, field, argument, input field and enum value (GraphiQL and codegen show them)', () => {
    expect(undocumentedSchemaElements()).toEqual([])
  })
})

/** Every public schema element without a description, as `Type`, `Type.field`, `Type.field(arg)` or `Enum.VALUE`. */
function undocumentedSchemaElements(): string[] {
  const missing: string[] = []
  const check = (description: string | null | undefined, path: string) => {
    if (!description?.trim()) missing.push(path)
  }
  for (const type of Object.values(schema.getTypeMap())) {
    if (type.name.startsWith('__') || isSpecifiedScalarType(type)) continue
    check(type.description, type.name)
    if (isObjectType(type) || isInterfaceType(type) || isInputObjectType(type)) {
      for (const field of Object.values(type.getFields())) {
        check(field.description, `${type.name}.${field.name}`)
        for (const arg of 'args' in field ? field.args : []) check(arg.description, `${type.name}.${field.name}(${arg.name})`)
      }
    }
    if (isEnumType(type)) for (const value of type.getValues()) check(value.description, `${type.name}.${value.name}`)
  }
  return missing
}
