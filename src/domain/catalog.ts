import type { BackendDefinition, ProfileDefinition, PromptDefinition } from './definitions.js'
import { hashValue } from './hash.js'

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

export interface Profile extends ProfileDefinition {
  source: DefinitionSource
  updatedAt: Date | null
}

export type Backend = BackendDefinition

/** The definitions a run resolves against; the runner needs only this. */
export interface CatalogReader {
  getPrompt(tenantId: string, id: string): Promise<Prompt | null>
  getProfile(tenantId: string, id: string): Promise<Profile | null>
  getBackend(id: string): Backend | null
}

export const promptDefinitionHash = (definition: PromptDefinition): string => hashValue(definition)
