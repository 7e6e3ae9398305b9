/** A unique index refused a row: what the store throws for it, on either provider and either path. */
export class UniqueViolation extends Error {
  override readonly name = 'UniqueViolation'
}

/** The codes of a unique index's refusal: Prisma's P2002, better-sqlite3's, PostgreSQL's SQLSTATE. */
const UNIQUE_CODES = new Set(['P2002', 'SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_CONSTRAINT_PRIMARYKEY', '23505'])

export function isUniqueViolation(err: unknown): boolean {
  if (err instanceof UniqueViolation) return true
  return typeof err === 'object' && err !== null && UNIQUE_CODES.has(String((err as { code?: unknown }).code))
}

/** The statement's result, or a UniqueViolation when a unique index refused its row. */
export async function uniqueChecked<T>(statement: Promise<T>): Promise<T> {
  try {
    return await statement
  } catch (error) {
    if (isUniqueViolation(error)) throw new UniqueViolation((error as Error).message, { cause: error })
    throw error
  }
}
