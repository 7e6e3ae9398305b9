/** A unique index refused the row (Prisma's P2002, the same code on every provider). */
export function isUniqueViolation(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 'P2002'
}
