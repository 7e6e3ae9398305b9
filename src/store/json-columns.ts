import type { Prisma } from '@db/client'
import { DbNull } from '@prisma/client/runtime/client'
import { z } from 'zod'

/** A value for a JSON column: the store's records hold plain JSON values. */
export const jsonValue = (value: unknown) => value as Prisma.InputJsonValue

/** A value for a nullable JSON column: null is SQL NULL, as the records read it back. */
export const nullableJson = (value: unknown) => (value === null || value === undefined ? DbNull : jsonValue(value))

/** A JSON column's value through its schema; the error names the column and the row. */
export function parsedColumn<S extends z.ZodType>(schema: S, value: unknown, column: string, rowId: string): z.output<S> {
  const parsed = schema.safeParse(value)
  if (!parsed.success) throw new Error(`${column} of row '${rowId}' does not hold what it should: ${z.prettifyError(parsed.error)}`)
  return parsed.data
}
