import type { ContentPart, ContentPartType, ImageDetail } from '../domain/content-parts.js'
import type { BackendCapabilities } from '../providers/capabilities.js'
import { builder } from './builder.js'
import { describedValues } from './described.js'

const ContentPartTypeEnum = builder.enumType('ContentPartType', {
  description: "What a message part is; a backend's capabilities say which it takes.",
  values: describedValues<ContentPartType>({
    TEXT: 'More text (in a template, itself a template).',
    IMAGE: 'An image (PNG, JPEG, GIF, WebP) by url, or an uploaded file by fileId.',
    FILE: 'A document (PDF; plain text for Anthropic) as an uploaded file by fileId, or a PDF by url where the backend takes it.',
  }),
})

const ImageDetailEnum = builder.enumType('ImageDetail', {
  description: "How closely the model looks at an image (OpenAI's detail; Anthropic ignores it).",
  values: describedValues<ImageDetail>({
    AUTO: 'The vendor decides.',
    LOW: 'A low-resolution look, fewer tokens.',
    HIGH: 'A detailed look.',
  }),
})

export const ContentPartInput = builder.inputType('ContentPartInput', {
  description:
    'A part of a message after its text: TEXT takes text; IMAGE and FILE take exactly one of url or fileId (from POST /files), or in a prompt template a variable holding { url } or { fileId }.',
  fields: (t) => ({
    type: t.field({ type: ContentPartTypeEnum, required: true, description: 'What the part is.' }),
    text: t.string({ description: 'A TEXT part: its text (a template in a prompt).' }),
    url: t.string({ description: 'An IMAGE or FILE by http(s) URL; the vendor fetches it.' }),
    fileId: t.string({ description: 'An IMAGE or FILE uploaded with POST /files.' }),
    mediaType: t.string({ description: "The part's media type (image/png, application/pdf, …); an uploaded file's own type is used." }),
    detail: t.field({ type: ImageDetailEnum, description: 'An IMAGE: how closely the model looks at it.' }),
    variable: t.string({ description: 'In a prompt template only: the variable an IMAGE or FILE takes its { url } or { fileId } from.' }),
  }),
})

export const ContentPartRef = builder.objectRef<ContentPart & { variable?: string }>('ContentPart').implement({
  description: 'A part of a message after its text: more text, an image or a file. Never the bytes of a file.',
  fields: (t) => ({
    type: t.field({ type: ContentPartTypeEnum, description: 'What the part is.', resolve: (p) => p.type }),
    text: t.string({ nullable: true, description: 'A TEXT part: its text.', resolve: (p) => p.text ?? null }),
    url: t.string({ nullable: true, description: 'The URL of an IMAGE or FILE given by URL.', resolve: (p) => p.url ?? null }),
    fileId: t.string({ nullable: true, description: 'The uploaded file of an IMAGE or FILE.', resolve: (p) => p.fileId ?? null }),
    mediaType: t.string({ nullable: true, description: 'Its media type, where known.', resolve: (p) => p.mediaType ?? null }),
    detail: t.field({
      type: ImageDetailEnum,
      nullable: true,
      description: 'An IMAGE: how closely the model looks.',
      resolve: (p) => p.detail ?? null,
    }),
    sha256: t.string({
      nullable: true,
      description: "An uploaded file's digest, fixed at admission; it enters the run's renderedHash.",
      resolve: (p) => p.sha256 ?? null,
    }),
    variable: t.string({
      nullable: true,
      description: 'In a prompt template: the variable it takes its source from.',
      resolve: (p) => p.variable ?? null,
    }),
  }),
})

export const BackendCapabilitiesRef = builder.objectRef<BackendCapabilities>('BackendCapabilities').implement({
  description:
    "What a backend's vendor takes besides text; a request with a part it cannot take is refused at admission with INVALID_REQUEST.",
  fields: (t) => ({
    imageMediaTypes: t.stringList({
      description: 'Image media types it takes (empty: no IMAGE parts).',
      resolve: (c) => [...c.imageMediaTypes],
    }),
    imageUrls: t.exposeBoolean('imageUrls', { description: 'Whether it takes images by URL (else only uploaded files).' }),
    fileMediaTypes: t.stringList({
      description: 'File media types it takes (empty: no FILE parts).',
      resolve: (c) => [...c.fileMediaTypes],
    }),
    fileUrls: t.exposeBoolean('fileUrls', { description: 'Whether it takes PDF files by URL (else only uploaded files).' }),
    nativeStructuredOutput: t.exposeBoolean('nativeStructuredOutput', {
      description: "Whether output contracts may be enforced in the vendor's native JSON-schema mode.",
    }),
    promptCache: t.exposeBoolean('promptCache', { description: 'Whether promptCache settings reach the vendor.' }),
    singleToolCall: t.exposeBoolean('singleToolCall', {
      description:
        'Whether the vendor can be held to one tool call at a time; if not, parallelToolCalls: false is refused with INVALID_REQUEST.',
    }),
  }),
})
