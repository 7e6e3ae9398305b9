/**
 * A unique index refused the row: Prisma's error for a typed write (P2002), for a raw one
 * (P2010, whose driver adapter error says UniqueConstraintViolation), or SQLite's own on the
 * store's direct statements.
 */
export function isUniqueViolation(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false
  const { code, meta } = err as { code?: unknown; meta?: { driverAdapterError?: { cause?: { kind?: unknown } } } }
  return (
    code === 'P2002' ||
    code === 'SQLITE_CONSTRAINT_PRIMARYKEY' ||
    code === 'SQLITE_CONSTRAINT_UNIQUE' ||
    (code === 'P2010' && meta?.driverAdapterError?.cause?.kind === 'UniqueConstraintViolation')
  )
}
