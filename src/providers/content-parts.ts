import type { ContentPart } from '../domain/content-parts.js'
import { NotFoundError } from '../domain/errors.js'

/** The bytes of uploaded files a request's parts name, read for the run by id. */
export type FileBytes = ReadonlyMap<string, Uint8Array>

export const NO_FILES: FileBytes = new Map()

/** An uploaded file's bytes in base64, as both vendors take them inline. */
export function base64Of(part: ContentPart, files: FileBytes): string {
  const bytes = files.get(part.fileId!)
  // removed after admission (its retention ran out): the run fails, naming it
  if (!bytes) throw new NotFoundError('file', part.fileId!)
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64')
}

/** A message's TEXT parts' text, for where a vendor takes text only (system text). */
export const textOfParts = (parts: readonly ContentPart[] | undefined): string[] =>
  (parts ?? []).flatMap((p) => (p.type === 'TEXT' && p.text ? [p.text] : []))
