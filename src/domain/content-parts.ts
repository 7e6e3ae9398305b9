import { z } from 'zod'

const CONTENT_PART_TYPES = ['TEXT', 'IMAGE', 'FILE'] as const
export type ContentPartType = (typeof CONTENT_PART_TYPES)[number]
const IMAGE_DETAILS = ['AUTO', 'LOW', 'HIGH'] as const
export type ImageDetail = (typeof IMAGE_DETAILS)[number]

/** The media types a part may carry, by its type; a backend's capabilities narrow them. */
export const IMAGE_MEDIA_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'] as const
export const FILE_MEDIA_TYPES = ['application/pdf', 'text/plain'] as const
export const UPLOAD_MEDIA_TYPES: readonly string[] = [...IMAGE_MEDIA_TYPES, ...FILE_MEDIA_TYPES]

/**
 * A piece of a message besides its text: more text, an image or a file, by URL or by the id of
 * an uploaded file. Admission fills in an uploaded file's media type and digest (`sha256`, which
 * enters the rendered hash); its bytes are read only to send them, never kept on a message.
 */
export interface ContentPart {
  type: ContentPartType
  text?: string
  url?: string
  fileId?: string
  mediaType?: string
  detail?: ImageDetail
  sha256?: string
}

const upper = <const T extends readonly [string, ...string[]]>(values: T) =>
  z.preprocess((v) => (typeof v === 'string' ? v.toUpperCase() : v), z.enum(values))

const fileIdSchema = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be a file id from POST /files')

const partShape = {
  type: upper(CONTENT_PART_TYPES),
  text: z
    .string()
    .max(1024 * 1024)
    .nullish(),
  url: z
    .url({ protocol: /^https?$/ })
    .max(8192)
    .nullish(),
  fileId: fileIdSchema.nullish(),
  mediaType: z
    .string()
    .regex(/^[a-z]+\/[a-z0-9.+-]+$/, 'must be a media type such as image/png')
    .nullish(),
  detail: upper(IMAGE_DETAILS).nullish(),
}

type PartFields = { type: ContentPartType; text?: string | null; url?: string | null; fileId?: string | null; detail?: unknown }

/** TEXT carries text alone; IMAGE and FILE one source (`sources` lists what counts as one), and only an IMAGE a detail. */
function checkPart(part: PartFields, ctx: z.RefinementCtx, sources: readonly (keyof PartFields | 'variable')[]): void {
  const given = sources.filter((s) => (part as Record<string, unknown>)[s] != null)
  if (part.type === 'TEXT') {
    if (part.text == null) ctx.addIssue({ code: 'custom', path: ['text'], message: 'is required for a TEXT part' })
    if (given.length > 0) ctx.addIssue({ code: 'custom', path: [given[0]!], message: 'is only for IMAGE and FILE parts' })
    return
  }
  if (part.text != null) ctx.addIssue({ code: 'custom', path: ['text'], message: 'is only for a TEXT part' })
  if (given.length !== 1)
    ctx.addIssue({ code: 'custom', path: [sources[0]!], message: `an ${part.type} part needs exactly one of ${sources.join(', ')}` })
  if (part.detail != null && part.type !== 'IMAGE') ctx.addIssue({ code: 'custom', path: ['detail'], message: 'is only for an IMAGE part' })
}

/** A part as a request gives it. */
export const contentPartSchema = z.strictObject(partShape).superRefine((part, ctx) => checkPart(part, ctx, ['url', 'fileId']))

/** A part of a message template: a TEXT part's text is a template; an IMAGE or FILE may name a variable holding { url } or { fileId }. */
export const contentPartTemplateSchema = z
  .strictObject({
    ...partShape,
    variable: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be a variable name')
      .nullish(),
  })
  .superRefine((part, ctx) => checkPart(part, ctx, ['url', 'fileId', 'variable']))

export type ContentPartTemplate = z.infer<typeof contentPartTemplateSchema>

/** A part of a template, as a prompt definition keeps it: a part, or an IMAGE/FILE that names its variable. */
export type PartTemplate = ContentPart & { variable?: string }

/** A parsed part (or part template) without its nulls, as messages and definitions keep it. */
export function toContentPart(parsed: z.infer<typeof contentPartSchema> | ContentPartTemplate): PartTemplate {
  return {
    type: parsed.type,
    ...(parsed.text != null && { text: parsed.text }),
    ...(parsed.url != null && { url: parsed.url }),
    ...(parsed.fileId != null && { fileId: parsed.fileId }),
    ...(parsed.mediaType != null && { mediaType: parsed.mediaType }),
    ...(parsed.detail != null && { detail: parsed.detail }),
    ...('variable' in parsed && parsed.variable != null && { variable: parsed.variable }),
  }
}

/** The uploaded files a list of messages refers to. */
export function fileIdsIn(messages: readonly { parts?: readonly ContentPart[] }[]): string[] {
  return [...new Set(messages.flatMap((m) => (m.parts ?? []).flatMap((p) => (p.fileId ? [p.fileId] : []))))]
}

/** An uploaded file, as POST /files answers and admission checks it; never its bytes. */
export interface StoredFileInfo {
  id: string
  sha256: string
  mediaType: string
  bytes: number
  name: string | null
  createdAt: string
  expiresAt: string
}
