import type { Prisma } from '@db/client'
import { DbNull } from '@prisma/client/runtime/client'

/** A value for a JSON column: the store's records hold plain JSON values. */
export const jsonValue = (value: unknown) => value as Prisma.InputJsonValue

/** A value for a nullable JSON column: null is SQL NULL, as the records read it back. */
export const nullableJson = (value: unknown) => (value === null || value === undefined ? DbNull : jsonValue(value))
