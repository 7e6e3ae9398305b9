import type { ArgBuilder } from '@pothos/core'
import { InvalidRequestError } from '../domain/errors.js'
import type { BuilderTypes } from './builder.js'

export const PAGE_DEFAULT = 50
export const PAGE_MAX = 200

interface ConnectionArgs {
  first?: number | null
  after?: string | null
}

/** Opaque cursors: base64url of a kind tag and the key fields of the row. */
export function encodeCursor(kind: string, ...parts: string[]): string {
  return Buffer.from(JSON.stringify([kind, ...parts])).toString('base64url')
}

function decodeCursor(kind: string, cursor: string, size: number): string[] {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString())
    // a dated cursor (runs, sessions) must hold a real timestamp, or the store would be asked for one
    const parts = Array.isArray(parsed) && parsed[0] === kind && parsed.length === size + 1 && parsed.every((p) => typeof p === 'string')
    if (parts && (size !== 2 || Number.isFinite(Date.parse(String(parsed[1]))))) return parsed.slice(1) as string[]
  } catch {}
  throw InvalidRequestError.at('after', 'not a cursor from this connection')
}

/** Forward paging only: `first` (default 50, at most 200) and `after`. */
export function forwardPage(args: ConnectionArgs, kind: string, size: number): { first: number; after: string[] | null } {
  const first = args.first ?? PAGE_DEFAULT
  if (first < 0 || first > PAGE_MAX) throw InvalidRequestError.at('first', `must be between 0 and ${PAGE_MAX}`)
  return { first, after: args.after ? decodeCursor(kind, args.after, size) : null }
}

/** The forward paging arguments of a list field. */
export function pageArgs(arg: ArgBuilder<BuilderTypes>) {
  return {
    first: arg.int({ description: `Page size: ${PAGE_DEFAULT} by default, at most ${PAGE_MAX}.` }),
    after: arg.string({ description: 'The endCursor of the previous page; absent for the first page.' }),
  }
}

/** A Relay connection from `first + 1` fetched rows. */
export function toConnection<T>(rows: T[], first: number, hadAfter: boolean, cursorOf: (row: T) => string) {
  const edges = rows.slice(0, first).map((node) => ({ node, cursor: cursorOf(node) }))
  return {
    edges,
    pageInfo: {
      hasNextPage: rows.length > first,
      hasPreviousPage: hadAfter,
      startCursor: edges[0]?.cursor ?? null,
      endCursor: edges.at(-1)?.cursor ?? null,
    },
  }
}
