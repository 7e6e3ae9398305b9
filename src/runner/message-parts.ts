import {
  type ContentPart,
  contentPartSchema,
  FILE_MEDIA_TYPES,
  IMAGE_MEDIA_TYPES,
  type StoredFileInfo,
  toContentPart,
} from '../domain/content-parts.js'
import type { MessageTemplate } from '../domain/definitions.js'
import { InvalidRequestError, NotFoundError, RenderError } from '../domain/errors.js'
import type { ChatMessage } from '../domain/records.js'
import { type IncludedText, renderTemplates } from '../domain/template.js'
import { unsupportedPart } from '../providers/capabilities.js'
import type { Candidate } from './prepare.js'

/** Uploaded files, as admission checks them. */
export interface FileLookup {
  find(tenantId: string, id: string, now: Date): Promise<StoredFileInfo | null>
}

/** A variable an IMAGE or FILE part takes its source from: `{ url }` or `{ fileId }`, with a mediaType or detail if it likes. */
function partFromVariable(template: ContentPart & { variable: string }, variables: Record<string, unknown>): ContentPart {
  const value = variables[template.variable]
  const source = value !== null && typeof value === 'object' && !Array.isArray(value) ? value : {}
  const { variable: _, ...defaults } = template
  const parsed = contentPartSchema.safeParse({ ...defaults, ...source, type: template.type })
  if (!parsed.success) {
    throw new RenderError(`variable '${template.variable}' must be an ${template.type.toLowerCase()}: { url } or { fileId }`)
  }
  return toContentPart(parsed.data)
}

/** The messages' template parts rendered: TEXT parts' text with the variables, IMAGE and FILE parts from their variable. */
export function renderParts(
  templates: readonly MessageTemplate[],
  variables: Record<string, unknown>,
  included: IncludedText,
): (ContentPart[] | undefined)[] {
  const texts = templates.flatMap((m) => (m.parts ?? []).flatMap((p) => (p.type === 'TEXT' ? [p.text ?? ''] : [])))
  const rendered = renderTemplates(texts, variables, included)
  let next = 0
  return templates.map((m) =>
    m.parts?.map((part) => {
      if (part.type === 'TEXT') return { type: 'TEXT', text: rendered[next++]! }
      return part.variable ? partFromVariable({ ...part, variable: part.variable }, variables) : part
    }),
  )
}

/** The request's parts join the turn's last user message (or a new one, when the turn has none). */
export function withRequestParts(turn: ChatMessage[], parts: ContentPart[] | undefined): ChatMessage[] {
  if (!parts || parts.length === 0) return turn
  const last = turn.findLastIndex((m) => m.role === 'user')
  if (last < 0) return [...turn, { role: 'user', content: '', parts }]
  return turn.map((m, i) => (i === last ? { ...m, parts: [...(m.parts ?? []), ...parts] } : m))
}

/**
 * The parts of admitted messages, checked and completed: an uploaded file must exist for the
 * tenant (its media type and digest are filled in, so the digest enters the rendered hash),
 * and every candidate's backend must take every part, else a typed error before anything runs.
 */
export async function admitParts(
  messages: ChatMessage[],
  tenantId: string,
  files: FileLookup,
  candidates: readonly Candidate[],
): Promise<ChatMessage[]> {
  const now = new Date()
  const admitted: ChatMessage[] = []
  for (const message of messages) {
    if (!message.parts) {
      admitted.push(message)
      continue
    }
    const parts: ContentPart[] = []
    for (const part of message.parts) {
      const full = part.fileId ? await withFile(part, tenantId, files, now) : part
      checkMediaType(full)
      for (const { profile, backend } of candidates) {
        const problem = unsupportedPart(backend, full)
        if (problem) throw InvalidRequestError.at('parts', `profile '${profile.id}' (backend '${backend.id}'): ${problem}`)
      }
      parts.push(full)
    }
    admitted.push({ ...message, parts })
  }
  return admitted
}

async function withFile(part: ContentPart, tenantId: string, files: FileLookup, now: Date): Promise<ContentPart> {
  const file = await files.find(tenantId, part.fileId!, now)
  if (!file) throw new NotFoundError('file', part.fileId!)
  return { ...part, mediaType: file.mediaType, sha256: file.sha256 }
}

function checkMediaType(part: ContentPart): void {
  if (part.type === 'TEXT' || part.mediaType === undefined) return
  const allowed: readonly string[] = part.type === 'IMAGE' ? IMAGE_MEDIA_TYPES : FILE_MEDIA_TYPES
  if (!allowed.includes(part.mediaType)) {
    throw InvalidRequestError.at('parts', `an ${part.type} part may be ${allowed.join(', ')}, not ${part.mediaType}`)
  }
}
