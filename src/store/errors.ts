/** Prisma error codes are portable across providers; `meta` is not, so only `code` is read. */
export function isUniqueViolation(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 'P2002'
}
