import type { BackendDefinition, ProfileDefinition, PromptDefinition } from './definitions.js'
import { hashValue } from './hash.js'
import type { PromptLabel, PromptLabelMove } from './prompt-labels.js'

/** The reserved tenant that owns file-defined prompts; no API key can map to it. */
export const CATALOG_TENANT = '@catalog'

/** Where a definition comes from: the catalog files, or a tenant through the API. */
type DefinitionSource = 'CATALOG' | 'API'

export interface Prompt {
  id: string
  source: DefinitionSource
  version: number
  definitionHash: string
  description: string | null
  definition: PromptDefinition
  variables: string[]
  updatedAt: Date
}

/** One stored version of a prompt, as it was saved. */
export interface PromptVersion {
  promptId: string
  source: DefinitionSource
  version: number
  definitionHash: string
  definition: PromptDefinition
  variables: string[]
  /** The API key that saved it (its id); null for catalog files and where keys are off. */
  authorKeyId: string | null
  createdAt: Date
}

export interface Profile extends ProfileDefinition {
  source: DefinitionSource
  updatedAt: Date | null
}

export type Backend = BackendDefinition

/** The definitions a run resolves against; the runner needs only this. */
export interface CatalogReader {
  getPrompt(tenantId: string, id: string): Promise<Prompt | null>
  /** A stored version of a prompt id as the tenant sees it (its own, else the catalog file's). */
  getPromptVersion(tenantId: string, id: string, version: number): Promise<PromptVersion | null>
  getPromptLabel(tenantId: string, promptId: string, name: string): Promise<PromptLabel | null>
  listPromptLabels(tenantId: string, promptId: string): Promise<PromptLabel[]>
  getProfile(tenantId: string, id: string): Promise<Profile | null>
  getBackend(id: string): Backend | null
}

export const promptDefinitionHash = (definition: PromptDefinition): string => hashValue(definition)

/** A prompt version another one includes, as admission resolved it (`key`: the reference, `id@label` or `id#3`). */
export interface PromptInclude {
  key: string
  promptId: string
  version: number
  definitionHash: string
}

/** A change to a tenant's catalog, published to its `catalogEvents` subscribers. */
export type CatalogEvent =
  | { type: 'PROMPT_VERSION_CREATED'; version: PromptVersion }
  | { type: 'PROMPT_LABEL_MOVED'; move: PromptLabelMove }
