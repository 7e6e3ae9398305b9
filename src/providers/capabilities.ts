import type { ContentPart } from '../domain/content-parts.js'
import type { BackendDefinition, BackendKind } from '../domain/definitions.js'
import type { EffectiveSettings } from '../domain/settings.js'
import type { Tooling } from '../domain/tools.js'
import { COMPATIBLE_SERVERS } from './compatible-servers.js'

/** What decides a backend's capabilities: its kind, and for an OPENAI one the server it names. */
export type BackendWire = Pick<BackendDefinition, 'kind' | 'dialect'>

/** The backend's vendor as refusals name it: the server's dialect, else its kind. */
const nameOf = (backend: BackendWire): string => backend.dialect ?? backend.kind

// Gemini's thinkingLevel values
const GEMINI_EFFORTS = new Set(['minimal', 'low', 'medium', 'high'])

/**
 * A setting the backend's vendor does not take, as a sentence for an INVALID_REQUEST at
 * preparation (rather than a vendor 400 after the run started); null when all are fine.
 */
export function unsupportedSetting(backend: BackendWire, settings: EffectiveSettings): string | null {
  const { kind } = backend
  if (backend.dialect) {
    const { name, wire } = COMPATIBLE_SERVERS[backend.dialect]
    if (settings.seed != null && wire.seed === null) return `${name} takes no seed`
    if (settings.reasoningEffort != null && !wire.reasoningEffort) return `${name} takes no reasoningEffort`
  }
  if (kind === 'ANTHROPIC') {
    if (settings.reasoningEffort != null) return 'Anthropic takes no reasoningEffort (pass its thinking options in extra)'
    if (settings.temperature != null && settings.temperature > 1) return 'Anthropic takes a temperature from 0 to 1'
    if (settings.seed != null) return 'Anthropic takes no seed'
  }
  if (kind === 'GEMINI' && settings.reasoningEffort != null && !GEMINI_EFFORTS.has(settings.reasoningEffort.toLowerCase()))
    return `Gemini takes a reasoningEffort (its thinkingLevel) of ${[...GEMINI_EFFORTS].join(', ')}`
  return null
}

/** Tool settings the backend's vendor cannot follow, as a sentence for an INVALID_REQUEST; null when it can. */
export function unsupportedTooling(backend: BackendWire, tooling: Tooling): string | null {
  if (tooling.parallelToolCalls === false && !capabilitiesOf(backend).singleToolCall)
    return `a ${nameOf(backend)} backend cannot be held to one tool call at a time (parallelToolCalls: false)`
  return null
}

/** What a backend's vendor takes besides text, so a request it cannot take is refused at admission. */
export interface BackendCapabilities {
  /** Image media types, by URL and as uploaded files. */
  imageMediaTypes: readonly string[]
  imageUrls: boolean
  /** File media types as uploaded files, and (PDF only) by URL. */
  fileMediaTypes: readonly string[]
  fileUrls: boolean
  /** A JSON schema sent natively (OpenAI's strict response_format, Anthropic's output_config.format). */
  nativeStructuredOutput: boolean
  /** Prompt-cache marks (Anthropic) or keys (OpenAI). */
  promptCache: boolean
  /** Whether the vendor can be held to one tool call at a time (parallelToolCalls: false). */
  singleToolCall: boolean
}

const IMAGES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp']

// Chat Completions: images by URL or data URL; files (PDF) only inline, never by URL
const CHAT_COMPLETIONS: BackendCapabilities = {
  imageMediaTypes: IMAGES,
  imageUrls: true,
  fileMediaTypes: ['application/pdf'],
  fileUrls: false,
  nativeStructuredOutput: true,
  promptCache: true,
  singleToolCall: true,
}

const CAPABILITIES: Record<BackendKind, BackendCapabilities> = {
  OPENAI: CHAT_COMPLETIONS,
  // Azure's deployments speak the same Chat Completions
  AZURE_OPENAI: CHAT_COMPLETIONS,
  // Messages: image and document blocks, by URL or base64 (plain text documents inline only)
  ANTHROPIC: {
    imageMediaTypes: IMAGES,
    imageUrls: true,
    fileMediaTypes: ['application/pdf', 'text/plain'],
    fileUrls: true,
    nativeStructuredOutput: true,
    promptCache: true,
    singleToolCall: true,
  },
  // generateContent: images and documents inline only (fileData takes only the Files API's URIs);
  // its implicit cache needs no marks, and explicit caches are made apart from the request
  GEMINI: {
    imageMediaTypes: [...IMAGES, 'image/heic', 'image/heif'].filter((t) => t !== 'image/gif'),
    imageUrls: false,
    fileMediaTypes: ['application/pdf', 'text/plain'],
    fileUrls: false,
    nativeStructuredOutput: true,
    promptCache: false,
    singleToolCall: false,
  },
  FAKE: {
    imageMediaTypes: [],
    imageUrls: false,
    fileMediaTypes: [],
    fileUrls: false,
    nativeStructuredOutput: false,
    promptCache: false,
    singleToolCall: true,
  },
}

export const capabilitiesOf = (backend: BackendWire): BackendCapabilities =>
  backend.dialect ? COMPATIBLE_SERVERS[backend.dialect].capabilities : CAPABILITIES[backend.kind]

/** Why the backend cannot take a part, as a sentence; null when it can. */
export function unsupportedPart(backend: BackendWire, part: ContentPart): string | null {
  if (part.type === 'TEXT') return null
  const can = capabilitiesOf(backend)
  const kind = nameOf(backend)
  const types = part.type === 'IMAGE' ? can.imageMediaTypes : can.fileMediaTypes
  const name = part.type === 'IMAGE' ? 'an image' : 'a file'
  if (types.length === 0) return `a ${kind} backend takes no ${part.type} parts`
  if (part.url !== undefined) {
    if (!(part.type === 'IMAGE' ? can.imageUrls : can.fileUrls))
      return `a ${kind} backend takes ${name} only as an uploaded file, not by URL`
    if (part.type === 'FILE' && (part.mediaType ?? 'application/pdf') !== 'application/pdf')
      return `a ${kind} backend takes only PDF files by URL`
    return null
  }
  if (part.mediaType !== undefined && !types.includes(part.mediaType))
    return `a ${kind} backend takes no ${part.mediaType} ${part.type} parts`
  return null
}
