import type { CapacityPools, CapacitySnapshot } from '../capacity/capacity-pool.js'
import type { Catalog } from '../catalog/catalog.js'
import type { Backend, Profile, Prompt } from '../domain/catalog.js'
import { credentialEnvAllowed, endpointAllowed, type SecretLookup } from '../domain/credentials.js'
import { idSchema, parseInput, profileSchema, promptSchema, toPromptDefinition } from '../domain/definitions.js'
import { InvalidRequestError, NotFoundError } from '../domain/errors.js'
import { type ProfileTarget, profileTarget } from '../runner/prepare.js'

export interface ProfileInspection extends ProfileTarget {
  profile: Profile
  backend: Backend
}

/** Profiles written through the API take no direct key: secrets belong in env vars. */
const apiProfileSchema = profileSchema.omit({ apiKey: true })

/** Use cases over the prompt and profile catalog: listing, inspecting, creating, deleting. */
export class CatalogService {
  constructor(
    private readonly catalog: Catalog,
    private readonly secrets: SecretLookup,
    private readonly capacity: CapacityPools,
    /** Variables any backend's key may be taken from, besides those the backend names. */
    private readonly credentialEnvAllowlist: readonly string[] = [],
  ) {}

  /** A backend's capacity limits and what is in use right now. */
  capacityOf(backend: Backend): CapacitySnapshot {
    return this.capacity.get(backend).snapshot()
  }

  listPrompts(tenantId: string, afterId: string | null, limit: number): Promise<Prompt[]> {
    return this.catalog.listPrompts(tenantId, afterId, limit)
  }

  async getPrompt(tenantId: string, id: string): Promise<Prompt | null> {
    return this.catalog.getPrompt(tenantId, parseInput(idSchema, id, 'id'))
  }

  async inspectPrompt(tenantId: string, id: string): Promise<Prompt> {
    const prompt = await this.getPrompt(tenantId, id)
    if (!prompt) throw new NotFoundError('prompt', id)
    return prompt
  }

  async upsertPrompt(tenantId: string, input: unknown): Promise<Prompt> {
    const parsed = parseInput(promptSchema, input, 'input')
    const { description, definition } = toPromptDefinition(parsed)
    for (const profileId of [definition.defaultProfileId, ...(definition.parallel?.profiles ?? [])]) {
      if (profileId && !(await this.catalog.getProfile(tenantId, profileId))) throw new NotFoundError('profile', profileId)
    }
    const judge = definition.parallel?.judgePromptId
    if (judge && judge !== parsed.id && !(await this.catalog.getPrompt(tenantId, judge))) throw new NotFoundError('prompt', judge)
    return this.catalog.savePrompt(tenantId, parsed.id, description, definition)
  }

  async deletePrompt(tenantId: string, id: string): Promise<string> {
    const outcome = await this.catalog.deletePrompt(tenantId, parseInput(idSchema, id, 'id'))
    if (outcome === 'missing') throw new NotFoundError('prompt', id)
    if (outcome === 'catalog') throw InvalidRequestError.at('id', `prompt '${id}' is defined in the catalog files; change it there`)
    return id
  }

  listProfiles(tenantId: string): Promise<Profile[]> {
    return this.catalog.listProfiles(tenantId)
  }

  async getProfile(tenantId: string, id: string): Promise<Profile | null> {
    return this.catalog.getProfile(tenantId, parseInput(idSchema, id, 'id'))
  }

  async inspectProfile(tenantId: string, id: string): Promise<ProfileInspection> {
    const profile = await this.getProfile(tenantId, id)
    if (!profile) throw new NotFoundError('profile', id)
    const backend = this.catalog.getBackend(profile.backendId)
    if (!backend) throw new NotFoundError('backend', profile.backendId)
    return { profile, backend, ...profileTarget(profile, backend, null, null, this.secrets) }
  }

  async upsertProfile(tenantId: string, input: unknown): Promise<Profile> {
    const definition = parseInput(apiProfileSchema, input, 'input')
    const backend = this.catalog.getBackend(definition.backendId)
    if (!backend) throw new NotFoundError('backend', definition.backendId)
    // a client must not be able to send a server-held key, or read a server variable, anywhere
    if (!endpointAllowed(backend, definition.endpoint)) {
      throw InvalidRequestError.at(
        'input.endpoint',
        `backend '${backend.id}' does not allow this endpoint (the operator lists them in its endpoints)`,
      )
    }
    if (definition.credentialEnv && !credentialEnvAllowed(backend, definition.credentialEnv, this.credentialEnvAllowlist)) {
      throw InvalidRequestError.at(
        'input.credentialEnv',
        `'${definition.credentialEnv}' is not a credential variable backend '${backend.id}' allows (see PROMPTLINE_CREDENTIAL_ENV_ALLOWLIST)`,
      )
    }
    for (const candidate of definition.candidates ?? []) {
      if (candidate === definition.id) throw InvalidRequestError.at('input.candidates', 'a profile cannot be its own candidate')
      if (!(await this.catalog.getProfile(tenantId, candidate))) throw new NotFoundError('profile', candidate)
    }
    return this.catalog.saveProfile(tenantId, definition)
  }

  async deleteProfile(tenantId: string, id: string): Promise<string> {
    const outcome = await this.catalog.deleteProfile(tenantId, parseInput(idSchema, id, 'id'))
    if (outcome === 'missing') throw new NotFoundError('profile', id)
    if (outcome === 'catalog') throw InvalidRequestError.at('id', `profile '${id}' is defined in the catalog files; change it there`)
    return id
  }

  listBackends(): Backend[] {
    return this.catalog.listBackends()
  }
}
