import { StorageFullError, UnavailableError } from '../domain/errors.js'

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

/** What the store throws while the database does not answer: UNAVAILABLE, worth asking again in a second. */
export const databaseUnavailable = () => new UnavailableError('the database does not answer; nothing was done', 1000)

// the drivers' words for a server that cannot be reached or cut the connection: Prisma's adapter
// kinds, socket errors, PostgreSQL's connection and shutdown SQLSTATEs (classes 08 and 57P)
const UNREACHABLE_KINDS = new Set(['DatabaseNotReachable', 'ConnectionClosed', 'SocketTimeout', 'TooManyConnections'])
const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'P1001',
  'P1017',
  'P2024',
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
  '57P01',
  '57P02',
  '57P03',
])
// pg's own, with no code: a connection that ended under a query, or was ended before it
const UNREACHABLE_MESSAGES = /^(Connection terminated|Client has encountered a connection error|Client was closed)/

// no room: SQLite's, the file system's (PROMPTLINE_FILES_DIR), PostgreSQL's disk_full
const FULL_CODES = new Set(['SQLITE_FULL', 'ENOSPC', 'EDQUOT', '53100'])

/**
 * What the drivers said, down `error`'s causes: each one's code and message, and where Prisma's
 * adapter wrapped a driver's error, the adapter's kind and the driver's own code.
 */
function driverWords(error: unknown): unknown[] {
  const words: unknown[] = []
  for (let at = error, depth = 0; typeof at === 'object' && at !== null && depth < 5; depth++) {
    const { code, message, meta, cause } = at as {
      code?: unknown
      message?: unknown
      meta?: { driverAdapterError?: unknown }
      cause?: unknown
    }
    const adapterCause = (meta?.driverAdapterError as { cause?: { kind?: unknown; code?: unknown; originalCode?: unknown } } | undefined)
      ?.cause
    words.push(code, message, adapterCause?.kind, adapterCause?.code, adapterCause?.originalCode)
    at = cause
  }
  return words
}

/** Whether `error` says the database server could not be reached or dropped the connection. */
const isUnreachable = (error: unknown) =>
  driverWords(error).some(
    (word) =>
      UNREACHABLE_CODES.has(String(word)) ||
      UNREACHABLE_KINDS.has(String(word)) ||
      (typeof word === 'string' && UNREACHABLE_MESSAGES.test(word)),
  )

/** Whether `error` says the disk the database or the files are on has no room left. */
const isStorageFull = (error: unknown) => driverWords(error).some((word) => FULL_CODES.has(String(word)))

/** What the store throws when there is no room for a write. */
const storageFull = () => new StorageFullError('the disk the server writes to is full; nothing was written')

/**
 * The statement's result, or the domain's error for what the driver said: UnavailableError when
 * the database could not be reached, StorageFullError when its disk is full.
 */
export async function driverChecked<T>(statement: PromiseLike<T>): Promise<T> {
  try {
    return await statement
  } catch (error) {
    if (isUnreachable(error)) throw databaseUnavailable()
    if (isStorageFull(error)) throw storageFull()
    throw error
  }
}
